"""Monithor's access patterns (``make demo MODEL=monithor``)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from ..runner import Pattern
from .models import Log, Membership, Monitor, Organization, Project

TITLE = "Monithor (Olaru): GSI overloading, many-to-many, LSIs, TTL"


def patterns(ids: dict[str, Any]) -> list[Pattern]:
    """The access patterns with the sample ids returned by ``load()``."""
    o, p, m, u, now = ids["org_id"], ids["project_id"], ids["monitor_id"], ids["user_id"], ids["now"]
    hour = now + dt.timedelta(hours=1)
    day = now - dt.timedelta(days=1)
    return [
        Pattern("get an organization", f"Organization.objects.get(org_id={o!r})",
                lambda: Organization.objects.get(org_id=o), lambda: Organization.objects.filter(org_id=o).explain()),
        Pattern("list the projects of an organization", f"Project.objects.of_organization({o!r})",
                lambda: list(Project.objects.of_organization(o)), lambda: Project.objects.of_organization(o).explain()),
        Pattern("list the monitors of a project", f"Monitor.objects.of_project({p!r})",
                lambda: list(Monitor.objects.of_project(p)), lambda: Monitor.objects.of_project(p).explain()),
        Pattern("list the monitors due to run in the next hour", "Monitor.objects.due_between(now, now + 1h)",
                lambda: list(Monitor.objects.due_between(now, hour)),
                lambda: Monitor.objects.due_between(now, hour).explain()),
        Pattern("list a monitor's logs of the last day", f"Log.objects.of_monitor_between({m!r}, now - 1d, now)",
                lambda: list(Log.objects.of_monitor_between(m, day, now)),
                lambda: Log.objects.of_monitor_between(m, day, now).explain()),
        Pattern("list the projects a user can access", f"Membership.objects.projects_of({u!r})",
                lambda: list(Membership.objects.projects_of(u)), lambda: Membership.objects.projects_of(u).explain()),
        Pattern("list the users of a project", f"Membership.objects.users_of({p!r})",
                lambda: list(Membership.objects.users_of(p)), lambda: Membership.objects.users_of(p).explain()),
    ]
