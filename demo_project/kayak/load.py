"""Realistic kayak-rental data: 40 stores, ~5 employees each (with moves), inventory, rentals."""

from __future__ import annotations

import random
from typing import Any

from ulid import ULID

from .models import (
    EmploymentRelationship,
    PersonMetadata,
    RentalRelationship,
    StoreActiveRental,
    StoreEmployee,
    StoreInventoryItem,
    StoreMetadata,
)

STATES = ["AL", "AZ", "AR", "CA", "CO", "CT", "DE", "FL", "GA", "ID", "IL", "IN", "IA", "KS", "KY", "LA", "ME",
          "MD", "MA", "MI", "MN", "MS", "MO", "MT", "NE", "NV", "NH", "NJ", "NM", "NY", "NC", "OH", "OK", "OR",
          "PA", "SC", "TN", "TX", "UT", "VA"]
MODELS = ["Pelican Argo", "Old Town Loon", "Perception Joyride", "Wilderness Pungo", "Dagger Stratos"]


def _ulid(rng: random.Random) -> str:
    return str(ULID.from_bytes(rng.randbytes(16)))


def load(seed: int = 7) -> dict[str, Any]:
    """Create the data with bulk_create; return counts and sample ids for the demo."""
    rng = random.Random(seed)
    stores = [StoreMetadata(store_id=_ulid(rng), name=f"Paddle {st}", address=f"{rng.randint(1, 999)} River Rd",
                            state=st) for st in STATES]
    StoreMetadata.objects.bulk_create(stores)
    inventory = {s.store_id: [StoreInventoryItem(store_id=s.store_id, inventory_id=_ulid(rng),
                                                 model=rng.choice(MODELS)) for _ in range(10)] for s in stores}
    StoreInventoryItem.objects.bulk_create([i for items in inventory.values() for i in items])
    employees = [PersonMetadata(person_id=_ulid(rng), name=f"Employee {n}") for n in range(200)]
    customers = [PersonMetadata(person_id=_ulid(rng), name=f"Customer {n}", email=f"c{n}@example.com")
                 for n in range(300)]
    PersonMetadata.objects.bulk_create(employees + customers)
    employment, current = [], []
    for n, person in enumerate(employees):
        history = [stores[n % len(stores)]] + rng.sample(stores, rng.choice([0, 0, 1, 2]))  # moves between stores
        for store in history:
            employment.append(EmploymentRelationship(employment_id=_ulid(rng), store_id=store.store_id,
                                                     person_id=person.person_id, person_name=person.name))
        last = history[-1]
        current.append(StoreEmployee(store_id=last.store_id, person_id=person.person_id, name=person.name))
    EmploymentRelationship.objects.bulk_create(employment)
    StoreEmployee.objects.bulk_create(current)
    rentals, active, seen = [], [], set()
    for _ in range(600):
        customer = rng.choice(customers)
        store = rng.choice(stores[:10])  # most rentals at a few busy stores
        kayak = rng.choice(inventory[store.store_id])
        rentals.append(RentalRelationship(rental_id=_ulid(rng), store_id=store.store_id, person_id=customer.person_id,
                                          inventory_id=kayak.inventory_id, returned=True))
    for rental in rng.sample(rentals, 50):
        key = (rental.store_id, rental.person_id, rental.inventory_id)
        if key in seen:
            continue
        seen.add(key)
        rental.returned = False
        active.append(StoreActiveRental(store_id=rental.store_id, person_id=rental.person_id,
                                        inventory_id=rental.inventory_id, rental_id=rental.rental_id))
    RentalRelationship.objects.bulk_create(rentals)
    StoreActiveRental.objects.bulk_create(active)
    busy = rentals[0]
    mover = next(e for e in employment if sum(x.person_id == e.person_id for x in employment) > 1)
    return {"counts": {"stores": len(stores), "people": len(employees) + len(customers),
                       "inventory": sum(map(len, inventory.values())), "employment": len(employment),
                       "current employees": len(current), "rentals": len(rentals), "active rentals": len(active)},
            "store_id": busy.store_id, "customer_id": busy.person_id, "employee_id": mover.person_id,
            "renter_id": active[0].person_id}
