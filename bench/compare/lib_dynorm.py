"""dynorm's side: the model of :mod:`.shape` declared with dynorm, and its operations.

One instance per wire mode (``dynorm.configure(wire=...)``) when the installed dynorm has the
setting; :func:`wire_modes` says which.
"""

from __future__ import annotations

import contextlib
import itertools
from typing import Any, Callable, Iterator

import dynorm

from . import shape
from .cold import dynorm_model

#: the benchmark's table and item, declared once (:func:`.cold.dynorm_model`)
CompareTable, Item = dynorm_model(shape.TABLE)


def wire_modes() -> list[str | None]:
    """The wire modes this dynorm has: ``["direct", "botocore"]`` when ``configure(wire=...)`` is
    a setting, else ``[None]`` (the default only)."""
    try:
        dynorm.configure(wire="direct")
    except dynorm.ConfigurationError:
        return [None]
    return ["direct", "botocore"]


def seed() -> None:
    """Create the table and write the items every library reads (dynorm writes them, as an
    application would): the get target, the query groups, one update target per library."""
    if CompareTable.exists():
        CompareTable.delete_table()
    CompareTable.create_table()
    objs = [Item(**shape.fields(shape.TARGET, "misc", 0))]
    for group, count in shape.QUERY_GROUPS.values():
        objs += [Item(**shape.fields(i, group, j)) for j, i in enumerate(shape.query_ids(group, count))]
    Item.objects.bulk_create(objs)


def drop() -> None:
    """Delete the benchmark's table."""
    CompareTable.delete_table()


@contextlib.contextmanager
def seeded() -> Iterator[str]:
    """Point dynorm at DynamoDB Local (``bench.common.connect``: ``$DYNORM_TEST_ENDPOINT``, else one
    started here), :func:`seed` the table, and yield the endpoint; the table is dropped and the server
    started here stopped after."""
    from bench.common import connect

    endpoint, server = connect(shape.PREFIX)
    try:
        seed()
        yield endpoint
    finally:
        drop()
        if server:
            server.stop()


class Dynorm:
    """dynorm under one wire mode."""

    def __init__(self, wire: str | None, tag: str = "") -> None:
        """dynorm under ``wire`` (``None``: the default of a dynorm without the setting), on the
        endpoint and table prefix configured; writes this instance's update target.

        Args:
            wire: ``"direct"``, ``"botocore"`` or ``None``.
            tag: a suffix of the ids this instance writes (the wiretap's second instance).
        """
        self.wire = wire
        self.tag = tag
        self.name = f"dynorm ({wire})" if wire else "dynorm"
        self._ids = itertools.count()
        Item.objects.get_or_create(item_id=f"upd-{self.name}{tag}",
                                   defaults={k: v for k, v in shape.fields("", "misc", 0).items() if k != "item_id"})
        self._upd = Item.objects.get(item_id=f"upd-{self.name}{tag}")

    def activate(self) -> None:
        """Switch dynorm to this wire mode (before this library's turn in a round): ``direct`` is
        dynorm's codec and transport, ``botocore`` botocore's serializer, parser and transport
        (on a dynorm without the ``transport`` setting, the wire alone)."""
        if self.wire:
            try:
                dynorm.configure(wire=self.wire, transport=self.wire)
            except (dynorm.ConfigurationError, TypeError):
                dynorm.configure(wire=self.wire)

    def query(self, group: str) -> list[Item]:
        """Every item of ``group`` (Query GSI1)."""
        return list(Item.objects.filter(group=group))

    def ops(self) -> dict[str, Callable[[int], Any]]:
        """The operations, each called with the call's number."""
        tag = "d" + (self.wire or "")[:1] + self.tag
        keys = [{"item_id": i} for i in shape.query_ids("q100", shape.BATCH_GET)]

        def put(n: int) -> None:
            Item(**shape.fields(f"put-{tag}-{next(self._ids)}", "put", n)).save()

        def batch_write(n: int) -> None:
            Item.objects.bulk_create([Item(**shape.fields(f"bw-{tag}-{j}", f"bw-{tag}", j))
                                      for j in range(shape.BATCH_WRITE)])

        return {
            "get": lambda n: Item.objects.get(item_id=shape.TARGET),
            "put": put,
            "update": lambda n: self._upd.update(stock_level=n),
            "query100": lambda n: self.query("q100"),
            "query1000": lambda n: self.query("q1000"),
            "batch_write": batch_write,
            "batch_get": lambda n: Item.objects.in_bulk(keys),
        }
