"""Pure condition objects (``Q``, ``F``) and their rendering to DynamoDB expressions.

``Q(stock_level__gte=3) & ~Q(name="x")`` describes a condition; :class:`ExpressionBuilder`
renders it into an expression string plus ``ExpressionAttributeNames``/``Values``.
Lookups: ``exact, ne, lt, lte, gt, gte, between, begins_with, contains, in, exists,
not_exists``.
"""

from __future__ import annotations

import decimal
import json
import re
import reprlib
from typing import TYPE_CHECKING, Any, Iterable, Iterator

from . import _codec
from ._value import FrozenValue
from .exceptions import DynormError, InvalidQuery, ValidationError

if TYPE_CHECKING:  # pragma: no cover
    from .options import Options

__all__ = ["Q", "F", "LOOKUPS", "HABIT_LOOKUPS", "ExpressionBuilder", "split_lookup", "Leaf", "plain_value",
           "DocPath", "resolve_path", "show_key", "MAX_LIST_INDEX", "refuse_paths"]

LOOKUPS = ("exact", "ne", "lt", "lte", "gt", "gte", "between", "begins_with", "contains", "in",
           "exists", "not_exists")
_COMPARE = {"exact": "=", "ne": "<>", "lt": "<", "lte": "<=", "gt": ">", "gte": ">="}

#: Lookups Django users type by habit that DynamoDB has no operator for, with the dynorm way.
HABIT_LOOKUPS = {
    "iexact": "DynamoDB compares case-sensitively: store a normalised copy (e.g. lowercased) and compare that",
    "icontains": "DynamoDB compares case-sensitively: store a lowercased copy and use contains",
    "istartswith": "DynamoDB compares case-sensitively: store a lowercased copy and use begins_with",
    "startswith": "use begins_with",
    "endswith": "DynamoDB has no ends-with: store the reversed text and use begins_with",
    "isnull": ("use not_exists=True for isnull=True and exists=True for isnull=False "
               "(dynorm stores no attribute for None)"),
    "year": "put the date in a key template ({created_at:%Y}) and filter on a prefix, or use between",
    "month": "use between on the date, or a key template with {created_at:%Y-%m}",
    "day": "use between on the date",
    "date": "use between on the datetime",
    "range": "use between",
    "regex": "DynamoDB has no regular expressions; filter in Python after reading",
    "search": "DynamoDB has no full-text search",
}

Leaf = tuple[str, str, Any]  # (field, lookup, value)


def split_lookup(key: str) -> tuple[str, str]:
    """Split ``"stock_level__gte"`` into ``("stock_level", "gte")`` (lookup defaults to exact)."""
    field, sep, lookup = key.rpartition("__")
    if sep and lookup in LOOKUPS:
        return field, lookup
    return key, "exact"


class Q:
    """A condition on fields, combinable with ``&``, ``|`` and ``~`` (as in Django).

    Args:
        *children: other ``Q`` objects (AND-ed).
        **lookups: ``field__lookup=value`` pairs (AND-ed).
    """

    AND = "AND"
    OR = "OR"

    def __init__(self, *children: Q, _connector: str = "AND", _negated: bool = False, **lookups: Any) -> None:
        self.children: list[Q | tuple[str, Any]] = [*children, *lookups.items()]
        self.connector = _connector
        self.negated = _negated

    def _combine(self, other: Q, connector: str) -> Q:
        if not isinstance(other, Q):
            raise TypeError(f"cannot combine Q with {type(other).__name__}")
        return Q(self, other, _connector=connector)

    def __and__(self, other: Q) -> Q:
        return self._combine(other, self.AND)

    def __or__(self, other: Q) -> Q:
        return self._combine(other, self.OR)

    def __invert__(self) -> Q:
        return Q(self, _negated=True)

    def __repr__(self) -> str:
        inner = f" {self.connector} ".join(repr(c) for c in self.children)
        return f"{'NOT ' if self.negated else ''}Q({inner})"

    def leaves(self) -> Iterator[Leaf]:
        """Yield every ``(field, lookup, value)`` in the tree."""
        for child in self.children:
            if isinstance(child, Q):
                yield from child.leaves()
            else:
                yield (*split_lookup(child[0]), child[1])

    def flatten_and(self) -> tuple[list[Leaf], list[Q]]:
        """Split a top-level AND tree into plain leaves and the sub-trees that are not plain ANDs."""
        if self.negated or (self.connector == self.OR and len(self.children) > 1):
            return [], [self]
        leaves: list[Leaf] = []
        rest: list[Q] = []
        for child in self.children:
            if isinstance(child, Q):
                sub_leaves, sub_rest = child.flatten_and()
                leaves += sub_leaves
                rest += sub_rest
            else:
                leaves.append((*split_lookup(child[0]), child[1]))
        return leaves, rest


