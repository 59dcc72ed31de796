"""The PynamoDB names dynorm relies on, private ones included (setup.cfg caps pynamodb below 7).

If PynamoDB renames or reshapes one of these, this test fails loudly, naming it, before any other
test fails in a confusing way. Where dynorm uses each:
- ``Model._connection`` (tables._apply_settings_to): dropped so the escape hatch follows settings.
- ``Model._discriminator``, ``Model._get_discriminator_class`` (models: from_raw_data fast path).
- ``Model._dynamo_to_python_attr`` (writes: applying an UpdateItem's ALL_NEW attributes).
- ``DiscriminatorAttribute._discriminator_map`` / ``._class_map`` (models: a re-defined entity).
- ``Model.__init__(_user_instantiated=...)``, ``attribute_values``, ``get_attributes``.
"""

from __future__ import annotations

import inspect

import pynamodb
from pynamodb.attributes import DiscriminatorAttribute, UnicodeAttribute
from pynamodb.models import Model

from tests.models import Store


def test_pynamodb_major_version_is_the_tested_one() -> None:
    assert pynamodb.__version__.split(".")[0] == "6", (
        f"PynamoDB {pynamodb.__version__}: dynorm is tested with 6.x (setup.cfg pins pynamodb<7); "
        "re-check the private names below before raising the cap.")


def test_private_model_names_dynorm_uses_exist() -> None:
    for name in ("_connection", "_get_discriminator_class", "_dynamo_to_python_attr", "get_attributes",
                 "from_raw_data"):
        assert hasattr(Model, name), f"pynamodb.models.Model.{name} is gone (dynorm uses it)"
    assert "_user_instantiated" in inspect.signature(Model.__init__).parameters
    assert Store._discriminator == "_dynorm_type"  # type: ignore[attr-defined]
    assert Store._get_discriminator_class({"entityType": {"S": "STORE"}}) is Store  # type: ignore[attr-defined]
    assert Store._dynamo_to_python_attr("name") == "name"  # type: ignore[attr-defined]


def test_discriminator_attribute_maps_dynorm_edits_exist() -> None:
    disc = Store._meta.table._model_base.get_attributes()["_dynorm_type"]
    assert isinstance(disc, DiscriminatorAttribute)
    assert disc._discriminator_map["STORE"] is Store
    assert disc._class_map[Store] == "STORE"


def test_attribute_values_is_the_instance_dict_dynorm_reads() -> None:
    store = Store(store_id="s1", name="One")
    assert store.attribute_values["name"] == "One"
    assert isinstance(Store.get_attributes()["name"], UnicodeAttribute)
