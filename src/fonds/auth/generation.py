"""The auth generation: one counter row bumped by every change that can end a session or
change what a user may do, in that change's own transaction. Session caches compare it."""

from __future__ import annotations

from sqlalchemy import update

from fonds.storage import driver

ROW_ID = 1
# The current generation as a scalar subquery, for reads that fetch it in the same statement
# (and so the same snapshot) as their data.
SUBQUERY = f"SELECT value FROM auth_generation WHERE id = {ROW_ID}"


def bump(conn) -> None:
    """Call inside the transaction making the change: every worker's cache drops what it holds."""
    table = conn.info["fonds_tables"]["auth_generation"]
    conn.execute(update(table).where(table.c.id == ROW_ID).values(value=table.c.value + 1))


def current(conn) -> int:
    # Read on every write and every uncached session check: on the driver's cursor it costs a
    # fraction of a statement SQLAlchemy executes.
    return driver.scalar(conn, SUBQUERY)