class F:
    """A reference to a field's stored value, for update expressions (``F("stock_level") - 3``)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.ops: list[tuple[str, Any]] = []

    def _with(self, op: str, value: Any) -> F:
        out = F(self.name)
        out.ops = [*self.ops, (op, value)]
        return out

    def __add__(self, value: Any) -> F:
        return self._with("+", value)

    def __sub__(self, value: Any) -> F:
        return self._with("-", value)

    def if_not_exists(self, value: Any) -> F:
        """Use ``value`` when the attribute is missing (``if_not_exists(attr, value)``)."""
        return self._with("if_not_exists", value)

    def append(self, values: Iterable[Any]) -> F:
        """Append ``values`` to a list attribute (``list_append(attr, values)``)."""
        return self._with("append", list(values))

    def add(self, values: Iterable[Any]) -> F:
        """Add elements to a ``fields.Set`` attribute (``ADD attr :values``)."""
        return self._with("add", set(values))

    def discard(self, values: Iterable[Any]) -> F:
        """Remove elements from a ``fields.Set`` attribute (``DELETE attr :values``)."""
        return self._with("discard", set(values))

    def __repr__(self) -> str:
        return f"F({self.name!r}){''.join(f' {op} {v!r}' for op, v in self.ops)}"


class ExpressionBuilder:
    """Collects ``#name`` and ``:value`` placeholders while rendering expressions."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}
        self._name_of: dict[str, str] = {}
        self.values: dict[str, Any] = {}

    def name(self, attr: str) -> str:
        """Return the ``#n`` placeholder for an attribute name (reused for the same name)."""
        ph = self._name_of.get(attr)
        if ph is None:
            ph = f"#n{len(self.names)}"
            self.names[ph] = attr
            self._name_of[attr] = ph
        return ph

    def value(self, av: dict[str, Any]) -> str:
        """Return a new ``:v`` placeholder for a DynamoDB attribute value."""
        ph = f":v{len(self.values)}"
        self.values[ph] = av
        return ph

    # -- conditions ------------------------------------------------------------------
    def condition(self, q: Q, meta: Options) -> str:
        """Render a ``Q`` tree on ``meta``'s fields into a condition expression."""
        parts = []
        for child in q.children:
            if isinstance(child, Q):
                parts.append(self.condition(child, meta))
            else:
                parts.append(self.leaf((*split_lookup(child[0]), child[1]), meta))
        parts = [p for p in parts if p]
        if not parts:
            return ""
        joined = f" {q.connector} ".join(parts)
        if len(parts) > 1:
            joined = f"({joined})"
        return f"(NOT {joined})" if q.negated else joined

    def path(self, attr: str, parts: tuple[str | int, ...] = ()) -> str:
        """Return the document path ``#n0.#n1[2]`` of ``attr`` and ``parts`` (a ``#name`` per map key)."""
        text = self.name(attr)
        for part in parts:
            text += f"[{part}]" if isinstance(part, int) else f".{self.name(part)}"
        return text

    def leaf(self, leaf: Leaf, meta: Options) -> str:
        """Render one ``(field, lookup, value)`` into a condition on the field's attribute, or on a
        document path inside a Map/List field (``address__city``: see :func:`resolve_path`)."""
        name, lookup, value = leaf
        dp = resolve_path(meta, name)
        if dp.parts:
            return self._path_leaf(dp, lookup, value, meta)
        field = dp.field
        f = field_of(meta, field)
        n = self.name(f.attr_name)
        if lookup in _COMPARE:
            return f"{n} {_COMPARE[lookup]} {self.value(serialize_value(meta, field, value))}"
        if lookup == "between":
            lo, hi = _pair(meta, field, value)
            lo_av, hi_av = serialize_value(meta, field, lo), serialize_value(meta, field, hi)
            _check_bounds(meta, field, lo, hi, lo_av, hi_av)
            return f"{n} BETWEEN {self.value(lo_av)} AND {self.value(hi_av)}"
        if lookup == "begins_with":
            if not isinstance(value, str):
                raise InvalidQuery(f"{meta.entity}.{field}__begins_with needs a string, got {value!r}.")
            return f"begins_with({n}, {self.value({'S': value})})"
        if lookup == "contains":
            return f"contains({n}, {self.value(_element_value(meta, field, value))})"
        if lookup == "in":
            phs = ", ".join(self.value(serialize_value(meta, field, v)) for v in _in_values(meta, field, value))
            return f"{n} IN ({phs})"
        if lookup in ("exists", "not_exists"):
            want = bool(value) if lookup == "exists" else not bool(value)
            return f"attribute_exists({n})" if want else f"attribute_not_exists({n})"
        raise InvalidQuery(f"unknown lookup {lookup!r}")  # pragma: no cover

    def _path_leaf(self, dp: DocPath, lookup: str, value: Any, meta: Options) -> str:
        """A condition on a document path: its value is encoded with the plain codec (Map values' codec)."""
        n = self.path(meta.fields[dp.field].attr_name, dp.parts)
        shown = dp.shown

        def av(v: Any) -> dict[str, Any]:
            if v is None:
                raise InvalidQuery(f"{meta.entity}.{shown}: cannot compare with None; use {dp.name}__exists=False "
                                   "(nothing was sent).")
            return plain_value(meta, shown, v, f"__{lookup}")

        if lookup in _COMPARE:
            return f"{n} {_COMPARE[lookup]} {self.value(av(value))}"
        if lookup == "between":
            lo, hi = _pair(meta, shown, value)
            lo_av, hi_av = av(lo), av(hi)
            _check_bounds(meta, shown, lo, hi, lo_av, hi_av)
            return f"{n} BETWEEN {self.value(lo_av)} AND {self.value(hi_av)}"
        if lookup == "begins_with":
            if not isinstance(value, str):
                raise InvalidQuery(f"{meta.entity}.{shown}__begins_with needs a string, got {value!r}.")
            return f"begins_with({n}, {self.value({'S': value})})"
        if lookup == "contains":
            return f"contains({n}, {self.value(av(value))})"
        if lookup == "in":
            return f"{n} IN ({', '.join(self.value(av(v)) for v in _in_values(meta, shown, value))})"
        if lookup in ("exists", "not_exists"):
            want = bool(value) if lookup == "exists" else not bool(value)
            return f"attribute_exists({n})" if want else f"attribute_not_exists({n})"
        raise InvalidQuery(f"unknown lookup {lookup!r}")  # pragma: no cover


