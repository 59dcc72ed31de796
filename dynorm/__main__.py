"""``python -m dynorm``: the dynorm command line."""

from dynorm.cli import main

if __name__ == "__main__":  # pragma: no cover
    main()
