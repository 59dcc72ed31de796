"""Deterministic demo data for the Fromatoz catalog: 10 brands, 8 categories, 300 products."""

from __future__ import annotations

import random

from .models import Brand, Category, Product

BRANDS = ["Microsoft", "Google", "Tesla", "Apple", "Samsung", "Sony", "Lego", "Bosch", "Yamaha", "Canon"]
CATEGORIES = ["Cars", "Boats", "Phones", "Laptops", "Cameras", "Toys", "Tools", "Instruments"]
NOUNS = ["Model", "Series", "Pro", "Mini", "Max", "Air", "One", "Go"]


def load(products: int = 300, seed: int = 42) -> dict[str, int]:
    """Create the brands and categories (PutItem each) and products (bulk); return counts by entity."""
    rng = random.Random(seed)
    for i, name in enumerate(BRANDS, start=1):
        Brand.objects.create(brand_id=str(i), name=name)
    for i, name in enumerate(CATEGORIES, start=1):
        Category.objects.create(category_id=str(i), name=name)
    batch = []
    for n in range(products):
        brand = rng.randint(1, len(BRANDS))
        category = rng.randint(1, len(CATEGORIES))
        batch.append(Product(
            brand_id=str(brand), category_id=str(category),
            name=f"{BRANDS[brand - 1]} {rng.choice(NOUNS)} {n}",
            description=f"A {CATEGORIES[category - 1].lower()[:-1]} by {BRANDS[brand - 1]}",
            stock_level=rng.choice([0, 0, 3, 12, 40, 70, 150]),
        ))
    Product.objects.bulk_create(batch)  # BatchWriteItem, 25 per request
    return {"Brand": len(BRANDS), "Category": len(CATEGORIES), "Product": products}
