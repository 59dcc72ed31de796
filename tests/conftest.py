"""dynorm's own suite uses its pytest plugin, dynorm.testing, loaded through the package's
``pytest11`` entry point (``pip install -e .``): fixtures ``dynamodb_local`` and ``dynorm_tables``."""
