"""Confirmation before a command creates, rewrites or deletes tables or items on a real endpoint.

Shared by the commands that change things (``dynorm migrate`` and the table creation it does):
against DynamoDB Local (a loopback endpoint) they run at once; against anything else they first
print endpoint, account, region and tables and ask. ``--yes`` skips the question; without a
terminal to ask on (CI) the command refuses unless ``--yes`` was given.
"""

from __future__ import annotations

import sys
from typing import Any, Sequence

import click

__all__ = ["confirm_changes", "yes_option", "account_of"]

yes_option = click.option("--yes", "-y", "yes", is_flag=True,
                          help="Do not ask before changing tables on a non-local endpoint (needed without a terminal).")


def account_of(settings: Any) -> str:
    """Return the AWS account id the credentials belong to (STS GetCallerIdentity), or why not.

    Asked only for AWS endpoints (no endpoint, or an ``amazonaws.com`` host): an emulator such as
    LocalStack is described as ``n/a (custom endpoint)``. One attempt, 3 s timeouts.
    """
    from urllib.parse import urlparse

    host = (urlparse(settings.endpoint).hostname or "") if settings.endpoint else "amazonaws.com"
    if not host.endswith("amazonaws.com"):
        return "n/a (custom endpoint)"
    import botocore.session
    from botocore.config import Config

    try:
        sts = botocore.session.get_session().create_client(
            "sts", region_name=settings.region,
            config=Config(connect_timeout=3, read_timeout=3, retries={"total_max_attempts": 1}))
        return str(sts.get_caller_identity()["Account"])
    except Exception as exc:  # noqa: BLE001 - any failure is shown, the user decides
        return f"unknown ({type(exc).__name__})"


def _interactive() -> bool:
    return sys.stdin.isatty()


def confirm_changes(settings: Any, action: str, tables: Sequence[str], yes: bool) -> None:
    """Ask before ``action`` changes ``tables`` on a non-loopback endpoint (no-op on DynamoDB Local).

    Args:
        settings: the command's :class:`dynorm.conf.Settings`.
        action: what is about to happen (``"apply 2 migration(s)"``).
        tables: the physical table names concerned.
        yes: ``--yes`` was given: do not ask.

    Raises:
        click.UsageError: stdin is not a terminal and ``--yes`` was not given (nothing was sent).
        click.ClickException: the user declined (nothing was sent).
    """
    if settings.is_local or yes:
        return
    where = settings.endpoint or "AWS"
    listed = ", ".join(tables) if tables else "(none)"
    if not _interactive():
        raise click.UsageError(
            f"refusing to {action} at {where} (region {settings.region}; tables {listed}) without confirmation: "
            "stdin is not a terminal; pass --yes to go ahead (nothing was changed).")
    click.echo(f"About to {action} on a non-local endpoint:", err=True)
    click.echo(f"  endpoint: {where}", err=True)
    click.echo(f"  account:  {account_of(settings)}", err=True)
    click.echo(f"  region:   {settings.region}", err=True)
    click.echo(f"  tables:   {listed}", err=True)
    if not click.confirm("Go ahead?", default=False, err=True):
        raise click.ClickException("aborted; nothing was changed.")
