"""Statements run on the driver's cursor of a SQLAlchemy connection, in its transaction.

SQLAlchemy spends 50–90 µs on each statement it executes (execution context, result metadata,
events) where the driver's cursor takes a few: the statements every write runs (its BEGIN, the
generations it checks, the ids it allocates, the locks it takes) go straight to the driver.
Errors come as SQLAlchemy's (`DBAPIError.instance`), as from `execute`."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import Connection
from sqlalchemy.exc import DBAPIError


@contextmanager
def cursor(conn: Connection, statement: str, parameters: tuple | dict | None = None) -> Iterator:
    """The driver's cursor, to run `statement` on (named in the error it raises as SQLAlchemy's)."""
    found = conn.connection.cursor()
    try:
        yield found
    except conn.dialect.loaded_dbapi.Error as error:
        raise DBAPIError.instance(statement, parameters, error, conn.dialect.loaded_dbapi.Error) from error
    finally:
        found.close()


def rows(conn: Connection, statement: str, parameters: tuple | dict = ()) -> list[tuple]:
    """The rows of one statement (none for a statement that returns none)."""
    with cursor(conn, statement, parameters) as found:
        found.execute(statement, parameters)
        return found.fetchall() if found.description is not None else []


def scalar(conn: Connection, statement: str, parameters: tuple | dict = ()):
    """The single value of a one-row, one-column statement."""
    (value,) = rows(conn, statement, parameters)[0]
    return value


def execute(conn: Connection, statement: str, parameters: tuple | dict = ()) -> int:
    """Run a statement that returns no rows; how many rows it changed."""
    with cursor(conn, statement, parameters) as found:
        found.execute(statement, parameters)
        return found.rowcount


def execute_many(conn: Connection, statement: str, parameters: list[tuple]) -> None:
    """Run a statement that returns no rows once for each of `parameters`."""
    if parameters:
        with cursor(conn, statement, parameters[0]) as found:
            found.executemany(statement, parameters)


def values_of(conn: Connection, queries: list[str]) -> list:
    """The single value of each one-value query, all read by one statement (one round trip)."""
    return list(rows(conn, "SELECT " + ", ".join(f"({query})" for query in queries))[0])
