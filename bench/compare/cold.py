"""One cold start, run as its own process: import a library, declare the model, get one item.

    python bench/compare/cold.py LIBRARY ENDPOINT TABLE

``LIBRARY`` is ``boto3``, ``pynamodb``, ``pydynox`` or ``dynorm`` (``dynorm:WIRE`` for a wire
mode). Standalone on purpose: it imports nothing but the library measured (no ``bench``, no
dynorm for the others). Exits 1 when the item is not found.
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


def pynamodb_get(endpoint, table):
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

    return PItem.get(PK, SK)


def pydynox_get(endpoint, table):
    from pydynox import DynamoDBClient, Model, ModelConfig
    from pydynox.attributes import NumberAttribute, StringAttribute, VersionAttribute
    from pydynox.indexes import GlobalSecondaryIndex

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

    return XItem.sync_get(pk=PK, sk=SK)


def dynorm_get(endpoint, table, wire=None):
    import dynorm
    from dynorm import Entity, Index, Table, fields

    prefix, _, name = table.rpartition("-")
    dynorm.configure(endpoint=endpoint, table_prefix=prefix + "-", **({"wire": wire} if wire else {}))

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

    return Item.objects.get(item_id="target")


def main(argv):
    library, endpoint, table = argv
    library, _, wire = library.partition(":")
    get = {"boto3": boto3_get, "pynamodb": pynamodb_get, "pydynox": pydynox_get, "dynorm": dynorm_get}[library]
    found = get(endpoint, table, wire) if wire else get(endpoint, table)
    return 0 if found is not None else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
