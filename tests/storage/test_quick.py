"""Quick reads (fonds.storage.quick): one statement beside SQLAlchemy, on the event loop where
it may run there."""

from __future__ import annotations

import asyncio

from fonds.storage.quick import KEEP, QuickReads


async def read_at_once(quick: QuickReads, n: int) -> list:
    return await asyncio.gather(*(quick.row_soon("SELECT ?, ?", (i, f"r{i}")) for i in range(n)))


def test_more_reads_at_once_than_connections_kept_all_answer(app):
    quick = app.state.fonds.quick
    expected = [(i, f"r{i}") for i in range(3 * KEEP)]
    assert asyncio.run(read_at_once(quick, 3 * KEEP)) == expected
    # Another event loop (as each request of a test client has) is served all the same.
    assert asyncio.run(read_at_once(quick, 3 * KEEP)) == expected
