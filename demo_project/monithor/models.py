"""Monithor: GSI overloading, a user<->project many-to-many, LSIs on time attributes, TTL on logs.

Table: PK/SK, one GSI named ``GSI`` whose partition attribute is ``GSI`` and whose sort key is
the table's ``SK`` (as in the article), LSIs ``pk_created`` (``created_at``) and ``pk_run``
(``nextrun_at``), and TTL on ``expires_at``.
"""

from __future__ import annotations

import datetime as dt

from dynorm import Entity, Index, QuerySet, Table, fields


class Monithor(Table):
    class Meta:
        table_name = "monithor"
        gsis = {"GSI": ("GSI", "SK")}
        lsis = {"pk_created": "created_at", "pk_run": "nextrun_at"}
        ttl_attribute = "expires_at"


class Organization(Entity):
    org_id = fields.String()
    name = fields.String()

    class Meta:
        table = Monithor
        entity_type = "organization"
        pk = "org#{org_id}"
        sk = "org#{org_id}"


class ProjectQuerySet(QuerySet["Project"]):
    def of_organization(self, org_id: str) -> ProjectQuerySet:
        """list the projects of an organization (GSI = org#<id>, SK begins_with project#)"""
        return self.filter(org_id=org_id)  # type: ignore[return-value]


class Project(Entity):
    project_id = fields.String()
    org_id = fields.String()
    name = fields.String()

    objects = ProjectQuerySet.as_manager()

    class Meta:
        table = Monithor
        entity_type = "project"
        pk = "project#{project_id}"
        sk = "project#{project_id}"
        indexes = {"by_org": Index("GSI", pk="org#{org_id}", comment="projects of an organization")}


class MonitorQuerySet(QuerySet["Monitor"]):
    def of_project(self, project_id: str) -> MonitorQuerySet:
        """list the monitors of a project (GSI = project#<id>, SK begins_with monitor#)"""
        return self.filter(project_id=project_id)  # type: ignore[return-value]

    def due_between(self, start: dt.datetime, end: dt.datetime) -> MonitorQuerySet:
        """list the monitors due to run in a time window (LSI pk_run on nextrun_at)"""
        return self.filter(nextrun_at__between=(start, end))  # type: ignore[return-value]


class Monitor(Entity):
    monitor_id = fields.String()
    project_id = fields.String()
    url = fields.String()
    interval_s = fields.Integer(default=300)
    nextrun_at = fields.DateTime()
    created_at = fields.DateTime(auto_now_add=True)

    objects = MonitorQuerySet.as_manager()

    class Meta:
        table = Monithor
        entity_type = "monitor"
        # one partition for the scheduler's "due to run" query (shard it at scale)
        pk = "monitors"
        sk = "monitor#{monitor_id}"
        indexes = {
            "by_project": Index("GSI", pk="project#{project_id}", comment="monitors of a project"),
            "due": Index("pk_run", comment="monitors by next run time"),
        }


class LogQuerySet(QuerySet["Log"]):
    def of_monitor_between(self, monitor_id: str, start: dt.datetime, end: dt.datetime) -> LogQuerySet:
        """list a monitor's logs created in a time window (LSI pk_created on created_at)"""
        return self.filter(monitor_id=monitor_id, created_at__between=(start, end))  # type: ignore[return-value]


class Log(Entity):
    monitor_id = fields.String()
    log_id = fields.ULID(auto=True)
    status = fields.Integer()
    latency_ms = fields.Integer()
    created_at = fields.DateTime(auto_now_add=True)
    expires_at = fields.TTL(null=True)

    objects = LogQuerySet.as_manager()

    class Meta:
        table = Monithor
        entity_type = "log"
        pk = "monitor#{monitor_id}"
        sk = "log#{log_id}"
        indexes = {"created": Index("pk_created", comment="logs by creation time")}


class User(Entity):
    user_id = fields.String()
    email = fields.String()

    class Meta:
        table = Monithor
        entity_type = "user"
        pk = "user#{user_id}"
        sk = "user#{user_id}"


class MembershipQuerySet(QuerySet["Membership"]):
    def projects_of(self, user_id: str) -> MembershipQuerySet:
        """list the projects a user can access (PK = user#<id>, SK begins_with user#<id>|project#)"""
        return self.filter(user_id=user_id)  # type: ignore[return-value]

    def users_of(self, project_id: str) -> MembershipQuerySet:
        """list the users who can access a project (GSI = project#<id>, SK begins_with user#)"""
        return self.filter(project_id=project_id)  # type: ignore[return-value]


class Membership(Entity):
    user_id = fields.String()
    project_id = fields.String()
    access_level = fields.String(default="read")

    objects = MembershipQuerySet.as_manager()

    class Meta:
        table = Monithor
        entity_type = "membership"
        pk = "user#{user_id}"
        sk = "user#{user_id}|project#{project_id}"
        indexes = {"by_project": Index("GSI", pk="project#{project_id}", comment="users of a project")}
