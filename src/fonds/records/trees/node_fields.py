"""The fields of a node computed at read time and spliced into its stored JSON: its logical
`position` among its siblings and its `ancestors` (nearest first, the root last). One recursive
query finds the ancestors of a whole page of nodes; positions cost one range count per node."""

from __future__ import annotations

from sqlalchemy import select

from fonds.records.trees import hierarchy, positions


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
        logical = positions.logical_positions(conn, table, spec.root_column, rows)
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


def _ancestor(uri: str, level: str | None) -> dict:
    return {"ref": uri, "level": level} if level else {"ref": uri}
