"""The fields of a node computed at read time and spliced into its stored JSON: its logical
`position` among its siblings and its `ancestors` (nearest first, the root last). One recursive
query finds the ancestors of a whole page of nodes, and one statement their positions: each the
sibling bands below its own plus a count within its band (fonds.storage.siblings), as the fast
lane reads it, so a batch of a thousand nodes being indexed is one statement, not one per list."""

from __future__ import annotations

import functools

from sqlalchemy import ARRAY, Integer, bindparam, select, text

from fonds.records.trees import hierarchy, positions
from fonds.storage import siblings
from fonds.storage.chunks import AllAtOnce, select_any


def read_extras(conn, registry, spec, rows, known_positions=None) -> list[dict]:
    """`known_positions`: the rows' logical positions when the caller has them (a whole sibling list)."""
    tables = conn.info["fonds_tables"]
    table, roots = tables[spec.node], tables[spec.root]
    with_levels = spec.views.ancestor_levels
    parent_ids = {row.parent_id for row in rows if row.parent_id is not None}
    above = hierarchy.ancestor_rows(conn, table, parent_ids, columns=("level",) if with_levels else ())
    root_ids = {getattr(row, spec.root_column) for row in rows} - {None}
    levels = {}
    if with_levels and root_ids:
        levels = dict(conn.execute(select(roots.c.id, roots.c.level).where(roots.c.id.in_(root_ids))).all())
    if known_positions is not None:
        logical = {row.id: position for row, position in zip(rows, known_positions)}
    else:
        logical = logical_positions(conn, spec, rows)
    node_path, root_path = registry[spec.node].path, registry[spec.root].path
    extras = []
    for row in rows:
        ancestors, seen = [], {row.id}
        current = above.get(row.parent_id)
        while current is not None and current.id not in seen:  # a stored cycle must not hang a read
            seen.add(current.id)
            level = current.level if with_levels else None
            ancestors.append(_ancestor(f"/repositories/{current.repo_id}/{node_path}/{current.id}", level))
            current = above.get(current.parent_id)
        root_id = getattr(row, spec.root_column)
        if root_id is not None:
            ancestors.append(_ancestor(f"/repositories/{row.repo_id}/{root_path}/{root_id}", levels.get(root_id)))
        extras.append({"position": logical.get(row.id), "ancestors": ancestors})
    return extras


def logical_positions(conn, spec, rows) -> dict[int, int]:
    """The logical positions of `rows` (id, parent_id, position and the root column); a node
    without a root (none is made so; a stored one may be) as `positions.logical_positions` counts."""
    root = spec.root_column
    placed = [row for row in rows if row.position is not None]
    rooted = [row.id for row in placed if getattr(row, root) is not None]
    statement = functools.partial(_positions_statement, spec.node, root)
    found = dict(select_any(conn, lambda ids: (statement(isinstance(ids, AllAtOnce)), {"ids": list(ids)}), rooted))
    rootless = [row for row in placed if getattr(row, root) is None]
    if rootless:
        found.update(positions.logical_positions(conn, conn.info["fonds_tables"][spec.node], root, rootless))
    return found


@functools.cache
def _positions_statement(node: str, root: str, as_array: bool):
    """`:ids` an IN list, or (`as_array`, PostgreSQL) one array of them all (`select_any`)."""
    where, ids = ("= ANY(:ids)", bindparam("ids", type_=ARRAY(Integer))) if as_array else ("IN :ids", bindparam("ids", expanding=True))
    return text(f'SELECT r.id, {_before_sql(node, root, "r")} FROM "{node}" r WHERE r.id {where}').bindparams(ids)


def _ancestor(uri: str, level: str | None) -> dict:
    return {"ref": uri, "level": level} if level else {"ref": uri}


# Deeper chains than this (only a stored cycle, in practice) are left to `read_extras`.
MAX_DEPTH = 10000


def read_sql(dialect: str, spec, node_path: str, root_path: str, row: str) -> dict[str, str]:
    """`position` and `ancestors` as `read_extras` gives them, as SQL correlated on the node's row
    (alias `row`; see `Hooks.read_sql`). What only `read_extras` answers exactly yields NULL, so
    the ordinary path answers: a node without a root, a chain above it that does not end at a
    top-level node (a stored cycle, a missing parent) and a level JSON would escape."""
    return {"position": _position_sql(spec, row), "ancestors": _ancestors_sql(dialect, spec, node_path, root_path, row)}


