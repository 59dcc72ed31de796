"""Kayak rental: stores, people, inventory, employment and rental edges in one table.

Six generic GSIs named PK1/SK1 ... PK6/SK6 (as in the article); every partition key is
version-prefixed; ids are ULIDs. Employment and rental relationships are materialized-graph
edges written twice, flipped (GSI2/GSI3, and GSI5/GSI6 for rental inventory).
"""

from __future__ import annotations

from dynorm import Entity, Index, QuerySet, Table, fields


class Kayak(Table):
    """The single table of the kayak rental company."""

    class Meta:
        table_name = "kayak"
        gsis = {f"GSI{i}": (f"PK{i}", f"SK{i}") for i in range(1, 7)}


class StoreQuerySet(QuerySet["StoreMetadata"]):
    def all_stores(self) -> StoreQuerySet:
        """get the location of all rental stores"""
        return self.using("all_stores")  # type: ignore[return-value]


class StoreMetadata(Entity):
    store_id = fields.ULID(auto=True)
    name = fields.String()
    address = fields.String()
    state = fields.String()

    objects = StoreQuerySet.as_manager()

    class Meta:
        table = Kayak
        entity_type = "storeMetadata"
        pk = "{version}#store#storeULID#{store_id}"
        sk = "metadata"
        indexes = {"all_stores": Index("GSI1", pk="{version}#stores", sk="storeULID#{store_id}",
                                       comment="GSI to grab all the stores at once.")}


class InventoryQuerySet(QuerySet["StoreInventoryItem"]):
    def of_store(self, store_id: str) -> InventoryQuerySet:
        """get the inventory of a store"""
        return self.filter(store_id=store_id)  # type: ignore[return-value]


class StoreInventoryItem(Entity):
    store_id = fields.ULID()
    inventory_id = fields.ULID(auto=True)
    kind = fields.String(default="kayak")
    model = fields.String()

    objects = InventoryQuerySet.as_manager()

    class Meta:
        table = Kayak
        entity_type = "storeInventoryItem"
        pk = "{version}#store#storeULID#{store_id}"
        sk = "inventory#metadata#inventoryULID#{inventory_id}"


class StoreEmployeeQuerySet(QuerySet["StoreEmployee"]):
    def current_at(self, store_id: str) -> StoreEmployeeQuerySet:
        """get the current employees of a store"""
        return self.filter(store_id=store_id)  # type: ignore[return-value]


class StoreEmployee(Entity):
    store_id = fields.ULID()
    person_id = fields.ULID()
    name = fields.String()
    position = fields.String(default="guide")

    objects = StoreEmployeeQuerySet.as_manager()

    class Meta:
        table = Kayak
        entity_type = "storeEmployee"
        pk = "{version}#store#storeULID#{store_id}"
        sk = "employee#metadata#personULID#{person_id}"


class ActiveRentalQuerySet(QuerySet["StoreActiveRental"]):
    def out_by(self, person_id: str) -> ActiveRentalQuerySet:
        """get all rentals a customer has out"""
        return self.filter(person_id=person_id)  # type: ignore[return-value]


class StoreActiveRental(Entity):
    store_id = fields.ULID()
    person_id = fields.ULID()
    inventory_id = fields.ULID()
    rental_id = fields.ULID()
    due = fields.DateTime(null=True)

    objects = ActiveRentalQuerySet.as_manager()

    class Meta:
        table = Kayak
        entity_type = "storeActiveRental"
        pk = "{version}#store#storeULID#{store_id}"
        sk = "activeRentals#personULID#{person_id}#inventoryULID#{inventory_id}"
        indexes = {"by_person": Index("GSI4", pk="{version}#activeRentals#personULID#{person_id}",
                                      sk="inventoryULID#{inventory_id}",
                                      comment="GSI for looking up all rentals across all locations a person has out.")}


class PersonMetadata(Entity):
    person_id = fields.ULID(auto=True)
    name = fields.String()
    email = fields.String(null=True)

    class Meta:
        table = Kayak
        entity_type = "personMetadata"
        pk = "{version}#person#personULID#{person_id}"
        sk = "metadata"


class EmploymentQuerySet(QuerySet["EmploymentRelationship"]):
    def ever_at_store(self, store_id: str) -> EmploymentQuerySet:
        """get all employees who have worked at a store"""
        return self.filter(store_id=store_id).using("by_store")  # type: ignore[return-value]

    def stores_of(self, person_id: str) -> EmploymentQuerySet:
        """get all stores an employee has worked at"""
        return self.filter(person_id=person_id).using("by_person")  # type: ignore[return-value]


class EmploymentRelationship(Entity):
    employment_id = fields.ULID(auto=True)
    store_id = fields.ULID()       # x: the company location
    person_id = fields.ULID()      # y: the person
    person_name = fields.String(null=True)
    position = fields.String(default="guide")

    objects = EmploymentQuerySet.as_manager()

    class Meta:
        table = Kayak
        entity_type = "employmentRelationship"
        pk = "{version}#employment#employmentULID#{employment_id}"
        sk = "metadata"
        indexes = {
            "by_store": Index("GSI2", pk="{version}#employment#{store_id}", sk="{version}#employment#{person_id}",
                              comment="Can query by xULID, and get all employment for x. Company location is x, "
                                      "person is y"),
            "by_person": Index("GSI3", pk="{version}#employment#{person_id}", sk="{version}#employment#{store_id}",
                               comment="Can query by yULID, and get all employment for y, Company location is x, "
                                       "person is y"),
        }


class RentalQuerySet(QuerySet["RentalRelationship"]):
    def history_at(self, person_id: str, store_id: str) -> RentalQuerySet:
        """get customer rental history for a location"""
        return self.filter(person_id=person_id, store_id=store_id).using("person_location")  # type: ignore

    def history(self, person_id: str) -> RentalQuerySet:
        """get customer rental history for all locations"""
        return self.filter(person_id=person_id).using("person_location")  # type: ignore[return-value]


class RentalRelationship(Entity):
    rental_id = fields.ULID(auto=True)
    store_id = fields.ULID()       # x for GSI2/GSI3: the company location
    person_id = fields.ULID()      # y: the person
    inventory_id = fields.ULID()   # x for GSI5/GSI6: the kayak
    returned = fields.Boolean(default=False)

    objects = RentalQuerySet.as_manager()

    class Meta:
        table = Kayak
        entity_type = "rentalRelationship"
        pk = "{version}#rental#rentalULID#{rental_id}"
        sk = "metadata"
        indexes = {
            "location_person": Index("GSI2", pk="{version}#rentalLocationPerson#{store_id}",
                                     sk="{version}#rentalPersonLocation#{person_id}",
                                     comment="Can query by xULID, and get all rental for x. Company location is x, "
                                             "person is y"),
            "person_location": Index("GSI3", pk="{version}#rentalPersonLocation#{person_id}",
                                     sk="{version}#rentalLocationPerson#{store_id}",
                                     comment="Can query by yULID, and get all rental for y, Company location is x, "
                                             "person is y"),
            "inventory_person": Index("GSI5", pk="{version}#rentalInventoryPerson#{inventory_id}",
                                      sk="{version}#rentalPersonInventory#{person_id}",
                                      comment="Can query by xULID, and get all rental for x. Inventory is x, "
                                              "person is y"),
            "person_inventory": Index("GSI6", pk="{version}#rentalPersonInventory#{person_id}",
                                      sk="{version}#rentalInventoryPerson#{inventory_id}",
                                      comment="Can query by yULID, and get all rental for y, Inventory is x, "
                                              "person is y"),
        }
