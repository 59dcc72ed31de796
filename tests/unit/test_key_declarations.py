"""Declarations whose key templates would overwrite one another are refused when the class is created
(issue 21, section 5).

One item holds one value per attribute. An index keyed on the table's own key attributes (the inverted
index: ``INV`` on ``SK``/``PK``) or several indexes sharing one overloaded attribute (``Data`` as the sort
key of GSI1 and GSI2, as in AWS's examples) are fine when every template that writes the attribute
renders the same text; a different template made the last one written win, so ``get()`` or a query
through the other index missed the item, and ``check()`` said nothing.
"""

from __future__ import annotations

import datetime
import decimal
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dynorm
from dynorm import Entity, Index, Table, fields
from dynorm.keys import KeyTemplate, encode_value


class KeyDecl(Table):
    class Meta:
        table_name = "keydecl"
        gsis = {"INV": ("SK", "PK"), "GSI1": ("GSI1PK", "Data"), "GSI2": ("GSI2PK", "Data"),
                "BYSK": ("BYSKPK", "SK"), "GSI3": ("GSI3PK", "GSI3SK")}
        lsis = {"LSI1": "Data"}


_names = iter(range(10_000))


def _entity(indexes: dict[str, Index], pk: str = "{version}#ORDER#{order_id}",
            sk: str = "ITEM#{product_id}", key_version: str = "v1") -> Any:
    n = next(_names)
    Meta = type("Meta", (), {"table": KeyDecl, "entity_type": f"KD{n}", "pk": pk, "sk": sk, "indexes": indexes,
                             "key_version": key_version})
    return type(f"KeyDeclEntity{n}", (Entity,), {
        "__module__": __name__, "Meta": Meta, "order_id": fields.String(), "product_id": fields.String(),
        "name": fields.String(null=True), "year": fields.Integer(null=True), "city": fields.String(null=True)})


def _refused(indexes: dict[str, Index], *parts: str, **meta: str) -> str:
    with pytest.raises(dynorm.ModelError) as info:
        _entity(indexes, **meta)
    message = str(info.value)
    for part in parts:
        assert part in message, message
    return message


# -- the inverted index --------------------------------------------------------------------------------------
def test_an_inverted_index_whose_partition_template_differs_from_sk_is_refused_at_class_creation() -> None:
    message = _refused({"by_product": Index("INV", pk="PRODUCT#{product_id}", sk="{version}#ORDER#{order_id}")},
                       "KeyDeclEntity", "'SK'", "Meta.sk 'ITEM#{product_id}'",
                       "Meta.indexes['by_product'].pk 'PRODUCT#{product_id}'", "the table's sort key",
                       "the partition key of INV", "same template")
    assert re.match(r"KeyDeclEntity\d+: ", message)


def test_an_inverted_index_whose_sort_template_differs_from_pk_is_refused() -> None:
    _refused({"by_product": Index("INV", pk="ITEM#{product_id}", sk="ORDER#{order_id}")},
             "'PK'", "Meta.pk '{version}#ORDER#{order_id}'", "Meta.indexes['by_product'].sk 'ORDER#{order_id}'",
             "the table's partition key and the sort key of INV")


def test_an_index_sorting_on_the_table_sort_key_with_another_template_is_refused() -> None:
    _refused({"by_city": Index("BYSK", pk="{version}#CITY#{city}", sk="C#{city}")},
             "'SK'", "Meta.sk 'ITEM#{product_id}'", "Meta.indexes['by_city'].sk 'C#{city}'")


def test_an_inverted_index_rendering_the_same_keys_is_accepted() -> None:
    cls = _entity({"by_product": Index("INV", pk="ITEM#{product_id}", sk="{version}#ORDER#{order_id}"),
                   "by_city": Index("BYSK", pk="{version}#CITY#{city}", sk="ITEM#{product_id:}")})
    keys = cls(order_id="o1", product_id="p1", city="Oslo").key_attributes()
    assert keys["PK"] == "v1#ORDER#o1" and keys["SK"] == "ITEM#p1" and keys["BYSKPK"] == "v1#CITY#Oslo"
    plan = cls.objects.filter(product_id="p1").using("by_product").explain()
    assert plan.index == "INV" and plan.readable(plan.key_condition) == 'SK = "ITEM#p1"'


