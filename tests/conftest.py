"""dynorm's own suite uses its pytest plugin (dynorm.testing) for DynamoDB Local."""

pytest_plugins = ["dynorm.testing"]
