"""Applying the Alembic migrations (at start, and by `fonds db upgrade`)."""

from __future__ import annotations

from functools import cache
from importlib import resources

from alembic import command
from alembic.config import Config
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory

from fonds.storage.db import Database


def alembic_config() -> Config:
    config = Config()
    config.set_main_option("script_location", str(resources.files("fonds.storage") / "migrations"))
    return config


@cache
def _script_heads() -> frozenset[str]:
    """The head revision(s) of the migration scripts shipped with this code (read once per process)."""
    return frozenset(ScriptDirectory.from_config(alembic_config()).get_heads())


def is_at_head(db: Database) -> bool:
    with db.engine.connect() as conn:
        return frozenset(MigrationContext.configure(conn).get_current_heads()) == _script_heads()


def upgrade(db: Database) -> None:
    # A database already at head (every start but the first) costs one query, not a load of
    # every migration script and env.py.
    if is_at_head(db):
        return
    config = alembic_config()
    with db.engine.connect().execution_options(fonds_write=True) as conn:
        if db.kind == "postgresql":
            with conn.begin():
                # Several workers may start at once: one migrates, the others wait and find it done.
                conn.exec_driver_sql("SELECT pg_advisory_xact_lock(727274)")
                config.attributes["connection"] = conn
                command.upgrade(config, "head")
        else:
            with conn.begin():
                config.attributes["connection"] = conn
                command.upgrade(config, "head")


def current_revision(db: Database) -> str | None:
    with db.engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def head_revision() -> str | None:
    return ScriptDirectory.from_config(alembic_config()).get_current_head()
