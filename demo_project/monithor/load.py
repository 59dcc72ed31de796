"""Organizations, projects, monitors with schedules, a week of logs with TTL, users and memberships."""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

from ulid import ULID

from .models import Log, Membership, Monitor, Organization, Project, User

NOW = dt.datetime(2024, 6, 1, 12, 0, tzinfo=dt.timezone.utc)


def load(seed: int = 3) -> dict[str, Any]:
    """Create the data; return counts and sample ids/times for the demo."""
    rng = random.Random(seed)
    orgs = [Organization(org_id=f"o{i}", name=f"Org {i}") for i in range(5)]
    projects = [Project(project_id=f"p{i}", org_id=f"o{i % 5}", name=f"Project {i}") for i in range(20)]
    monitors = [Monitor(monitor_id=f"m{i}", project_id=f"p{i % 20}", url=f"https://example.com/{i}",
                        nextrun_at=NOW + dt.timedelta(minutes=rng.randint(0, 120)),
                        created_at=NOW - dt.timedelta(days=30)) for i in range(100)]
    logs = []
    for m in monitors[:10]:
        for k in range(7 * 24):
            at = NOW - dt.timedelta(hours=k)
            logs.append(Log(monitor_id=m.monitor_id, log_id=str(ULID.from_datetime(at)), status=200,
                            latency_ms=rng.randint(20, 900), created_at=at, expires_at=at + dt.timedelta(days=30)))
    users = [User(user_id=f"u{i}", email=f"u{i}@example.com") for i in range(30)]
    memberships = [Membership(user_id=f"u{i}", project_id=f"p{j}", access_level=rng.choice(["read", "admin"]))
                   for i in range(30) for j in rng.sample(range(20), 3)]
    for model, objs in ((Organization, orgs), (Project, projects), (Monitor, monitors), (Log, logs),
                        (User, users), (Membership, memberships)):
        model.objects.bulk_create(objs)
    return {"counts": {"organizations": len(orgs), "projects": len(projects), "monitors": len(monitors),
                       "logs": len(logs), "users": len(users), "memberships": len(memberships)},
            "org_id": "o1", "project_id": "p3", "monitor_id": "m3", "user_id": memberships[0].user_id,
            "now": NOW}
