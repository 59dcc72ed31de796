"""Model checks that look at several entities of one table at once (pure, no I/O)."""

from __future__ import annotations

from itertools import combinations
from typing import TYPE_CHECKING, Any, Iterable

from .keys import VERSION, KeyTemplate

if TYPE_CHECKING:  # pragma: no cover
    from ._protocols import TableLike

__all__ = ["check_table", "could_collide", "template_problems", "check_collections", "collection_splits",
           "collection_members", "CollectionMember", "shard_count_conflicts"]

Segment = list[tuple[str, bool]]


def _segment_compatible(a: Segment, b: Segment) -> bool:
    a_has = any(ph for _, ph in a)
    b_has = any(ph for _, ph in b)
    if not a_has and not b_has:
        return "".join(t for t, _ in a) == "".join(t for t, _ in b)
    # A placeholder matches any non-empty text without the delimiter; compare the literal
    # text before the first and after the last placeholder (conservative: may over-report).
    def head(s: Segment) -> str:
        out = []
        for t, ph in s:
            if ph:
                break
            out.append(t)
        return "".join(out)

    def tail(s: Segment) -> str:
        out = []
        for t, ph in reversed(s):
            if ph:
                break
            out.append(t)
        return "".join(reversed(out))

    ha, hb, ta, tb = head(a), head(b), tail(a), tail(b)
    if a_has and b_has:
        return (ha.startswith(hb) or hb.startswith(ha)) and (ta.endswith(tb) or tb.endswith(ta))
    lit, tmpl = ("".join(t for t, _ in a), b) if not a_has else ("".join(t for t, _ in b), a)
    h, t = head(tmpl), tail(tmpl)
    return len(lit) > len(h) + len(t) - 1 and lit.startswith(h) and lit.endswith(t)


def could_collide(a: KeyTemplate | None, a_version: str, b: KeyTemplate | None, b_version: str,
                  a_shards: int = 0, b_shards: int = 0) -> bool:
    """Return True when the two templates could render the same key text.

    Values never contain the delimiter (it is escaped), so templates are compared segment
    by segment; a template whose own segments are ambiguous is reported by
    :func:`template_problems`.

    Args:
        a, b: the templates (``None``: no such key); a_version, b_version: their key versions.
        a_shards, b_shards: the write-sharding bucket count of a partition-key template
            (``Index(shards=N)``; 0: not sharded). A sharded key renders as the template's text,
            the delimiter and the bucket number (``X#{day}`` -> ``X#2024#3``), so it meets an
            unsharded ``X#{day}#{n}`` whose ``{n}`` is ``3``, and never an unsharded ``X#{day}``.
    """
    if a is None or b is None:
        return a is None and b is None
    sa, sb = a.segments(a_version), b.segments(b_version)
    if a_shards and b_shards:  # both end in a bucket number, both counted from 0: the buckets can meet
        a_shards = b_shards = 0
    if b_shards and not a_shards:
        sa, sb, a_shards, b_shards = sb, sa, b_shards, a_shards
    if a_shards:  # a's last segment is its bucket, one of the literals "0" .. "N-1"
        if len(sb) != len(sa) + 1 or not any(_segment_compatible([(str(i), False)], sb[-1]) for i in range(a_shards)):
            return False
        sb = sb[:-1]
    return len(sa) == len(sb) and all(_segment_compatible(x, y) for x, y in zip(sa, sb))


def template_problems(table: type[TableLike]) -> list[str]:
    """Report key templates of ``table``'s entities that let two different items meet.

    Every template is checked for placeholders sharing one delimiter-separated segment
    (``{a}-{b}``, ``{a}{b}``, ``{org}:{user}`` on a ``#`` table: a partial key then matches
    other values too, and on the primary key two items overwrite each other) and for the legacy
    percent encoding with a multi-character delimiter; the primary key is also checked for
    lossy or unordered format specs (``{x:.3}``, ``{day:%Y-%m-%d}``), which give different items
    one key. Pure; no I/O.

    Returns:
        One message per problem, naming entity, access path and template.
    """
    problems: list[str] = []
    for entity_type, entity in table._entities.items():
        m = entity._meta
        for bound in m.all_indexes:
            if bound.is_multi:
                continue  # no key text: the fields' own attributes
            for what, tmpl in (("pk", bound.pk), ("sk", bound.sk)):
                if tmpl is None or (bound.kind == "lsi" and what == "pk"):
                    continue
                for kind, issue in tmpl.ambiguities():
                    if kind == "spec" and bound.kind != "table":
                        continue  # an index may hold several items under one key
                    problems.append(f"{m.entity}({entity_type}) {bound.name} {what} template "
                                    f"{tmpl.template!r}: {issue}.")
    return problems