def _check_bounds(meta: Options, shown: str, lo: Any, hi: Any, lo_av: Any, hi_av: Any) -> None:
    if _order_key(lo_av) > _order_key(hi_av):  # DynamoDB rejects it; no item could match anyway
        raise InvalidQuery(f"{meta.entity}.{shown}__between=({lo!r}, {hi!r}): the low bound is above the high "
                           "bound, so no item can match. The query is refused before any request; swap the "
                           "bounds.")


def _in_values(meta: Options, shown: str, value: Any) -> list[Any]:
    values = list(value) if isinstance(value, (list, tuple, set, frozenset)) else None
    if not values or len(values) > 100:
        raise InvalidQuery(f"{meta.entity}.{shown}__in needs a list of 1 to 100 values, got {value!r}.")
    return values


# -- document paths -----------------------------------------------------------------------------
_PATH_DEPTH = 31  # DynamoDB nests documents 32 levels deep: the attribute and 31 path parts
#: DynamoDB's largest list index in a document path (measured on DynamoDB Local: 2**31 is refused with
#: "List index is not within the allowable range")
MAX_LIST_INDEX = 2**31 - 1
_INDEX = re.compile(r"[0-9]+")  # only ASCII digits: str.isdigit() also takes "²" and "١"
_DOTTED = re.compile(r"\.([^.\[\]]+)|\[([0-9]+)\]")
_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class DocPath(FrozenValue):
    """A field, or a document path inside a ``fields.Map``/``fields.List`` field.

    Attributes:
        name: the name as given (``"stock_by_warehouse__W01"``, ``"stock_by_warehouse.W01"``).
        field: the field's name; parts: map keys (``str``) and list indexes (``int``) below it
            (empty for the whole field).
    """

    name: str
    field: str
    parts: tuple[str | int, ...]

    def __init__(self, name: str, field: str, parts: tuple[str | int, ...] = ()) -> None:
        self.__dict__.update(name=name, field=field, parts=parts)

    @property
    def shown(self) -> str:
        """The path as DynamoDB writes it, for messages: ``stock_by_warehouse.W01``, ``tags[0]``; a key
        that is not a plain identifier is quoted (``stock."W 01"``, ``stock."a.b"``)."""
        return self.field + "".join(f"[{p}]" if isinstance(p, int) else f".{show_key(p)}" for p in self.parts)

    def overlaps(self, other: DocPath) -> bool:
        """True when one path is the other or inside it (``m`` and ``m.k``)."""
        n = min(len(self.parts), len(other.parts))
        return self.field == other.field and self.parts[:n] == other.parts[:n]

    def conflicts(self, other: DocPath) -> bool:
        """True when the two paths go through one place as a list and as a map (``m.bins[0]`` and
        ``m.bins.0``): DynamoDB refuses such an update ("Two document paths conflict")."""
        if self.field != other.field:
            return False
        for a, b in zip(self.parts, other.parts):
            if a == b and type(a) is type(b):
                continue
            return isinstance(a, int) != isinstance(b, int)
        return False


