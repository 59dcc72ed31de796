"""Customer orders ("DynamoDB Data Modeling", David A Good): an item collection with an "A record"."""
