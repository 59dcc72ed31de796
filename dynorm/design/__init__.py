"""Design tools: a table's model handed to other tools and back (``dynorm export``/``dynorm import``).

- :mod:`dynorm.design.cloudformation`: an ``AWS::DynamoDB::Table`` resource per table, built from the
  CreateTable request :mod:`dynorm.schema` plans (one DDL path).
- :mod:`dynorm.design.workbench`: a NoSQL Workbench data model (JSON) of tables, entities and access patterns.
- :mod:`dynorm.design.codegen`: entity classes (Python source) from a NoSQL Workbench data model.

Nothing here is imported by ``import dynorm``; each module is imported by the command that uses it.
"""