# -- one attribute overloaded across indexes -------------------------------------------------------------------
def test_two_indexes_writing_one_overloaded_attribute_differently_are_refused() -> None:
    _refused({"by_city": Index("GSI1", pk="{version}#CITY#{city}", sk="N#{name}"),
              "by_year": Index("GSI2", pk="{version}#YEAR#{year}", sk="P#{product_id}")},
             "'Data'", "Meta.indexes['by_city'].sk 'N#{name}'", "Meta.indexes['by_year'].sk 'P#{product_id}'",
             "the sort key of GSI1 and the sort key of GSI2")


def test_an_lsi_template_and_a_gsi_sharing_one_attribute_must_agree() -> None:
    _refused({"by_city": Index("GSI1", pk="{version}#CITY#{city}", sk="N#{name}"),
              "by_name": Index("LSI1", sk="NAME#{name}")},
             "'Data'", "'N#{name}'", "'NAME#{name}'", "the sort key of GSI1 and the sort key of LSI1")


def test_two_access_paths_on_one_gsi_with_different_templates_are_refused() -> None:
    _refused({"by_city": Index("GSI3", pk="{version}#CITY#{city}", sk="N#{name}"),
              "by_name": Index("GSI3", pk="{version}#NAME#{name}", sk="N#{name}")},
             "'GSI3PK'", "'{version}#CITY#{city}'", "'{version}#NAME#{name}'")


def test_one_overloaded_attribute_with_one_template_is_accepted_and_several_entity_types_may_differ() -> None:
    a = _entity({"by_city": Index("GSI1", pk="{version}#CITY#{city}", sk="N#{name}"),
                 "by_year": Index("GSI2", pk="{version}#YEAR#{year}", sk="N#{name}")})
    b = _entity({"by_city": Index("GSI1", pk="{version}#CITY#{city}", sk="P#{product_id}")})  # another type
    keys = a(order_id="o", product_id="p", name="Ann", city="Oslo", year=2024).key_attributes()
    assert keys["Data"] == "N#Ann" and keys["GSI1PK"] == "v1#CITY#Oslo" and keys["GSI2PK"] == "v1#YEAR#P5032024"
    assert b(order_id="o", product_id="p", city="Oslo").key_attributes()["Data"] == "P#p"


def test_templates_equal_in_normal_form_count_as_one() -> None:
    assert KeyTemplate("A#{x:}#{{b}}").rendered_form() == KeyTemplate("A#{x}#{{b}}").rendered_form()
    assert KeyTemplate("A{{#{x}").rendered_form() == KeyTemplate("A{{#{x:}").rendered_form()
    assert KeyTemplate("A#{x:04d}").rendered_form() != KeyTemplate("A#{x}").rendered_form()


# -- templates that differ in text but render alike: compared as rendered -------------------------------------
def test_a_string_spec_s_and_no_spec_writing_one_attribute_are_accepted() -> None:
    """``{name:s}`` renders every string as ``{name}`` does, so both may write one ``Data`` (and an inverted
    index may spell the table's key with ``:s``); they were refused as "render differently"."""
    cls = _entity({"by_city": Index("GSI1", pk="{version}#CITY#{city}", sk="N#{name:s}"),
                   "by_year": Index("GSI2", pk="{version}#YEAR#{year}", sk="N#{name}"),
                   "by_product": Index("INV", pk="ITEM#{product_id:s}", sk="{version}#ORDER#{order_id}")})
    keys = cls(order_id="o1", product_id="p#1", name="Ann", city="Oslo", year=2024).key_attributes()
    assert keys["Data"] == "N#Ann" and keys["SK"] == "ITEM#p$231" and keys["PK"] == "v1#ORDER#o1"
    assert set(cls._meta.shared_key_attributes) == {"Data", "SK", "PK"}