def multi_key_problems(table: type[TableLike]) -> list[str]:
    """Problems with the multi-attribute GSIs of ``table`` (pure).

    Every entity of the table that stores a field under one of such an index's key
    attributes must store it with the declared type (S, N or B): DynamoDB refuses the whole
    write of an item whose index key attribute has another type. Entities sharing the index
    must agree (the declaration in ``Table.Meta.gsis`` is the one truth).
    """
    problems: list[str] = []
    for gname, multi in table._meta.multi_gsis.items():
        declared = dict((*multi.pk, *multi.sk))
        for entity_type, entity in table._entities.items():
            m = entity._meta
            for fname, f in m.fields.items():
                want = declared.get(f.attr_name)
                if want is not None and f.attr_type != want:
                    problems.append(
                        f"{m.entity}({entity_type}).{fname} is stored as {f.attr_name!r} of type {f.attr_type}, a key "
                        f"attribute of multi-attribute GSI {gname} declared as {want}: DynamoDB would refuse every "
                        f"write of a {m.entity} with a value there. Store the field under another attribute "
                        "(attr_name=...) or change its type.")
    return problems


def check_table(table: type[TableLike]) -> list[str]:
    """Return the problems found among ``table``'s entities (empty list when none).

    Reports templates that can collide within one entity (:func:`template_problems`) and
    pairs of entity types whose templates on one index could render the same key.
    """
    problems: list[str] = template_problems(table) + multi_key_problems(table)
    by_index: dict[str | None, list[tuple[str, KeyTemplate, KeyTemplate | None, str, int]]] = {}
    for entity_type, entity in table._entities.items():
        m = entity._meta
        for bound in m.all_indexes:
            if bound.kind in ("lsi", "multi"):
                continue
            by_index.setdefault(bound.index_name, []).append(
                (f"{m.entity}({entity_type})", bound.pk, bound.sk, m.key_version, bound.shards))
        # during a rollout get(), deletes and creates also use the keys at each older read version
        for version in m.read_versions:
            if version != m.key_version:
                by_index.setdefault(None, []).append(
                    (f"{m.entity}({entity_type}) at read version {version!r}", m.primary.pk, m.primary.sk, version,
                     0))
    for index_name, entries in by_index.items():
        where = f"index {index_name}" if index_name else "the table's primary key"
        for (ea, pka, ska, va, na), (eb, pkb, skb, vb, nb) in combinations(entries, 2):
            if ea.split(" ")[0] == eb.split(" ")[0]:
                continue  # one entity's own versions (they differ by {version}, or are one item)
            if could_collide(pka, va, pkb, vb, na, nb) and could_collide(ska, va, skb, vb):
                problems.append(
                    f"{ea} and {eb} on {where}: templates {_pk_text(pka, na)}/{ska.template if ska else None!r} "
                    f"and {_pk_text(pkb, nb)}/{skb.template if skb else None!r} could produce the same key; "
                    "give one of them a distinct literal prefix.")
    return problems


def _pk_text(template: KeyTemplate, shards: int) -> str:
    """A partition-key template as a check names it: a sharded one with its bucket (``'X#{day}' + '#0..3'``)."""
    if not shards:
        return repr(template.template)
    return f"{template.template!r} + {template.delimiter + '0..' + str(shards - 1)!r} (write-sharded)"


def shard_count_conflicts(entity: str, indexes: Iterable[Any], key_version: str,
                          others: Iterable[tuple[str, str, Iterable[Any]]]) -> list[str]:
    """Report GSI partitions an entity would share with another entity type that shards them differently.

    Entities whose partition-key templates on one GSI can render the same text (before the
    bucket) form one item collection there; ``collection()`` asked through one of them reads the
    buckets *it* declares. With another bucket count (or one sharded and one not) some members'
    items are in partitions the others never read, so the collection depends on who asks.
    ``shard_by`` is not compared: each entity computes its own bucket from its own primary-key
    fields, and a fan-out reads every bucket whatever put an item there.

    Args:
        entity: the new entity's class name; indexes: its bound indexes; key_version: its key version.
        others: ``(class name, key version, bound indexes)`` of every other entity type of the table.

    Returns:
        one message per conflict (empty when none), naming both entities, the index and what to do.
    """
    problems: list[str] = []
    for bound in indexes:
        if bound.kind != "gsi" or not isinstance(bound.pk, KeyTemplate):
            continue
        for other, other_version, other_indexes in others:
            for ob in other_indexes:
                if (ob.kind != "gsi" or ob.index_name != bound.index_name or ob.shards == bound.shards
                        or not could_collide(bound.pk, key_version, ob.pk, other_version)):
                    continue
                def says(n: int) -> str:
                    return f"shards={n}" if n else "no shards"
                problems.append(
                    f"{entity} and {other} share partitions of GSI {bound.index_name} (partition-key templates "
                    f"{bound.pk.template!r} and {ob.pk.template!r}) but {entity} declares {says(bound.shards)} and "
                    f"{other} {says(ob.shards)}: collection() through one would miss the other's items. Declare the "
                    f"same shards= on both, or give one partition-key template a distinct literal prefix.")
    return problems


