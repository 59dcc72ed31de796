"""Kayak rental ("A Novel Pattern for Documenting DynamoDB Access Patterns", Franklin)."""