def test_version_and_a_literal_equal_to_the_key_version_are_accepted_and_refused_once_they_differ() -> None:
    accepted = _entity({"by_product": Index("INV", pk="ITEM#{product_id}", sk="v7#ORDER#{order_id}")},
                       key_version="v7")
    assert accepted(order_id="o1", product_id="p1").key_attributes()["PK"] == "v7#ORDER#o1"
    _entity({"by_city": Index("GSI1", pk="{version}#CITY#{city}", sk="{version}#N#{name}"),
             "by_year": Index("GSI2", pk="{version}#YEAR#{year}", sk="v1#N#{name}")})
    # a key-version bump makes them render differently: refused, naming both
    _refused({"by_product": Index("INV", pk="ITEM#{product_id}", sk="v7#ORDER#{order_id}")},
             "'PK'", "Meta.pk '{version}#ORDER#{order_id}'", "'v7#ORDER#{order_id}'", key_version="v8")


@pytest.mark.parametrize("one, other", [
    ("Y#{year:d}", "Y#{year}"),        # an Integer: {year} is number text (P5...), {year:d} its digits
    ("N#{name:.3}", "N#{name}"),       # a truncation renders long names differently
    ("N#{name:>5}", "N#{name}"),       # padding
    ("N#{name:s}#", "N#{name}"),       # another literal
    ("N#{city:s}", "N#{name}"),        # another field
])
def test_templates_that_can_render_differently_are_still_refused(one: str, other: str) -> None:
    _refused({"by_city": Index("GSI1", pk="{version}#CITY#{city}", sk=one),
              "by_year": Index("GSI2", pk="{version}#YEAR#{year}", sk=other)},
             "'Data'", "render differently")


class _Loud(str):
    """A str subclass whose format() and str() disagree with its characters."""

    def __format__(self, spec: str) -> str:
        return "formatted"

    def __str__(self) -> str:
        return "stringified"


@settings(max_examples=200, deadline=None)
@given(value=st.text(min_size=1, max_size=20), delim=st.sampled_from(["#", "::", "|"]),
       encoding=st.sampled_from(["ordered", "percent"]))
def test_a_string_renders_one_text_with_spec_s_and_without(value: str, delim: str, encoding: str) -> None:
    """What makes ``{b:s}`` and ``{b}`` interchangeable: one rendering path for every string."""
    for v in (value, _Loud(value)):
        try:
            plain = encode_value(v, "", delimiter=delim, encoding=encoding)
        except dynorm.InvalidKeyValue:
            with pytest.raises(dynorm.InvalidKeyValue):
                encode_value(v, "s", delimiter=delim, encoding=encoding)
            continue
        assert encode_value(v, "s", delimiter=delim, encoding=encoding) == plain


# -- the table's own attributes ------------------------------------------------------------------------------
def _table(**meta: Any) -> Any:
    return type("OwnAttrs", (Table,), {"__module__": __name__, "Meta": type("Meta", (), {"table_name": "own", **meta})})


@pytest.mark.parametrize("meta, attr, role", [
    ({"gsi_count": 1, "type_attribute": "GSI1SK"}, "GSI1SK", "the sort key of GSI1"),
    ({"gsi_count": 1, "type_attribute": "GSI1PK"}, "GSI1PK", "the partition key of GSI1"),
    ({"type_attribute": "SK"}, "SK", "the table's sort key"),
    ({"type_attribute": "PK"}, "PK", "the table's partition key"),
    ({"lsis": {"LSI1": "created"}, "type_attribute": "created"}, "created", "the sort key of LSI1"),
])
def test_a_type_attribute_that_a_key_uses_is_refused_when_the_table_is_defined(
        meta: dict[str, Any], attr: str, role: str) -> None:
    """Key text written there overwrote the entity type: ``get()`` raised DoesNotExist for the item just saved."""
    with pytest.raises(dynorm.ModelError) as info:
        _table(**meta)
    assert str(info.value) == (
        f"OwnAttrs.Meta.type_attribute is {attr!r}, which is also {role}; an item holds one value per attribute, "
        "so the key text and the entity type would overwrite each other. Give Meta.type_attribute a name no key "
        "uses.")


