"""One cold start, run as its own process: import a library, declare the model, get one item.

    python bench/compare/cold.py LIBRARY ENDPOINT TABLE

``LIBRARY`` is ``boto3``, ``pynamodb``, ``pydynox`` or ``dynorm`` (``dynorm:WIRE`` for a wire
mode). Standalone on purpose: it imports nothing but the library measured (no ``bench``, no
dynorm for the others). Exits 1 when the item is not found. Its ``*_model`` functions are the one
declaration of the benchmark's model per library; ``bench/compare/lib_*.py`` use them too.
"""

import sys

PK, SK = "v1#I#target", "METADATA"
KEY_ID = SECRET = "dynormlocal"  # DynamoDB Local's throwaway credentials (dynorm.backend.LOCAL_CREDENTIALS)


def boto3_get(endpoint, table):
    import boto3

    client = boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1",
                          aws_access_key_id=KEY_ID, aws_secret_access_key=SECRET)
    return client.get_item(TableName=table, Key={"PK": {"S": PK}, "SK": {"S": SK}},
                           ReturnConsumedCapacity="TOTAL").get("Item")


def pynamodb_model(endpoint, table):
    """The benchmark item as a hand-written PynamoDB model on ``table`` at ``endpoint``."""
    from pynamodb.attributes import NumberAttribute, UnicodeAttribute, VersionAttribute
    from pynamodb.indexes import AllProjection, GlobalSecondaryIndex
    from pynamodb.models import Model

    class ByGroup(GlobalSecondaryIndex):
        class Meta:
            index_name = "GSI1"
            projection = AllProjection()

        gsi1pk = UnicodeAttribute(hash_key=True, attr_name="GSI1PK")
        gsi1sk = UnicodeAttribute(range_key=True, attr_name="GSI1SK")

    class PItem(Model):
        class Meta:
            table_name = table
            host = endpoint
            region = "us-east-1"
            aws_access_key_id = KEY_ID
            aws_secret_access_key = SECRET

        pk = UnicodeAttribute(hash_key=True, attr_name="PK")
        sk = UnicodeAttribute(range_key=True, attr_name="SK")
        gsi1pk = UnicodeAttribute(attr_name="GSI1PK")
        gsi1sk = UnicodeAttribute(attr_name="GSI1SK")
        entity_type = UnicodeAttribute(attr_name="entityType")
        item_id = UnicodeAttribute()
        group = UnicodeAttribute()
        name = UnicodeAttribute()
        description = UnicodeAttribute()
        stock_level = NumberAttribute()
        created_at = UnicodeAttribute()
        version = VersionAttribute()
        by_group = ByGroup()

    return PItem


def pynamodb_get(endpoint, table):
    return pynamodb_model(endpoint, table).get(PK, SK)


def pydynox_model(endpoint, table):
    """The benchmark item as a pydynox model on ``table`` at ``endpoint`` (its client as ``.client``)."""
    import logging

    from pydynox import DynamoDBClient, Model, ModelConfig
    from pydynox.attributes import NumberAttribute, StringAttribute, VersionAttribute
    from pydynox.indexes import GlobalSecondaryIndex

    # its warning on every operation slower than 100 ms would interleave with the benchmark's output
    logging.getLogger("pydynox").setLevel(logging.ERROR)
    client = DynamoDBClient(region="us-east-1", endpoint_url=endpoint, access_key=KEY_ID, secret_key=SECRET)

    class XItem(Model):
        model_config = ModelConfig(table=table, client=client)

        pk = StringAttribute(partition_key=True, alias="PK")
        sk = StringAttribute(sort_key=True, alias="SK")
        gsi1pk = StringAttribute(alias="GSI1PK")
        gsi1sk = StringAttribute(alias="GSI1SK")
        entity_type = StringAttribute(alias="entityType")
        item_id = StringAttribute()
        group = StringAttribute()
        name = StringAttribute()
        description = StringAttribute()
        stock_level = NumberAttribute()
        created_at = StringAttribute()
        version = VersionAttribute()
        by_group = GlobalSecondaryIndex(index_name="GSI1", partition_key="gsi1pk", sort_key="gsi1sk")

    XItem.client = client
    return XItem


def pydynox_get(endpoint, table):
    return pydynox_model(endpoint, table).sync_get(pk=PK, sk=SK)


def dynorm_model(name):
    """The benchmark's table (``name`` without the prefix) and item as dynorm ``Table`` and ``Entity``."""
    from dynorm import Entity, Index, Table, fields

    class CompareTable(Table):
        class Meta:
            table_name = name
            gsi_count = 1

    class Item(Entity):
        item_id = fields.String()
        group = fields.String()
        name = fields.String()
        description = fields.String()
        stock_level = fields.Integer(default=0)
        created_at = fields.String()
        version = fields.Version()

        class Meta:
            table = CompareTable
            entity_type = "ITEM"
            key_version = "v1"
            pk = "{version}#I#{item_id}"
            sk = "METADATA"
            indexes = {"by_group": Index("GSI1", pk="{version}#G#{group}", sk="I#{item_id}")}

    return CompareTable, Item


def dynorm_get(endpoint, table, wire=None):
    import dynorm

    prefix, _, name = table.rpartition("-")
    dynorm.configure(endpoint=endpoint, table_prefix=prefix + "-", **({"wire": wire} if wire else {}))
    _, item = dynorm_model(name)
    return item.objects.get(item_id="target")


def main(argv):
    library, endpoint, table = argv
    library, _, wire = library.partition(":")
    get = {"boto3": boto3_get, "pynamodb": pynamodb_get, "pydynox": pydynox_get, "dynorm": dynorm_get}[library]
    found = get(endpoint, table, wire) if wire else get(endpoint, table)
    return 0 if found is not None else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
