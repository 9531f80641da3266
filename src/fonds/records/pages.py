"""Listing pages and all_ids at a cost that does not grow with the table.

The total and the start of page N come from the counts the triggers keep (`fonds.storage.counts`):
the total from its own row, and the blocks of one type and repository are summed in id order until
the running sum passes the page's offset; the page is then read from the (repo_id, id) index from the
start of that block, skipping fewer than 1024 entries, and no further than the end of the block
where the page ends (or the last block): a page that runs out of the repository's records (the
last one) must not scan on through the records of the repositories after it. Only the page's
rows are fetched.
Types whose listings hide rows (`Hooks.list_filter`: the global repository) are small and keep
the plain COUNT and OFFSET."""

from __future__ import annotations

from dataclasses import dataclass

import orjson
from sqlalchemy import Connection, Table, func, literal_column, select, text

from fonds.records.hooks import Hooks
from fonds.records.plain import ROW, StoredAnswer, stored_answer
from fonds.records.registry import RecordType, Registry
from fonds.storage import counts

# Offsets and page numbers beyond a 64-bit integer are refused as the database would refuse them
# (OverflowError: a 400 naming an unstorable value), though no query here carries them.
MAX_INTEGER = 2**63 - 1


def check_range(*values: int) -> None:
    if any(value > MAX_INTEGER for value in values):
        raise OverflowError("Python int too large to convert to SQLite INTEGER")


def counted(record_type: RecordType, table: Table) -> bool:
    """Whether the block counts describe this type's listings (no rows hidden from them)."""
    return record_type.hooks.list_filter(table) is None


def page_rows(conn: Connection, record_type: RecordType, table: Table, where: list, repo_id: int | None, offset: int, size: int):
    """(total, the rows of the page starting at `offset`) in id order."""
    check_range(offset)
    if not counted(record_type, table):
        total = conn.execute(select(func.count()).select_from(table).where(*where)).scalar_one()
        rows = conn.execute(select(table).where(*where).order_by(table.c.id).limit(size).offset(offset)).all()
        return total, rows
    blocks = conn.execute(
        text("SELECT bucket, n FROM record_bucket WHERE record_type = :t AND repo_id = :r AND bucket >= 0 AND n > 0 ORDER BY bucket"),
        {"t": record_type.name, "r": repo_id or 0},
    ).all()
    total = sum(n for _, n in blocks)
    start = locate(blocks, offset)
    if start is None:
        return total, []
    first_block, skip, _ = start
    last_block, _, tail = locate(blocks, min(offset + size, total) - 1)
    span = [*where, table.c.id >= first_block * counts.BLOCK, table.c.id < (last_block + 1) * counts.BLOCK]
    # From the nearer end of the page's blocks (as `quick_page` reads them).
    if skip <= tail:
        ids = select(table.c.id).where(*span).order_by(table.c.id).limit(size).offset(skip)
    else:
        ids = select(table.c.id).where(*span).order_by(table.c.id.desc()).limit(min(offset + size, total) - offset).offset(tail)
    # The ids from the index first, then only those rows (an OFFSET over full rows would read
    # the JSON of every row it skips).
    rows = conn.execute(select(table).where(table.c.id.in_(ids.scalar_subquery())).order_by(table.c.id)).all()
    return total, rows