def test_a_revision_attribute_equal_to_the_type_attribute_or_an_lsi_sort_key_is_refused() -> None:
    with pytest.raises(dynorm.ModelError, match=re.escape(
            "OwnAttrs.Meta.revision_attribute is 'Type', which is also Meta.type_attribute; an item holds one "
            "value per attribute, so the entity type and the revision token every write sets would overwrite")):
        _table(type_attribute="Type", revision_attribute="Type")
    with pytest.raises(dynorm.ModelError, match=re.escape("'at', which is also the sort key of LSI1")):
        _table(lsis={"LSI1": "at"}, revision_attribute="at")
    assert _table(gsi_count=2, lsis={"LSI1": "at"}, type_attribute="Type")._meta.type_attribute == "Type"


@pytest.mark.parametrize("meta, kind, name", [
    ({"gsis": {"G": ("GPK", "GSK")}}, "gsis", "G"),
    ({"gsis": {"GSI1": ("A", None), "ab": ("B", None)}}, "gsis", "ab"),
    ({"gsis": {"by region": {"pk": {"region": "S"}}}}, "gsis", "by region"),
    ({"gsis": {"x" * 256: ("GPK", None)}}, "gsis", "x" * 256),
    ({"lsis": {"L1": "at"}}, "lsis", "L1"),
    ({"lsis": {"LSI#1": "at"}}, "lsis", "LSI#1"),
])
def test_an_index_name_dynamodb_refuses_is_refused_when_the_table_is_defined(
        meta: dict[str, Any], kind: str, name: str) -> None:
    """Before, CreateTable was the first to refuse it (ValidationException), after the code had shipped."""
    with dynorm.capture() as c:
        with pytest.raises(dynorm.ModelError) as info:
            _table(**meta)
    assert c.count == 0
    assert str(info.value) == (
        f"OwnAttrs.Meta.{kind}: index name {name!r} breaks DynamoDB's naming rule (3 to 255 characters, each a "
        "letter, digit, '_', '-' or '.'); CreateTable would refuse it. Rename the index.")


def test_index_names_at_the_edges_of_dynamodbs_rule_are_accepted() -> None:
    t = _table(gsis={"G-1": ("GPK", None), "a.b_c": ("APK", None), "y" * 255: ("YPK", None)}, lsis={"LS1": "at"})
    assert t._meta.index_names == ["G-1", "a.b_c", "y" * 255] and list(t._meta.lsis) == ["LS1"]


# -- two fields, one attribute ---------------------------------------------------------------------------------
@pytest.mark.parametrize("declared, first, second, attr", [
    ({"x": fields.String(attr_name="dup"), "y": fields.String(attr_name="dup")}, "x", "y", "dup"),
    ({"x": fields.String(attr_name="y"), "y": fields.String()}, "x", "y", "y"),
    ({"y": fields.Integer(), "x": fields.String(attr_name="y")}, "y", "x", "y"),
])
def test_two_fields_stored_as_one_attribute_are_refused_at_class_creation(
        declared: dict[str, Any], first: str, second: str, attr: str) -> None:
    """Before, the class was accepted and one of the two values was silently lost on every write."""
    Meta = type("Meta", (), {"table": KeyDecl, "entity_type": "TwoFieldsOneAttr", "pk": "O#{order_id}", "sk": "M"})
    with pytest.raises(dynorm.ModelError) as info:
        type("TwoFieldsOneAttr", (Entity,), {"__module__": __name__, "Meta": Meta, "order_id": fields.String(),
                                             **declared})
    assert str(info.value) == (
        f"TwoFieldsOneAttr: fields {first} and {second} are both stored as attribute {attr!r}; an item holds one "
        f"value per attribute, so one of the two values would be lost. Give {second} (or {first}) another "
        "attr_name.")


