"""pydynox's side (an optional dependency, ``pip install dynorm[bench]``): the item of
:mod:`.shape` as a pydynox ``Model``, used as its documentation shows (``sync_get``,
``sync_save``, ``sync_update``, GSI ``sync_query``, ``SyncBatchWriter``, ``sync_batch_get``).

pydynox sends its requests from a Rust core (the AWS SDK for Rust on a Tokio runtime in the same
process): the process CPU time the benchmark measures includes those threads.
"""

from __future__ import annotations

import itertools
from typing import Any, Callable

from . import shape
from .cold import pydynox_model


def available() -> bool:
    """Whether pydynox can be imported."""
    try:
        import pydynox  # noqa: F401
    except ImportError:
        return False
    return True


class Pydynox:
    """pydynox models."""

    name = "pydynox"

    def __init__(self, endpoint: str, table: str, tag: str = "") -> None:
        """Connect to ``table`` (full name) at ``endpoint``; write the update target (see :mod:`.rounds`)."""
        self.model = pydynox_model(endpoint, table)
        self.table = table
        self.tag = tag
        self._ids = itertools.count()
        self._upd = self.new(f"upd-pydynox{tag}", "misc", 0)
        self._upd.sync_save()

    def new(self, item_id: str, group: str, n: int) -> Any:
        """A new instance of the item (its keys filled by hand)."""
        return self.model(pk=shape.pk(item_id), sk=shape.SK, gsi1pk=shape.gsi1pk(group),
                          gsi1sk=shape.gsi1sk(item_id), entity_type=shape.ENTITY_TYPE,
                          **shape.fields(item_id, group, n))

    def activate(self) -> None:
        """Nothing to switch."""

    def query(self, group: str) -> list[Any]:
        """Every item of ``group`` (Query GSI1)."""
        return list(self.model.by_group.sync_query(partition_key=shape.gsi1pk(group)))

    def ops(self) -> dict[str, Callable[[int], Any]]:
        """The operations, each called with the call's number."""
        from pydynox import SyncBatchWriter

        m = self.model
        keys = [{"pk": shape.pk(i), "sk": shape.SK} for i in shape.query_ids("q100", shape.BATCH_GET)]

        def batch_write(n: int) -> None:
            with SyncBatchWriter(m.client, self.table) as batch:
                for j in range(shape.BATCH_WRITE):
                    batch.put(self.new(f"bw-x-{j}", "bw-x", j).to_dict())

        return {
            "get": lambda n: m.sync_get(pk=shape.pk(shape.TARGET), sk=shape.SK),
            "put": lambda n: self.new(f"put-x{self.tag}-{next(self._ids)}", "put", n).sync_save(),
            "update": lambda n: self._upd.sync_update(stock_level=n),
            "query100": lambda n: self.query("q100"),
            "query1000": lambda n: self.query("q1000"),
            "batch_write": batch_write,
            "batch_get": lambda n: m.sync_batch_get(keys),
        }