# -- item collections split by a key-version change (issue 10 §5) ---------------------------------------------

#: One entity's partition on one physical index: (entity label, index name or "" for the table,
#: partition-key template text, key version).
CollectionMember = tuple[str, str, str, str]


def _bump_advice(groups: dict[str, str]) -> str:
    newest = max(groups.values())
    behind = sorted(e for e, v in groups.items() if v != newest)
    return (f"bump key_version of {', '.join(behind)} to {newest!r} as well, so that one migration rekeys the "
            f"collection's entities together (`dynorm makemigrations` then writes a RekeyEntity for each)")


def collection_members(table: type[TableLike]) -> list[CollectionMember]:
    """Every entity's partition-key template on the table and on each GSI of ``table`` (live models)."""
    out: list[CollectionMember] = []
    for entity_type, entity in table._entities.items():
        m = entity._meta
        for bound in m.all_indexes:
            if bound.kind in ("lsi", "multi") or not isinstance(bound.pk, KeyTemplate):
                continue  # an LSI shares the table's partition; multi-attribute keys have no template
            out.append((f"{m.entity}({entity_type})", bound.index_name or "", bound.pk.template, m.key_version))
    return out


def check_collections(table: type[TableLike]) -> list[str]:
    """Report item collections split by different key versions (pure, no I/O).

    Entities whose partition-key templates on one index are the same text live in the same
    partitions (an item collection, e.g. an issue and its comments under ``{version}#I#{issue_id}``),
    as long as they fill ``{version}`` with the same key version. After bumping the version of one
    of them, ``collection()`` finds only that entity's items.

    Returns:
        One message per split collection (empty when none).
    """
    by_template: dict[tuple[str, str], dict[str, str]] = {}
    for label, index, template, version in collection_members(table):
        if VERSION in KeyTemplate(template).placeholders:  # parsed: "{{version}}" is a literal
            by_template.setdefault((index, template), {})[label] = version
    problems = []
    for (index, template), members in sorted(by_template.items()):
        if len(set(members.values())) > 1:
            where = f"index {index}" if index else "the table's primary key"
            listed = ", ".join(f"{e} at {v}" for e, v in sorted(members.items()))
            problems.append(f"item collection split on {where}: {listed} share the partition-key template "
                            f"{template!r} but not the key version, so their items no longer share partitions "
                            f"and collection() misses some of them; {_bump_advice(members)}.")
    return problems


def collection_splits(before: list[CollectionMember], after: list[CollectionMember]) -> list[str]:
    """Report item collections whose members shared partitions ``before`` and no longer do ``after``.

    Args:
        before, after: the members as the migration files record them and as the models declare them.

    Returns:
        One message per collection split (empty when none).
    """
    now = {(entity, index): (template, version) for entity, index, template, version in after}
    shared: dict[tuple[str, str, str], list[str]] = {}
    for entity, index, template, version in before:
        shared.setdefault((index, template, version), []).append(entity)
    problems = []
    for (index, template, version), entities in sorted(shared.items()):
        present = {e: now[(e, index)] for e in sorted(entities) if (e, index) in now}
        if len(present) < 2 or len(set(present.values())) < 2:
            continue
        where = f"index {index}" if index else "the table's primary key"
        listed = ", ".join(f"{e} -> {t!r} at {v}" for e, (t, v) in present.items())
        advice = _bump_advice({e: v for e, (_, v) in present.items()}) \
            if len({t for t, _ in present.values()}) == 1 else "change their partition-key templates together"
        problems.append(f"item collection split on {where}: {', '.join(present)} shared the partitions "
                        f"{template!r} at {version}, but now {listed}; {advice}.")
    return problems
