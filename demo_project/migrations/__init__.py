"""dynorm migrations."""
