"""Ancestors and descendants in one recursive query each, whatever the depth and width."""

from __future__ import annotations

from sqlalchemy import select

from fonds.storage.chunks import is_in, select_any


def ancestor_rows(conn, table, node_ids, columns=("level",)) -> dict[int, object]:
    """Every node above `node_ids` (and the nodes themselves): id -> row (id, parent_id, repo_id, *columns).

    One recursive query per batch of starting nodes (all of them on PostgreSQL), not one per level."""
    wanted = [table.c[c] for c in columns if c not in ("id", "parent_id", "repo_id")]

    def above(chunk):
        up = _walk(table, is_in(table.c.id, chunk), upwards=True)
        return select(table.c.id, table.c.parent_id, table.c.repo_id, *wanted).where(table.c.id.in_(select(up.c.id)))

    return {row.id: row for row in select_any(conn, above, sorted(set(node_ids)))}


def would_cycle(conn, table, moving: set[int], parent_id: int) -> bool:
    """Whether putting `moving` under `parent_id` would make a node its own ancestor: one of them
    is the parent or above it, or the chain above the parent already loops (a stored cycle)."""
    above = ancestor_rows(conn, table, [parent_id], columns=())
    if moving & above.keys():
        return True
    seen, current = set(), above.get(parent_id)
    while current is not None:
        if current.id in seen:
            return True
        seen.add(current.id)
        current = above.get(current.parent_id)
    return False


def descendant_ids(conn, table, root_id: int) -> list[int]:
    """Every node below `root_id` (not itself), in one recursive query."""
    down = _walk(table, table.c.parent_id == root_id, upwards=False)
    return list(conn.execute(select(down.c.id)).scalars())


def descendants_select(table, node_ids: list[int]):
    """A SELECT of the ids of every node below `node_ids`, for use inside other statements."""
    return select(_walk(table, table.c.parent_id.in_(node_ids), upwards=False).c.id)


def _walk(table, start_where, *, upwards: bool):
    """A recursive CTE (id, parent_id) of the rows matching `start_where` and all rows above
    (`upwards`) or below them. UNION, not UNION ALL: a cycle left by a bug cannot loop forever."""
    start = select(table.c.id, table.c.parent_id).where(start_where).cte("walk", recursive=True)
    step = table.alias("step")
    joined = step.c.id == start.c.parent_id if upwards else step.c.parent_id == start.c.id
    return start.union(select(step.c.id, step.c.parent_id).where(joined))
