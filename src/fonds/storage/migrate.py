"""Applying the Alembic migrations (at start, and by `fonds db upgrade`).

Alembic (with Mako and Pygments, which it imports) is loaded only when a migration runs: a
server starting on a database already at head (every start but the first) reads the heads of
the shipped scripts from their source and the database's revisions with one query, and keeps
the ~11 MB those modules would hold for the life of the process."""

from __future__ import annotations

import ast
from functools import cache
from importlib import resources

from sqlalchemy import inspect, text

from fonds.storage.db import Database

VERSION_TABLE = "alembic_version"


def alembic_config():
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(_scripts()))
    return config


def _scripts():
    return resources.files("fonds.storage") / "migrations"


@cache
def script_heads() -> frozenset[str]:
    """The head revision(s) of the migration scripts shipped with this code: the revisions no
    other script names as its `down_revision` (read once per process)."""
    revisions, parents = set(), set()
    for script in (_scripts() / "versions").iterdir():
        if script.name.endswith(".py"):
            found = _assignments(script.read_text(), ("revision", "down_revision"))
            revisions.add(found["revision"])
            down = found.get("down_revision")
            parents.update(down if isinstance(down, tuple | list) else [down] if down else [])
    return frozenset(revisions - parents)


def _assignments(source: str, names: tuple[str, ...]) -> dict:
    """The literal values a module assigns to `names` at its top level (`x = 1` or `x: str = "1"`)."""
    found = {}
    for node in ast.parse(source).body:
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else getattr(node, "target", None)
        if isinstance(target, ast.Name) and target.id in names and node.value is not None:
            found[target.id] = ast.literal_eval(node.value)
    return found


def database_heads(db: Database) -> frozenset[str]:
    with db.engine.connect() as conn:
        if not inspect(conn).has_table(VERSION_TABLE):
            return frozenset()
        return frozenset(conn.execute(text(f"SELECT version_num FROM {VERSION_TABLE}")).scalars())


def is_at_head(db: Database) -> bool:
    return database_heads(db) == script_heads()


def upgrade(db: Database) -> None:
    # A database already at head (every start but the first) costs one query, not a load of
    # every migration script and env.py.
    if is_at_head(db):
        return
    from alembic import command

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
    heads = database_heads(db)
    return next(iter(heads)) if len(heads) == 1 else None


def head_revision() -> str | None:
    heads = script_heads()
    return next(iter(heads)) if len(heads) == 1 else None
