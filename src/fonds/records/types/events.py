"""Events (`/repositories/:repo_id/events`): something that happened to records (an accession
received, a collection processed), done by agents. An event lives as long as one of its linked
records does: the delete of its last one takes the event with it. The records an event links
list it, computed when read, in `linked_events`."""

from __future__ import annotations

import datetime
from collections import defaultdict

from sqlalchemy import and_, select

from fonds.errors import FieldErrors
from fonds.records.hooks import Hooks
from fonds.records.registry import Permissions, RecordType, RefRule, Scope, UniqueKey, text_column
from fonds.records.search_spec import LINKED_AGENTS, DocumentField, SearchSpec, copied
from fonds.storage import links as link_table
from fonds.storage.chunks import is_in, select_any

EVENT = "event"
LINKED_RECORDS = "linked_records/*"
BOTH = "Can't specify both a date and a timestamp"
NEITHER = "Must specify either a date or a timestamp"


def _parses(timestamp: str) -> bool:
    try:
        datetime.datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


class EventHooks(Hooks):
    def check(self, doc):
        """ArchivesSpace's check_event: exactly one of date and timestamp, a timestamp ISO 8601."""
        errors: FieldErrors = {}
        has_date, has_timestamp = "date" in doc, "timestamp" in doc
        if has_date == has_timestamp:
            message = BOTH if has_date else NEITHER
            errors.update(date=[message], timestamp=[message])
        if isinstance(doc.get("timestamp"), str) and not _parses(doc["timestamp"]):
            errors.setdefault("timestamp", []).append("Must be an ISO8601-formatted string")
        return errors

    def derive(self, ctx, doc):
        ctx.columns["refid"] = doc.get("refid")


def linked_events(conn, record_type: str, ids: list[int]) -> list[dict]:
    """`linked_events` of records of `record_type`: the events linking them, as ArchivesSpace
    returns it (`[{"ref": "/repositories/2/events/1"}]`), oldest event first."""
    found: dict[int, list[dict]] = defaultdict(list)
    if ids:
        tables = conn.info["fonds_tables"]
        links, events = link_table.readable(conn), tables[EVENT]
        statement = (
            select(links.c.target_id, events.c.id, events.c.repo_id)
            .distinct()
            .join(events, and_(events.c.id == links.c.source_id, links.c.source_type == EVENT))
            .where(links.c.target_type == record_type, links.c.field == LINKED_RECORDS)
            .order_by(links.c.target_id, events.c.id)
        )
        rows = select_any(conn, lambda chunk: statement.where(is_in(links.c.target_id, chunk)), ids)
        for target_id, event_id, repo_id in rows:
            found[target_id].append({"ref": f"/repositories/{repo_id}/events/{event_id}"})
    return [{"linked_events": found.get(i, [])} for i in ids]


def linked_events_sql(dialect: str, record_type: str, row: str) -> str:
    """`linked_events` of the record of `record_type` whose row is aliased `row`, as a scalar
    expression yielding the JSON text `linked_events` gives (refs hold digits only: nothing to escape)."""
    ref = """'{"ref":"/repositories/' || e.repo_id || '/events/' || e.id || '"}'"""
    linking = (
        f"SELECT source_id FROM {link_table.readable_name(dialect)} WHERE source_type = '{EVENT}' AND target_type = '{record_type}'"
        f" AND target_id = {row}.id AND field = '{LINKED_RECORDS}'"
    )
    events = f'FROM "{EVENT}" e WHERE e.id IN ({linking})'
    if dialect == "postgresql":
        return f"SELECT '[' || coalesce(string_agg({ref}, ',' ORDER BY e.id), '') || ']' {events}"
    # SQLite (before 3.44) has no ORDER BY in aggregates: group_concat takes the rows in the
    # order its input gives them, ordered by a subquery that LIMIT -1 (none) keeps ordered.
    listed = f"SELECT '[' || coalesce(group_concat(ref, ','), '') || ']' FROM (SELECT {ref} AS ref {events} ORDER BY e.id LIMIT -1)"
    # Most records have no linked events, and probing the link index is cheaper than building an
    # empty list through the ordered subquery (a page of 10 accessions: 17.6 -> 10.8 µs).
    return f"CASE WHEN EXISTS ({linking}) THEN ({listed}) ELSE '[]' END"


def _linked_record_uris(doc: dict, _) -> list[str]:
    return [r["ref"] for r in doc.get("linked_records", []) if r.get("ref")]


def linked_record_dependents(conn, registry, old: dict | None, new: dict | None, indexed=None) -> list[str]:
    """The records an event links show it in `linked_events`: their documents change when the
    event comes, goes or links other records."""
    before, after = (set(_linked_record_uris(doc, None)) if doc else set() for doc in (old, new))
    return sorted(before ^ after) if old and new else sorted(before | after)


EVENT_SEARCH = SearchSpec(
    fields=(
        copied("event_type", "keyword"),
        copied("outcome", "keyword"),
        copied("refid", "keyword"),
        DocumentField("linked_record_uris", "keyword", _linked_record_uris),
        *LINKED_AGENTS,
    ),
    title=lambda doc: doc.get("event_type"),
    dependents=linked_record_dependents,
)


TYPES = (
    RecordType(
        name=EVENT,
        path="events",
        scope=Scope.REPOSITORY,
        model_name="Event",
        permissions=Permissions(
            read="view_repository", create="update_event_record", update="update_event_record", delete="delete_event_record"
        ),
        columns=(text_column("refid"),),
        unique_keys=(UniqueKey(("refid",), "refid", "Must be unique"),),
        # An event goes with the last record it links; a deleted agent only leaves its list.
        ref_rules=(RefRule(LINKED_RECORDS, "cascade_last"),),
        hooks=EventHooks(),
        search=EVENT_SEARCH,
        suppressible=True,
    ),
)
