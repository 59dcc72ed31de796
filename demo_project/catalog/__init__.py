"""The Fromatoz product catalog ("Modelling a product catalog in DynamoDB")."""