def test_a_field_swapping_attribute_names_with_another_is_accepted() -> None:
    Meta = type("Meta", (), {"table": KeyDecl, "entity_type": "Swapped", "pk": "O#{order_id}", "sk": "M"})
    cls = type("Swapped", (Entity,), {"__module__": __name__, "Meta": Meta, "order_id": fields.String(),
                                      "x": fields.String(attr_name="y"), "y": fields.String(attr_name="x")})
    assert cls._meta.attr_name("x") == "y" and cls._meta.attr_name("y") == "x"


# -- a key template writing a field's attribute ----------------------------------------------------------------
class LsiOnField(Table):
    class Meta:
        table_name = "lsionfield"
        lsis = {"LSI1": "created"}


def _lsi_entity(indexes: dict[str, Index], **extra: Any) -> Any:
    n = next(_names)
    Meta = type("Meta", (), {"table": LsiOnField, "entity_type": f"LF{n}", "pk": "E#{a}", "sk": "B#{b}",
                             "indexes": indexes})
    declared = {"a": fields.String(), "b": fields.String(), "label": fields.String(null=True), **extra}
    return type(f"LsiOnField{n}", (Entity,), {"__module__": __name__, "Meta": Meta, **declared})


@pytest.mark.parametrize("indexes, extra, fname, where, template", [
    ({"by_label": Index("LSI1", sk="L#{label}")}, {"created": fields.String()}, "created",
     "Meta.indexes['by_label'].sk", "L#{label}"),
    ({"by_label": Index("LSI1", sk="L#{label}")}, {"when": fields.String(attr_name="created")}, "when",
     "Meta.indexes['by_label'].sk", "L#{label}"),
    ({"by_created": Index("LSI1"), "by_b": Index("LSI1", sk="X#{b}")}, {"created": fields.String(null=True)},
     "created", "Meta.indexes['by_b'].sk", "X#{b}"),
])
def test_an_lsi_template_writing_a_fields_attribute_is_refused_at_class_creation(
        indexes: dict[str, Index], extra: dict[str, Any], fname: str, where: str, template: str) -> None:
    """Before, the class was accepted and ``check()`` said nothing; the key text and the field's value fought
    over ``created`` and a Query through LSI1 found nothing."""
    with pytest.raises(dynorm.ModelError) as info:
        _lsi_entity(indexes, **extra)
    message = str(info.value)
    assert re.match(r"LsiOnField\d+: ", message), message
    assert message.endswith(
        f"{where} {template!r} writes attribute 'created' (the sort key of LSI1), which is where field {fname} is "
        "stored. One item holds one value per attribute: the key text and the field's value would overwrite each "
        f"other, and reads through the index would miss the item. Drop sk= so LSI1 sorts on {fname}'s own value, "
        f"or give field {fname} another attr_name."), message


def test_an_lsi_on_a_fields_attribute_or_with_a_template_and_no_such_field_is_accepted() -> None:
    on_field = _lsi_entity({"by_created": Index("LSI1")}, created=fields.String(null=True))
    assert on_field._meta.indexes["by_created"].sort_field == "created"
    assert "created" not in on_field(a="a", b="b", created="2024").key_attributes()
    templated = _lsi_entity({"by_label": Index("LSI1", sk="L#{label}")})
    assert templated(a="a", b="b", label="x").key_attributes()["created"] == "L#x"
    plan = templated.objects.filter(a="a", label="x").explain()
    assert plan.index == "LSI1"


