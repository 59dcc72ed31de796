"""Fromatoz catalog: brands, categories and products in one table with two GSIs.

Key layout (from the article; every partition key version-prefixed)::

    Entity    PK             SK        GSI1PK      GSI1SK            GSI2PK      GSI2SK
    Brand     v1#BRANDS      B#<bid>
    Category  v1#CATEGORIES  C#<cid>
    Product   v1#P#<pid>     METADATA  v1#B#<bid>  C#<cid>#P#<pid>   v1#C#<cid>  B#<bid>#P#<pid>
"""

from __future__ import annotations

from dynorm import Entity, Index, QuerySet, Table, fields


class Catalog(Table):
    """The single table of the catalog."""

    class Meta:
        table_name = "fromatoz"
        gsi_count = 2


class Brand(Entity):
    """A brand (access pattern 1: all brands, one Query on the BRANDS partition)."""

    brand_id = fields.String()
    name = fields.String()

    class Meta:
        table = Catalog
        entity_type = "BRAND"
        key_version = "v2"
        pk = "{version}#BRANDS"
        sk = "B#{brand_id}"


class Category(Entity):
    """A category (access pattern 2: all categories, one Query)."""

    category_id = fields.String()
    name = fields.String()

    class Meta:
        table = Catalog
        entity_type = "CATEGORY"
        key_version = "v2"
        pk = "{version}#CATEGORIES"
        sk = "C#{category_id}"


class ProductQuerySet(QuerySet["Product"]):
    """Named access patterns of products."""

    def by_brand(self, brand_id: str) -> ProductQuerySet:
        """Products of a brand (pattern 6): Query GSI1 on the brand partition."""
        return self.filter(brand_id=brand_id)  # type: ignore[return-value]

    def in_category(self, category_id: str) -> ProductQuerySet:
        """Narrow to a category (pattern 7 after by_brand): begins_with on GSI1SK."""
        return self.filter(category_id=category_id)  # type: ignore[return-value]

    def by_category(self, category_id: str) -> ProductQuerySet:
        """Products of a category (pattern 8): Query GSI2 on the category partition."""
        return self.filter(category_id=category_id).using("by_category")  # type: ignore[return-value]

    def of_brand(self, brand_id: str) -> ProductQuerySet:
        """Narrow to a brand (pattern 9 after by_category): begins_with on GSI2SK."""
        return self.filter(brand_id=brand_id)  # type: ignore[return-value]

    def in_stock(self) -> ProductQuerySet:
        """Only products with stock (a FilterExpression)."""
        return self.filter(stock_level__gt=0)  # type: ignore[return-value]


class Product(Entity):
    """A product (patterns 3-9)."""

    product_id = fields.ULID(auto=True)
    brand_id = fields.String()
    category_id = fields.String()
    name = fields.String()
    description = fields.String(null=True)
    stock_level = fields.Integer(default=0)
    created_at = fields.DateTime(auto_now_add=True)
    version = fields.Version()

    objects = ProductQuerySet.as_manager()

    class Meta:
        table = Catalog
        entity_type = "PRODUCT"
        key_version = "v2"
        pk = "{version}#P#{product_id}"
        sk = "METADATA"
        indexes = {
            "by_brand": Index("GSI1", pk="{version}#B#{brand_id}", sk="C#{category_id}#P#{product_id}",
                              comment="products of a brand, narrowed by category"),
            "by_category": Index("GSI2", pk="{version}#C#{category_id}", sk="B#{brand_id}#P#{product_id}",
                                 comment="products of a category, narrowed by brand"),
        }
