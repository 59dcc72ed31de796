"""An arxiv-like library ("How To Model Any Relational Data in DynamoDB With dynamo library")."""