def test_a_str_subclass_value_keys_the_item_by_the_text_that_is_stored() -> None:
    """A ``(str, Enum)`` member (or a str subclass with its own ``__str__``) was keyed by ``str(value)``
    ("Color.RED") while the attribute stored its string content ("red"): the item's keys disagreed with
    its stored field, and get()/filter() by the stored value missed it."""
    import enum

    from dynorm.keys import encode_value

    class Color(str, enum.Enum):
        RED = "red"

    class Loud(str):
        def __str__(self) -> str:
            return "LOUD"

    assert encode_value(Color.RED) == encode_value("red") == "red"
    assert encode_value(Color.RED, "s") == "red"
    assert encode_value(Loud("quiet")) == "quiet"


class SpecShop(Table):
    class Meta:
        table_name = "keydecl_specs"
        gsi_count = 1


def _spec_entity(field: Any, sk: str, index_sk: str | None = None) -> Any:
    n = next(_names)
    indexes = {"by_x": Index("GSI1", pk="{version}#X", sk=index_sk)} if index_sk else {}
    Meta = type("Meta", (), {"table": SpecShop, "entity_type": f"SP{n}", "pk": "{version}#S#{sid}", "sk": sk,
                             "indexes": indexes})
    return type(f"SpecEntity{n}", (Entity,), {"__module__": __name__, "sid": fields.String(), "x": field,
                                              "Meta": Meta})


@pytest.mark.parametrize(("field", "spec"), [
    (fields.Decimal(), "06d"),  # a Decimal never formats as an integer ("invalid format string")
    (fields.String(), ".2f"),
    (fields.Integer(), ".3"),  # precision is not allowed for integers
])
def test_a_format_spec_no_value_of_its_field_renders_is_refused_when_the_class_is_created(field: Any,
                                                                                       spec: str) -> None:
    for sk, index_sk in ((f"X#{{x:{spec}}}", None), ("METADATA", f"X#{{x:{spec}}}")):
        with pytest.raises(dynorm.ModelError, match=rf"\{{x:{re.escape(spec)}\}} renders no value .*\.x can hold"):
            _spec_entity(type(field)(), sk, index_sk)


@pytest.mark.parametrize(("field", "spec", "value", "key"), [
    (fields.Number(), "06d", 42, "X#000042"),  # a Number may hold ints: 06d renders them
    (fields.Integer(), "06d", 42, "X#000042"),
    (fields.Decimal(), ".2f", decimal.Decimal("1.5"), "X#1.50"),
    (fields.String(), ".3", "abcdef", "X#abc"),
    (fields.DateTime(), "%Y-%m", datetime.datetime(2024, 5, 1, tzinfo=datetime.timezone.utc), "X#2024-05"),
])
def test_a_format_spec_that_renders_values_of_its_field_is_accepted(field: Any, spec: str, value: Any,
                                                                     key: str) -> None:
    model = _spec_entity(field, f"X#{{x:{spec}}}")
    assert model(sid="s", x=value).key_attributes()["SK"] == key


@pytest.mark.parametrize(("field", "spec"), [
    (fields.DateTime(), "06d"),  # a strftime pattern without a directive: the text '06d' for every datetime
    (fields.DateTime(), "T"),
])
def test_a_format_spec_that_renders_one_text_for_every_value_is_refused_when_the_class_is_created(
        field: Any, spec: str) -> None:
    with pytest.raises(dynorm.ModelError, match="overwrite one another"):
        _spec_entity(type(field)(), f"X#{{x:{spec}}}")  # the sort key: every item one key
    with pytest.raises(dynorm.ModelError, match="could not tell them apart"):
        _spec_entity(type(field)(), "METADATA#{sid}", f"X#{{x:{spec}}}")


def test_a_spec_that_drops_only_some_of_a_value_is_still_accepted() -> None:
    model = _spec_entity(fields.DateTime(), "D#{x:%Y-%m}")  # lossy but not constant: the planner filters
    when = datetime.datetime(2024, 5, 1, 9, tzinfo=datetime.timezone.utc)
    assert model(sid="s", x=when).key_attributes()["SK"] == "D#2024-05"