def _position_sql(spec, row: str) -> str:
    """The node's logical position as JSON text (`_before_sql`); `null` for a node without one."""
    node, root = spec.node, spec.root_column
    return (
        f"CASE WHEN {row}.position IS NULL THEN 'null' WHEN {row}.{root} IS NULL THEN NULL"
        f" ELSE CAST({_before_sql(node, root, row)} AS TEXT) END"
    )


def _before_sql(node: str, root: str, row: str) -> str:
    """The count of the siblings before the node (alias `row`, with a root): the sibling bands
    below its own and a count within its band, so the cost does not grow with the list. The
    siblings' parent is matched as `IS NULL` for a top-level node, so an index serves it, and a
    node's siblings below a parent by the parent alone (they are of its tree), so the index of
    sibling lists counts them without reading their rows."""
    band = f"({row}.position >> {siblings.SHIFT})"
    below = (
        f"(SELECT coalesce(sum(b.n), 0) FROM sibling_bucket b WHERE b.node_type = '{node}' AND b.root_id = {row}.{root}"
        f" AND b.parent_id = coalesce({row}.parent_id, 0) AND b.bucket < {band})"
    )

    def within(siblings_of_row: str) -> str:
        return (
            f'(SELECT count(*) FROM "{node}" s WHERE {siblings_of_row}'
            f" AND s.position >= ({band} << {siblings.SHIFT}) AND s.position < {row}.position)"
        )

    return (
        f"CASE WHEN {row}.parent_id IS NULL THEN {below} + {within(f's.{root} = {row}.{root} AND s.parent_id IS NULL')}"
        f" ELSE {below} + {within(f's.parent_id = {row}.parent_id')} END"
    )


def _level_sql(dialect: str, level: str) -> str:
    """`,"level":"…"` for a non-empty level, '' for none, NULL for one JSON would escape."""
    quoted = f"to_json({level})::text" if dialect == "postgresql" else f"json_quote({level})"
    return (
        f"""CASE WHEN {level} IS NULL OR {level} = '' THEN '' WHEN {quoted} = '"' || {level} || '"'"""
        f""" THEN ',"level":"' || {level} || '"' END"""
    )


def _ancestors_sql(dialect: str, spec, node_path: str, root_path: str, row: str) -> str:
    """The chain above the node by a recursive walk from its parent (nearest first, the root
    last), joined as JSON text; refs hold digits only."""
    node, root, levels = spec.node, spec.root_column, spec.views.ancestor_levels
    level = _level_sql(dialect, "level") if levels else "''"
    root_level = _level_sql(dialect, f'(SELECT level FROM "{spec.root}" WHERE id = {row}.{root})') if levels else "''"
    walked = "a.id, a.parent_id, a.repo_id" + (", a.level" if levels else ", CAST(NULL AS TEXT)")
    items = (
        f"""SELECT '{{"ref":"/repositories/' || repo_id || '/{node_path}/' || id || '"' || {level} || '}}' AS item, depth FROM up"""
        f""" UNION ALL SELECT '{{"ref":"/repositories/' || {row}.repo_id || '/{root_path}/' || {row}.{root} || '"' || {root_level} || '}}',"""
        f" {MAX_DEPTH + 1} WHERE {row}.{root} IS NOT NULL"
    )
    walk = (
        f"WITH RECURSIVE up(id, parent_id, repo_id, level, depth) AS ("
        f'SELECT {walked}, 1 FROM "{node}" a WHERE a.id = {row}.parent_id'
        f' UNION ALL SELECT {walked}, up.depth + 1 FROM up JOIN "{node}" a ON a.id = up.parent_id WHERE up.depth < {MAX_DEPTH})'
    )
    ends = f"({row}.parent_id IS NULL OR EXISTS (SELECT 1 FROM up WHERE parent_id IS NULL))"
    if dialect == "postgresql":
        joined = "string_agg(item, ',' ORDER BY depth)"
        source = f"({items}) i"
    else:
        # SQLite (before 3.44) has no ORDER BY in aggregates: see `events.linked_events_sql`.
        joined = "group_concat(item, ',')"
        source = f"(SELECT item FROM ({items}) ORDER BY depth LIMIT -1)"
    return f"{walk} SELECT CASE WHEN {ends} AND count(item) = count(*) THEN '[' || coalesce({joined}, '') || ']' END FROM {source}"
