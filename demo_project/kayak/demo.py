"""The kayak rental's eight access patterns (``make demo MODEL=kayak``)."""

from __future__ import annotations

from typing import Any

from ..runner import Pattern
from .models import EmploymentRelationship, RentalRelationship, StoreActiveRental, StoreEmployee, StoreInventoryItem
from .models import StoreMetadata as Store

TITLE = "Kayak rental (Franklin): 8 access patterns"


def patterns(ids: dict[str, Any]) -> list[Pattern]:
    """The access patterns with the sample ids returned by ``load()``."""
    s, c, e, r = ids["store_id"], ids["customer_id"], ids["employee_id"], ids["renter_id"]
    return [
        Pattern("get the location of all rental stores", "StoreMetadata.objects.all_stores()",
                lambda: list(Store.objects.all_stores()), lambda: Store.objects.all_stores().explain()),
        Pattern("get the inventory of a store", f"StoreInventoryItem.objects.of_store({s!r})",
                lambda: list(StoreInventoryItem.objects.of_store(s)),
                lambda: StoreInventoryItem.objects.of_store(s).explain()),
        Pattern("get the current employees of a store", f"StoreEmployee.objects.current_at({s!r})",
                lambda: list(StoreEmployee.objects.current_at(s)),
                lambda: StoreEmployee.objects.current_at(s).explain()),
        Pattern("get all employees who have worked at a store",
                f"EmploymentRelationship.objects.ever_at_store({s!r})",
                lambda: list(EmploymentRelationship.objects.ever_at_store(s)),
                lambda: EmploymentRelationship.objects.ever_at_store(s).explain()),
        Pattern("get all stores an employee has worked at", f"EmploymentRelationship.objects.stores_of({e!r})",
                lambda: list(EmploymentRelationship.objects.stores_of(e)),
                lambda: EmploymentRelationship.objects.stores_of(e).explain()),
        Pattern("get all rentals a customer has out", f"StoreActiveRental.objects.out_by({r!r})",
                lambda: list(StoreActiveRental.objects.out_by(r)),
                lambda: StoreActiveRental.objects.out_by(r).explain()),
        Pattern("get customer rental history for a location",
                f"RentalRelationship.objects.history_at({c!r}, {s!r})",
                lambda: list(RentalRelationship.objects.history_at(c, s)),
                lambda: RentalRelationship.objects.history_at(c, s).explain()),
        Pattern("get customer rental history for all locations", f"RentalRelationship.objects.history({c!r})",
                lambda: list(RentalRelationship.objects.history(c)),
                lambda: RentalRelationship.objects.history(c).explain()),
    ]
