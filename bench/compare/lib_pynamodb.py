"""PynamoDB's side: the item of :mod:`.shape` as a hand-written PynamoDB model, used as its
documentation shows (``Model.get``, ``save``, ``update(actions=...)``, index ``query``,
``batch_write``, ``batch_get``)."""

from __future__ import annotations

import itertools
from typing import Any, Callable

from . import shape
from .cold import pynamodb_model


class PynamoDB:
    """PynamoDB 6 models."""

    name = "PynamoDB"

    def __init__(self, endpoint: str, table: str, tag: str = "") -> None:
        """Connect to ``table`` (full name) at ``endpoint``; write the update target (see :mod:`.rounds`)."""
        self.model = pynamodb_model(endpoint, table)
        self.tag = tag
        self._ids = itertools.count()
        self._upd = self.new(f"upd-pynamodb{tag}", "misc", 0)
        self._upd.save()

    def new(self, item_id: str, group: str, n: int) -> Any:
        """A new instance of the item (its keys filled by hand, as PynamoDB has no key templates)."""
        return self.model(shape.pk(item_id), shape.SK, gsi1pk=shape.gsi1pk(group), gsi1sk=shape.gsi1sk(item_id),
                          entity_type=shape.ENTITY_TYPE, **shape.fields(item_id, group, n))

    def activate(self) -> None:
        """Nothing to switch."""

    def query(self, group: str) -> list[Any]:
        """Every item of ``group`` (Query GSI1)."""
        return list(self.model.by_group.query(shape.gsi1pk(group)))

    def ops(self) -> dict[str, Callable[[int], Any]]:
        """The operations, each called with the call's number."""
        m = self.model
        keys = [(shape.pk(i), shape.SK) for i in shape.query_ids("q100", shape.BATCH_GET)]

        def batch_write(n: int) -> None:
            with m.batch_write() as batch:
                for j in range(shape.BATCH_WRITE):
                    batch.save(self.new(f"bw-p-{j}", "bw-p", j))

        return {
            "get": lambda n: m.get(shape.pk(shape.TARGET), shape.SK),
            "put": lambda n: self.new(f"put-p{self.tag}-{next(self._ids)}", "put", n).save(),
            "update": lambda n: self._upd.update(actions=[m.stock_level.set(n)]),
            "query100": lambda n: self.query("q100"),
            "query1000": lambda n: self.query("q1000"),
            "batch_write": batch_write,
            "batch_get": lambda n: list(m.batch_get(keys)),
        }