def page_json(number: int, size: int, total: int, bodies: list[bytes]) -> bytes:
    """A listing page as ArchivesSpace answers it, the records' JSON bytes spliced in."""
    last_page = max(1, -(-total // size))
    head = orjson.dumps({"first_page": 1, "last_page": last_page, "this_page": number, "total": total})[:-1]
    return head + b',"results":[' + b",".join(bodies) + b"]}"


@dataclass(frozen=True)
class QuickPage:
    """One raw statement for a listing page of a type whose answers one statement reads (the
    API's fast lane), so a page costs one round trip: `params` gives its parameters. Each row
    holds the auth generation, whether the repository exists (1 for unscoped types), the
    listing's total, then the id and `answer.columns` of one record of the page in id order: a
    single row with no record (id NULL) when the page is empty. The total and the start of the
    page come from the block counts, summed in the statement as `page_rows` sums them."""

    sql: str
    repo_scoped: bool
    type_name: str
    answer: StoredAnswer

    def params(self, repo_id: int | None, offset: int, size: int) -> tuple:
        repo = (repo_id,) if self.repo_scoped else ()
        blocks = (self.type_name, repo_id or 0)
        return (*repo, *blocks, offset, offset + size, *blocks, *blocks, *repo, size, *repo, offset, offset + size)

    def read(self, rows: list[tuple]) -> tuple[int, int, int, list[bytes] | None]:
        """(generation, repository found, total, the answers: None when one needs Python)."""
        generation_now, found, total = rows[0][:3]
        bodies = [self.answer.body(row[4:]) for row in rows if row[3] is not None]
        return generation_now, found, total, (None if None in bodies else bodies)


def quick_page(record_type: RecordType, dialect: str, registry: Registry, first: str) -> QuickPage | None:
    """None when the type's listings hide rows or its reads need Python; `first` is the SQL of the
    generation the rows carry."""
    answer = stored_answer(record_type, dialect, registry)
    if answer is None or type(record_type.hooks).list_filter is not Hooks.list_filter:
        return None
    name, scoped = record_type.name, "repo_id = ? AND " if record_type.repo_scoped else ""
    # In the order of the (repo_id, id) index, so that a plan made for any repository reads it.
    order = "repo_id, id" if record_type.repo_scoped else "id"
    found = "(SELECT count(*) FROM repository WHERE id = ?)" if record_type.repo_scoped else "1"
    blocks = "SELECT bucket, n FROM record_bucket WHERE record_type = ? AND repo_id = ? AND bucket >= 0 AND n > 0"
    total = f"SELECT n FROM record_bucket WHERE record_type = ? AND repo_id = ? AND bucket = {counts.TOTAL}"
    # The window's rows come in its own order on both databases; PostgreSQL's planner knows it
    # and stops at the LIMIT, but SQLite sorts the window's output again for an ORDER BY, all of
    # it, before the LIMIT: there the order is left to the window.
    ascending, descending = ("", "") if dialect == "sqlite" else (" ORDER BY bucket", " ORDER BY bucket DESC")
    # The page's first record (`mark` 0) and its last one (or the listing's last), each located in
    # its block by a running sum from the nearer end of the list, so that the first and the last
    # pages read a block or two, not every block of the repository. `code`: the block's first id
    # plus, for the first record, the records of the block before it and, for the last, those after
    # it. The page's ids are then read from the nearer end of its blocks: forwards from the start
    # of its first block, skipping the records before it there, or backwards from the end of its
    # last block, skipping those after it (the last page of a listing skips none); the other
    # direction reads nothing (LIMIT 0). (No `%`: the driver's placeholders.) `+which`: else SQLite
    # builds an index on the two rows of `located` for each lookup, every time (a tenth of the
    # statement's time).
    within = f"code - code / {counts.BLOCK} * {counts.BLOCK}"
    forwards = f"max(CASE WHEN which = 0 THEN {within} END) <= max(CASE WHEN which = 1 THEN {within} END)"
    forwards_alone = f"SELECT {forwards} FROM located"
    lower = f"(SELECT code / {counts.BLOCK} * {counts.BLOCK} FROM located WHERE +which = 0)"
    upper = f"(SELECT (code / {counts.BLOCK} + 1) * {counts.BLOCK} FROM located WHERE +which = 1)"
    backwards = "repo_id DESC, id DESC" if record_type.repo_scoped else "id DESC"
    sql = f"""WITH head AS (
  SELECT ({first}) AS generation_now, {found} AS found, coalesce(({total}), 0) AS total
), marks AS (
  SELECT 0 AS which, CAST(? AS BIGINT) AS mark
  UNION ALL SELECT 1, CASE WHEN ends < total THEN ends ELSE total END - 1 FROM head, (SELECT CAST(? AS BIGINT) AS ends) page_end
), located AS (
  SELECT which, (
    SELECT bucket * {counts.BLOCK} + CASE WHEN which = 0 THEN mark - (upto - n) ELSE upto - 1 - mark END
    FROM (SELECT bucket, n, sum(n) OVER (ORDER BY bucket) AS upto FROM ({blocks}) b) w
    WHERE upto > mark{ascending} LIMIT 1
  ) AS code FROM marks, head WHERE mark >= 0 AND mark * 2 < total
  UNION ALL
  SELECT which, (
    SELECT bucket * {counts.BLOCK} + CASE WHEN which = 0 THEN mark - (total - after) ELSE total - 1 - mark - (after - n) END
    FROM (SELECT bucket, n, sum(n) OVER (ORDER BY bucket DESC) AS after FROM ({blocks}) b) w
    WHERE total - after <= mark{descending} LIMIT 1
  ) AS code FROM marks, head WHERE mark * 2 >= total AND mark < total
)
SELECT head.generation_now, head.found, head.total, page.* FROM head LEFT JOIN (
  SELECT {ROW}.id AS page_id, {answer.aliased} FROM "{name}" {ROW} WHERE {ROW}.id IN (
    SELECT id FROM (
      SELECT id FROM "{name}" WHERE {scoped}id >= {lower} AND id < {upper}
      ORDER BY {order} LIMIT (SELECT CASE WHEN {forwards} THEN ? ELSE 0 END FROM located)
      OFFSET (SELECT coalesce(max({within}), 0) FROM located WHERE +which = 0)
    ) forwards UNION ALL SELECT id FROM (
      SELECT id FROM "{name}" WHERE {scoped}id >= {lower} AND id < {upper}
      ORDER BY {backwards} LIMIT (
        SELECT CASE WHEN ({forwards_alone}) OR start >= total THEN 0 WHEN ends < total THEN ends - start ELSE total - start END
        FROM head, (SELECT CAST(? AS BIGINT) AS start, CAST(? AS BIGINT) AS ends) page_span
      ) OFFSET (SELECT coalesce(max({within}), 0) FROM located WHERE +which = 1)
    ) backwards
  )
) page ON 1 = 1 ORDER BY page.page_id"""
    return QuickPage(sql, record_type.repo_scoped, name, answer)


def locate(blocks: list, offset: int) -> tuple[int, int, int] | None:
    """The block holding the record at `offset`, and how many of that block's records come before
    it and after it."""
    before = 0
    for block, n in blocks:
        if before + n > offset:
            return block, offset - before, before + n - 1 - offset
        before += n
    return None


def all_ids_json(conn: Connection, table: Table, where: list) -> bytes:
    """Every id in order as a JSON array, written by the database as bytes: no Python object per
    id, and the answer's only copy in Python is the one the driver hands over (a million ids
    are ~7 MB, which text, its encoding and the brackets added made three times)."""
    ids = select(table.c.id).where(*where).order_by(table.c.id)
    if conn.dialect.name == "postgresql":
        # ARRAY(subquery) keeps the subquery's order, with no sort of its own (string_agg's
        # ORDER BY sorts again: four times slower at a million ids).
        joined = func.array_to_string(func.array(ids.scalar_subquery()), ",")
        found = conn.execute(select(func.convert_to("[" + func.coalesce(joined, "") + "]", "UTF8"))).scalar_one()
    else:
        # LIMIT -1 (none): SQLite keeps a subquery's ORDER BY only where it may matter.
        joined = literal_column("CAST('[' || coalesce(group_concat(id, ','), '') || ']' AS BLOB)")
        found = conn.execute(select(joined).select_from(ids.limit(-1).subquery())).scalar_one()
    return bytes(found)
