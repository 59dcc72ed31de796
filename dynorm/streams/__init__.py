"""DynamoDB Streams read as typed entity changes (``docs/streams.md``).

- :func:`changes` turns a stream batch (the Lambda event, or GetRecords' records) into :class:`Change`
  objects: entity class, ``kind`` (``created``/``updated``/``deleted``/``moved``), ``old`` and ``new``
  instances, ``changed_fields``, ``revision``, ``record``. Pure: no request.
- :func:`handler` makes an AWS Lambda handler of a function of one change (``def`` or ``async def``),
  reporting partial batch failures (``batchItemFailures``).
- :class:`StreamReader` reads a table's stream with the ``dynamodbstreams`` API (``dynorm streams tail``).

Turn a table's stream on with ``Table.Meta.stream = "NEW_AND_OLD_IMAGES"`` and ``dynorm makemigrations``.
Not imported by ``import dynorm``: ``import dynorm.streams`` (or ``from dynorm import streams``).
"""

from __future__ import annotations

from .changes import KINDS, MOVES, Change, changes
from .handler import StreamHandler, handler
from .reader import START_POSITIONS, StreamReader

__all__ = ["Change", "changes", "handler", "StreamHandler", "StreamReader", "KINDS", "MOVES", "START_POSITIONS"]
