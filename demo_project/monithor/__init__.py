"""Monithor ("How to model relational data in DynamoDB", Olaru): organizations, projects, monitors, logs, users."""
