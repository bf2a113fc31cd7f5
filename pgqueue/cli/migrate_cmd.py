"""``pgqueue migrate``: bring the schema to the version this pgqueue needs.

Safe to run from several hosts at once: the migration takes an advisory lock.
Without ``--dsn`` (or ``$PGQUEUE_DSN``) it migrates the embedded database that
``pgqueue serve`` uses (same data directory rules).
"""

from __future__ import annotations

import click

from pgqueue.cli.common import create_db_option, env_option
from pgqueue.cli.render import progress_bar
from pgqueue.db.reachability import check_database, shown_dsn
from pgqueue.db.schema import KNOWN_REVISIONS, SCHEMA_VERSION, current_revision, migrate
from pgqueue.embedded import EmbeddedPostgres, choose_data_dir

__all__ = ["migrate_command", "register"]


@click.command("migrate")
@env_option(
    "--dsn",
    default=None,
    help="PostgreSQL URL  [default: the embedded database of `pgqueue serve`]",
)
@click.option("--revision", default="head", help="target revision; older = downgrade")
@create_db_option
@click.option(
    "--data-dir",
    default=None,
    help="embedded PostgreSQL data directory (without --dsn)  [default: as serve]",
)
def migrate_command(dsn: str | None, revision: str, create_db: bool, data_dir: str | None) -> None:
    """Create or upgrade the pgqueue schema."""
    embedded: EmbeddedPostgres | None = None
    if not dsn:
        where, chosen_by = choose_data_dir(data_dir)
        click.echo(
            f"pgqueue: no --dsn given; using the embedded PostgreSQL in {where} "
            f"(chosen by {chosen_by})"
        )
        embedded = EmbeddedPostgres(where, cleanup="stop")
        dsn = embedded.start()
    else:
        if check_database(dsn, create=create_db):
            click.echo(f"pgqueue: created the database of {shown_dsn(dsn)}")
    try:
        _migrate(dsn, revision)
    finally:
        if embedded is not None:
            embedded.stop()
    target = SCHEMA_VERSION if revision == "head" else revision
    click.echo(f"pgqueue schema at revision {target}")


def _migrate(dsn: str, revision: str) -> None:
    """Upgrades go one revision at a time, with a progress bar; anything else at once."""
    current = current_revision(dsn)
    if revision != "head" or (current is not None and current not in KNOWN_REVISIONS):
        migrate(dsn, revision)
        return
    start = 0 if current is None else KNOWN_REVISIONS.index(current) + 1
    pending = KNOWN_REVISIONS[start:]
    if not pending:
        return
    with progress_bar() as bar:
        task = bar.add_task("migrate", total=len(pending))
        for step in pending:
            bar.update(task, description=f"migrate → {step}")
            migrate(dsn, step)
            bar.advance(task)
        bar.update(task, description="migrate")


def register(group: click.Group) -> None:
    group.add_command(migrate_command)