def show_key(key: str) -> str:
    """A map key as shown in messages and ``explain()``: bare when a plain identifier, else quoted (JSON)."""
    return key if _PLAIN_KEY.fullmatch(key) else json.dumps(key, ensure_ascii=False)


def _double_underscore_form(meta: Options, name: str) -> bool:
    """True when ``name`` is written with ``__`` transforms: it starts with a field then ``__``
    (``stock__a.b`` reaches the key ``a.b``), or holds no ``.`` nor ``[`` (the dotted form's marks)."""
    head, sep, _ = name.partition("__")
    return bool(sep) and head in meta.fields or not ("." in name or "[" in name)


def resolve_path(meta: Options, name: str, error: type[Exception] = InvalidQuery) -> DocPath:
    """Resolve a field name or a document path (``address__city``, ``tags__0``, ``F("a.b[0]")``).

    Two spellings: Django's ``__`` transforms (``stock_by_warehouse__W01``), used whenever the
    name starts with a field and ``__``, and the dotted form (``stock_by_warehouse.W01``,
    ``m.items[0]``), used for a name holding ``.`` or ``[`` that does not. The first segment is a
    field; below a ``fields.Map``/``fields.List`` field each segment is a map key, except a segment
    of ASCII digits right below a ``fields.List`` field (``tags__0``) and a ``[n]`` of the dotted
    form, which are list indexes (0 to 2**31 - 1, DynamoDB's range). The dotted form reaches map
    keys named like a lookup (``"m.gt"``) or holding ``__``; the ``__`` form reaches keys holding
    ``.`` or ``[`` (``"m__a.b"`` is the key ``a.b``).

    Raises:
        ``error`` (InvalidQuery; ValidationError for writes): an unknown field, a path into a
        field that is not a Map or List, an empty segment, a list index that is not ASCII digits
        or out of DynamoDB's range, a path deeper than DynamoDB nests.
    """
    if name in meta.fields:
        return DocPath(name, name)
    entity = meta.entity

    def fail(message: str) -> Exception:
        return error(message, entity=entity, field=name) if issubclass(error, ValidationError) else error(message)

    dotted = not _double_underscore_form(meta, name)
    if dotted:
        head = re.match(r"[^.\[]*", name).group(0)  # type: ignore[union-attr]
        rest = name[len(head):]
        tokens = list(_DOTTED.finditer(rest))
        if "".join(t.group(0) for t in tokens) != rest:
            raise fail(f"{entity}: cannot read the document path {name!r}: write it as field.key.key or "
                        "field.key[0] (keys not empty, list indexes in ASCII digits), or with __ "
                        "(field__key__0, which also reaches keys holding . or [); nothing was sent.")
        raw: list[str | int] = [t.group(1) if t.group(1) is not None else int(t.group(2)) for t in tokens]
    else:
        head, *segments = name.split("__")
        raw = list(segments)
    f = meta.fields.get(head)
    if f is None or not raw:
        if error is InvalidQuery:
            field_of(meta, name)  # the unknown-field/unknown-lookup message
        raise fail(f"{entity} has no field {name!r}; fields: {', '.join(meta.fields)}.")
    if type(f).__name__ not in ("Map", "List"):
        if not dotted and error is InvalidQuery:
            field_of(meta, name)
        raise fail(f"{entity}.{head} is a {type(f).__name__} field: document paths ({name!r}) reach inside "
                    "fields.Map and fields.List fields only; nothing was sent.")
    last = raw[-1]
    if not dotted and isinstance(last, str) and last in HABIT_LOOKUPS:
        raise fail(f"{entity}.{name}: {last!r} is not a dynorm lookup ({HABIT_LOOKUPS[last]}); supported "
                    f"lookups: {', '.join(LOOKUPS)}. For a map key named {last!r}, use the dotted form "
                    f"({head}.{'.'.join(str(p) for p in raw)}); nothing was sent.")
    parts: list[str | int] = []
    for i, seg in enumerate(raw):
        if seg == "":
            raise fail(f"{entity}: the document path {name!r} has an empty key; nothing was sent.")
        if i == 0 and f.is_list and isinstance(seg, str) and (not dotted or _INDEX.fullmatch(seg)):
            if not _INDEX.fullmatch(seg):
                raise fail(f"{entity}.{head} is a fields.List: its path starts with an index in ASCII digits "
                            f"({head}__0 or {head}[0]), not {seg!r}; nothing was sent.")
            seg = int(seg)
        elif dotted and i == 0 and f.is_list and isinstance(seg, str):
            raise fail(f"{entity}.{head} is a fields.List: index it with {head}[0], not {seg!r}; nothing "
                        "was sent.")
        if i == 0 and not f.is_list and isinstance(seg, int):
            raise fail(f"{entity}.{head} is a fields.Map: reach a key with {head}.key, not [{seg}]; nothing "
                        "was sent.")
        if isinstance(seg, int) and seg > MAX_LIST_INDEX:
            raise fail(f"{entity}: the list index {seg} in {name!r} is out of DynamoDB's range (0 to "
                        f"{MAX_LIST_INDEX}); nothing was sent.")
        parts.append(seg)
    if len(parts) > _PATH_DEPTH:
        raise fail(f"{entity}: the document path {name!r} is {len(parts) + 1} levels deep; DynamoDB nests "
                    "32 at most; nothing was sent.")
    return DocPath(name, head, tuple(parts))


