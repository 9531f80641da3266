"""Sibling order: the only module that knows how positions are stored.

Clients see logical positions: 0..n-1 among the siblings. The `position` column holds physical
positions with gaps (STEP apart when appended), so that placing a node between two siblings
takes the midpoint and writes one row. Only when two neighbours have no integer left between
them are the later siblings shifted, in one statement. Moving to the front takes the first
sibling's position minus STEP, and appending the last one's plus STEP: both always O(1).

Every change to a sibling list happens after `lock_siblings`, which locks the row that owns the
list (the parent node, or the root for top-level nodes): on PostgreSQL two transactions
appending to or moving within one list queue there instead of both reading the same maximum.
On SQLite the process write lock and BEGIN IMMEDIATE serialise every write already.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import and_, func, select, update

from fonds.storage import records as store
from fonds.storage.chunks import is_in, select_any
from fonds.storage.db import writers_take_turns

STEP = 1024
# Far from the 32-bit limits of the column: past these the list is renumbered first.
LIMIT = 2**30


@dataclass(frozen=True)
class Siblings:
    """One sibling list: the nodes of `root_id` under `parent_id` (None: the top level)."""

    table: object
    root_column: str
    root_id: int | None
    parent_id: int | None

    @property
    def where(self):
        """The list's nodes: below a node, by their parent alone (a node's children are of its
        tree), which the index of sibling lists answers without reading their rows; at the top
        level, by their root."""
        table = self.table
        if self.parent_id is not None:
            return table.c.parent_id == self.parent_id
        root = table.c[self.root_column]
        return and_(root.is_(None) if self.root_id is None else root == self.root_id, table.c.parent_id.is_(None))

    def sql(self, conn) -> tuple[str, tuple]:
        """`where` as SQL text and its parameters, for statements run through the driver (built
        with SQLAlchemy, the tree views' cost more than SQLite spends answering them)."""
        if self.parent_id is not None:
            return f"parent_id = {store.placeholder(conn, self.table, 'parent_id')}", (self.parent_id,)
        root = self.root_column
        if self.root_id is None:
            return f"{root} IS NULL AND parent_id IS NULL", ()
        return f"{root} = {store.placeholder(conn, self.table, root)} AND parent_id IS NULL", (self.root_id,)


def lock_siblings(conn, tables, spec, lists: list[Siblings]) -> None:
    """Lock the owners of these sibling lists, always in the same order (no deadlocks): by type,
    then by id. On SQLite nothing is read: the write lock serialises every write already."""
    owners = set()
    for siblings in lists:
        if siblings.parent_id is not None:
            owners.add((spec.node, siblings.parent_id))
        elif siblings.root_id is not None:
            owners.add((spec.root, siblings.root_id))
    # Locks last until the transaction ends: a batch locks each owner once.
    held = conn.info.setdefault("fonds_locked", set())
    new = sorted(owners - held)
    held.update(new)
    if writers_take_turns(conn):
        return
    for type_name in sorted({type_name for type_name, _ in new}):
        _lock_rows(conn, tables[type_name], [record_id for owner_type, record_id in new if owner_type == type_name])


def _lock_rows(conn, table, ids: list[int]) -> None:
    """Lock these rows of `table` in id order (`ids` sorted)."""
    select_any(conn, lambda chunk: select(table.c.id).where(is_in(table.c.id, chunk)).order_by(table.c.id).with_for_update(), ids)


def ends_under_nodes(conn, table, root_column: str, parents: list[int]) -> list[tuple[int, int | None, int | None]]:
    """(parent id, its root's id, the last physical position of its children or None) of each
    of `parents`: one indexed lookup per list, as `append_slot`'s (for a parent in no tree, the
    position is None: its list is not found this way)."""
    child = table.alias("child")
    end = select(func.max(child.c.position)).where(child.c[root_column] == table.c[root_column], child.c.parent_id == table.c.id)
    query = select(table.c.id, table.c[root_column], end.scalar_subquery())
    return [tuple(row) for row in select_any(conn, lambda chunk: query.where(is_in(table.c.id, chunk)), parents)]


def ends_under_roots(conn, table, root_table, root_column: str, roots: list[int]) -> list[tuple[int, int | None]]:
    """(root id, the last physical position of its top-level nodes or None) of each of `roots`."""
    end = select(func.max(table.c.position)).where(table.c[root_column] == root_table.c.id, table.c.parent_id.is_(None))
    query = select(root_table.c.id, end.scalar_subquery())
    return [tuple(row) for row in select_any(conn, lambda chunk: query.where(is_in(root_table.c.id, chunk)), roots)]


def append_slot(conn, siblings: Siblings) -> int:
    last = conn.execute(select(func.max(siblings.table.c.position)).where(siblings.where)).scalar()
    if last is None:
        return STEP
    if last + STEP > LIMIT:
        renumber(conn, siblings)
        return append_slot(conn, siblings)
    return last + STEP


# The physical position "before" an empty list's first slot: `following(BEFORE_FIRST)` is STEP,
# where append_slot puts the first node of an empty list.
BEFORE_FIRST = 0


def following(last: int) -> int | None:
    """The slot appended after physical position `last`, or None when the list must be renumbered first."""
    return last + STEP if last + STEP <= LIMIT else None


def _neighbours(conn, siblings: Siblings, logical: int, exclude: int | None) -> tuple[int | None, int | None]:
    """Physical positions left and right of logical index `logical` (clamped), ignoring `exclude`."""
    table = siblings.table
    query = select(table.c.position).where(siblings.where).order_by(table.c.position, table.c.id)
    if exclude is not None:
        query = query.where(table.c.id != exclude)
    if logical <= 0:
        first = conn.execute(query.limit(1)).scalar()
        return None, first
    found = conn.execute(query.offset(logical - 1).limit(2)).scalars().all()
    if not found:
        # Past the end: clamp to the last place.
        return conn.execute(select(func.max(table.c.position)).where(*_but(siblings, exclude))).scalar(), None
    return found[0], found[1] if len(found) > 1 else None


def _but(siblings: Siblings, exclude: int | None) -> list:
    where = [siblings.where]
    if exclude is not None:
        where.append(siblings.table.c.id != exclude)
    return where


def slot_at(conn, siblings: Siblings, logical: int, *, exclude: int | None = None) -> int:
    """The physical position that puts a node at logical index `logical` (clamped to the end).
    `exclude` is the node being moved within this list: it does not count as a sibling."""
    return slots_at(conn, siblings, logical, 1, exclude=exclude)[0]


def slots_at(conn, siblings: Siblings, logical: int, count: int, *, exclude: int | None = None) -> list[int]:
    """`count` increasing physical positions that put nodes at logical indexes logical.. (clamped)."""
    left, right = _neighbours(conn, siblings, logical, exclude)
    return _fit(conn, siblings, left, right, count)


def slots_between(conn, siblings: Siblings, left: int | None, right: int | None, count: int) -> list[int]:
    """`count` positions between two known physical neighbours (None: an end of the list)."""
    return _fit(conn, siblings, left, right, count)


def _fit(conn, siblings: Siblings, left: int | None, right: int | None, count: int) -> list[int]:
    if right is None:
        start = STEP if left is None else left + STEP
        if start + count * STEP > LIMIT:
            return _after_renumber(conn, siblings, left, right, count)
        return [start + i * STEP for i in range(count)]
    if left is None:
        if right - count * STEP < -LIMIT:
            return _after_renumber(conn, siblings, left, right, count)
        return [right - (count - i) * STEP for i in range(count)]
    if right - left <= count:
        # No room: open a gap by shifting every later sibling (the only O(n) case).
        shift = (count + 1) * STEP
        if right + shift > LIMIT:
            return _after_renumber(conn, siblings, left, right, count)
        table = siblings.table
        conn.execute(update(table).where(siblings.where, table.c.position >= right).values(position=table.c.position + shift))
        right += shift
    gap = (right - left) // (count + 1)
    return [left + (i + 1) * gap for i in range(count)]


def _after_renumber(conn, siblings: Siblings, left: int | None, right: int | None, count: int) -> list[int]:
    """Positions crept towards the column's limits: spread the list evenly again, then fit."""
    table = siblings.table
    index = {}
    for old in (left, right):
        if old is not None:
            index[old] = conn.execute(select(func.count()).where(siblings.where, table.c.position < old)).scalar_one()
    renumber(conn, siblings)
    new_left = None if left is None else (index[left] + 1) * STEP
    new_right = None if right is None else (index[right] + 1) * STEP
    return _fit(conn, siblings, new_left, new_right, count)


def renumber(conn, siblings: Siblings) -> None:
    """Give the list positions STEP, 2*STEP, … in its current order, in one statement."""
    table = siblings.table
    ranked = (
        select(table.c.id, (func.row_number().over(order_by=(table.c.position, table.c.id)) * STEP).label("slot"))
        .where(siblings.where)
        .subquery()
    )
    conn.execute(update(table).where(table.c.id == ranked.c.id).values(position=ranked.c.slot))


def logical_positions(conn, table, root_column: str, rows, where=()) -> dict[int, int]:
    """Logical positions of `rows` (with id, parent_id, position and the root column).

    A lone row of its sibling list costs one range count. Several rows of one list (a batch
    being indexed, a page of neighbours) cost two queries: a count of the siblings before the
    first of them and the ordered ids from the first to the last, never one query per row."""
    groups: dict[tuple, list] = {}
    for row in rows:
        if row.position is not None:
            groups.setdefault((getattr(row, root_column), row.parent_id), []).append(row)
    result: dict[int, int] = {}
    for (root_id, parent_id), members in groups.items():
        siblings = Siblings(table, root_column, root_id, parent_id)
        first, last = min(r.position for r in members), max(r.position for r in members)
        before = conn.execute(select(func.count()).where(siblings.where, table.c.position < first, *where)).scalar_one()
        if len(members) == 1:
            result[members[0].id] = before
            continue
        span = select(table.c.id).where(siblings.where, table.c.position.between(first, last), *where)
        wanted = {row.id for row in members}
        for offset, (row_id,) in enumerate(conn.execute(span.order_by(table.c.position, table.c.id))):
            if row_id in wanted:
                result[row_id] = before + offset
    return result


def ordered_ids(conn, siblings: Siblings, *, limit: int | None = None, offset: int = 0, where=()) -> list:
    """Rows (id, position) of the list in order, a page of it if asked."""
    table = siblings.table
    query = select(table.c.id, table.c.position).where(siblings.where, *where).order_by(table.c.position, table.c.id)
    if limit is not None:
        query = query.limit(limit).offset(offset)
    return conn.execute(query).all()