def refuse_paths(meta: Options, names: Iterable[str], where: str, remedy: str,
                 error: type[Exception] = ValidationError) -> None:
    """Refuse a document path (``stock__W01``, ``stock.W01``) among ``names`` given to a call that
    takes whole fields only, with what to do instead; other unknown names are left to the caller.

    Args:
        meta: the entity's options; names: the names given; where: the call, for the message
            (``"bulk_update()"``); remedy: what to do instead (``{field}``, ``{name}`` and ``{path}``
            are filled in); error: the error class (ValidationError, InvalidQuery for reads).

    Raises:
        ``error``: naming entity, call, path and remedy (before any request).
    """
    for name in names:
        if not isinstance(name, str) or name in meta.fields:
            continue
        try:
            dp = resolve_path(meta, name, error)
        except DynormError:
            continue  # not a path: the caller's own unknown-field message
        if dp.parts:
            message = (f"{meta.entity}.{where}: {name!r} is a document path ({dp.shown}), not a field, and "
                       f"{where} takes whole fields only; {remedy.format(field=dp.field, name=name, path=dp.shown)} "
                       "Nothing was sent.")
            raise (error(message, entity=meta.entity, field=name) if issubclass(error, ValidationError)
                   else error(message))


def field_of(meta: Options, name: str) -> Any:
    """Return the field called ``name`` or raise :class:`InvalidQuery`.

    The error lists the supported lookups when ``name`` is a field plus an unknown lookup
    (``title__icontains``), else the entity's fields.
    """
    f = meta.fields.get(name)
    if f is None:
        field, sep, lookup = name.rpartition("__")
        if sep and field in meta.fields:  # a known field with a lookup dynorm does not have
            hint = HABIT_LOOKUPS.get(lookup)
            raise InvalidQuery(f"{meta.entity}.{field}: unknown lookup {lookup!r}"
                               f"{f' ({hint})' if hint else ''}; supported lookups: {', '.join(LOOKUPS)}.")
        raise InvalidQuery(f"{meta.entity} has no field {name!r}; fields: {', '.join(meta.fields)}.")
    return f


def serialize_value(meta: Options, field: str, value: Any, purpose: str = "compared") -> dict[str, Any]:
    """Validate ``value`` for ``field`` and return it as a DynamoDB attribute value.

    ``purpose`` ("compared", "stored") words the error for a value with no stored form.

    Raises:
        ValidationError: the value has the wrong type for the field.
    """
    f = field_of(meta, field)
    if value is None:
        raise ValidationError(f"{meta.entity}.{field}: cannot compare with None; use {field}__exists=False.",
                              entity=meta.entity, field=field, value=None)
    value = f.validate(value, meta.entity)
    raw = f.serialize(value)
    if raw is None:
        why = ""
        if getattr(f, "is_set", False) and not value:
            why = (": DynamoDB has no empty sets (an empty fields.Set is stored as no attribute); use None "
                   f"({field}=None removes it, {field}__exists=False finds it), or give at least one element; "
                   "nothing was sent")
        raise ValidationError(f"{meta.entity}.{field}={value!r} cannot be {purpose}{why}.", entity=meta.entity,
                              field=field, value=value)
    return {f.attr_type: raw}


def plain_value(meta: Options, field: str, value: Any, what: str = "", depth: int = 1) -> dict[str, Any]:
    """Serialize an operand that is not a whole field value (``F() + 1``, ``append([...])``,
    ``__contains``) with the plain codec, refusing what DynamoDB would refuse or change.

    Args:
        meta: the entity's options; field: the field named in the error; value: the operand;
        what: how the operand is used (``"+"``, ``"append()"``), for the message; depth: the nesting
        level the value is stored at (``1 + n`` at a document path of ``n`` parts).

    Returns:
        the DynamoDB attribute value.

    Raises:
        ValidationError: naming entity, field and value (NaN/infinity, over 38 digits, out of
            range, nested over 31 deep, lone surrogates, map keys that are not strings, unstorable
            types).
    """
    try:
        return _codec.to_av(value, depth)
    except (TypeError, _codec.BadValue) as exc:
        used = f" in {what}" if what else ""
        raise ValidationError(f"{meta.entity}.{field}{used}: {_short(value)}: {exc}; nothing was sent.",
                              entity=meta.entity, field=field, value=value) from None


def _short(value: Any) -> str:
    return reprlib.repr(value)


def _element_value(meta: Options, field: str, value: Any) -> dict[str, Any]:
    f = field_of(meta, field)
    if f.attr_type == "S":
        if not isinstance(value, str):
            raise ValidationError(f"{meta.entity}.{field}__contains needs a string, got {value!r}.",
                                  entity=meta.entity, field=field, value=value)
        return plain_value(meta, field, value, "__contains")
    return plain_value(meta, field, value, "__contains")


def _order_key(av: Any) -> Any:
    """A Python value that orders as DynamoDB orders a scalar attribute value (N numerically,
    S by UTF-8 bytes, B by bytes); values of other kinds compare equal (no check)."""
    if isinstance(av, dict) and len(av) == 1:
        (kind, v), = av.items()
        if kind == "N":
            return (0, decimal.Decimal(v))
        if kind == "S":
            return (0, v.encode("utf-8", "surrogatepass"))
        if kind == "B":
            return (0, bytes(v))
    return (0, 0)


def _pair(meta: Options, field: str, value: Any) -> tuple[Any, Any]:
    if not (isinstance(value, (tuple, list)) and len(value) == 2):
        raise InvalidQuery(f"{meta.entity}.{field}__between needs a (low, high) pair, got {value!r}.")
    return value[0], value[1]
