"""Which agents' search documents a change to a record linking agents alters.

An agent's document holds four fields computed from the archival records linking it
(`agents.agent_link_fields`): `linked_agent_roles` and `is_linked_to_published_record` from a
sample, its first LINK_SAMPLE links ordered by (source type, source id), and
`used_within_repositories` / `used_within_published_repositories` from all of them. A record
gaining a link to an agent alters none of them when its repository is already among the agent's
and either its link stays outside the sample or the sample holds all the agent's links and
already shows the link's role and publication. Rendering an agent reads and parses up to
LINK_SAMPLE linking records, so a bulk load linking every new record to its agents would re-render
each agent over and over; the check costs the agent's indexed document and one read of at most
LINK_SAMPLE + 1 entries of an index.

Anything else re-renders the agent: a link removed or its role changed, the linking record's
publication, suppression or repository changed, the record deleted, and any case the check can't
decide (the agent not indexed yet, a linking record not indexed yet but changed since its
creation: `search_spec.unchanged_since_created`). The argument that skipping is exact: between two renders of an
agent its links are only ever added (anything else re-renders it); links outside the sample when
checked stay outside (links only come before them), and those inside were checked while the
agent had at most LINK_SAMPLE links, so whenever the sample is full again it is made of links
that were each shown already."""

from __future__ import annotations

from collections import Counter

from sqlalchemy import and_, bindparam, case, or_, select, union_all

from fonds.records.search_spec import unchanged_since_created
from fonds.records.types.agents import LINK_FIELD, LINK_SAMPLE, NOT_ARCHIVAL
from fonds.storage import links as link_table


def linked_agent_dependents(conn, registry, old: dict | None, new: dict | None, indexed) -> list[str]:
    """The agents whose documents change with this record (see the module's docstring)."""
    before, after = _links_by_agent(old), _links_by_agent(new)
    same_record = old is not None and new is not None and _record_state(registry, old) == _record_state(registry, new)
    found = []
    for ref in sorted(before.keys() | after.keys()):
        if same_record and before.get(ref) == after.get(ref):
            continue
        fresh = old is not None or unchanged_since_created(new)
        if ref not in before and fresh and _addition_shows_nothing_new(conn, registry, indexed(ref), new, after[ref]):
            continue
        found.append(ref)
    return found


def _links_by_agent(doc: dict | None) -> dict[str, Counter]:
    """agent ref -> the roles of the record's links to it, with repeats (each link is a row)."""
    found: dict[str, Counter] = {}
    for item in (doc or {}).get("linked_agents") or []:
        if isinstance(item, dict) and isinstance(item.get("ref"), str):
            found.setdefault(item["ref"], Counter())[item.get("role") or ""] += 1
    return found


def _record_state(registry, doc: dict):
    parsed = registry.parse_uri(doc.get("uri") or "")
    return _published(doc), bool(doc.get("suppressed")), parsed.repo_id if parsed else None


def _published(doc: dict) -> bool:
    return bool(doc.get("publish")) and not doc.get("suppressed")


def _addition_shows_nothing_new(conn, registry, agent: dict | None, record: dict, roles: Counter) -> bool:
    """Whether `record`'s new links (`roles`) to an agent, indexed as `agent`, leave its document as it is."""
    source, target = registry.parse_uri(record.get("uri") or ""), registry.parse_uri((agent or {}).get("uri") or "")
    if agent is None or source is None or target is None or source.repo_id is None or source.record_type.name in NOT_ARCHIVAL:
        return False
    if f"/repositories/{source.repo_id}" not in (agent.get("used_within_repositories") or []):
        return False
    shown_roles = set(agent.get("linked_agent_roles") or [])
    shown = all(not role or role in shown_roles for role in roles) and (
        not _published(record) or agent.get("is_linked_to_published_record")
    )
    params = {"target_type": target.record_type.name, "target_id": target.record_id}
    params.update(source_type=source.record_type.name, source_id=source.record_id)
    # Whether each of the agent's links at the sample's last place and the one after it sorts
    # before the record (compared in SQL, as the sample is ordered).
    edge = conn.execute(_sample_edge(tuple(link_table.parts(conn))), params).scalars().all()
    # Outside the sample (its last link sorts before the record: all LINK_SAMPLE do), or the
    # sample is all of the agent's links (none after it) and already showed these.
    return (bool(edge) and bool(edge[0])) or (shown and len(edge) < 2)


# Built once per set of link tables with bound parameters: the indexer runs it for every link a
# batch adds, and building a statement cost more than running it.
_SAMPLE_EDGE: dict[tuple[str, ...], object] = {}


def _sample_edge(parts):
    """Whether the agent's archival links at places LINK_SAMPLE and LINK_SAMPLE + 1 in (source
    type, source id) order, as `agents._linking_rows` orders its sample, sort before a record's:
    the first LINK_SAMPLE + 1 of each table holding links (`links.parts`), read from
    `ix_record_link_target` alone in `record_link` (through a view of both, every link of the
    agent would be read and sorted)."""
    key = tuple(table.name for table in parts)
    if key not in _SAMPLE_EDGE:
        firsts = [_first_links(table).subquery() for table in parts]
        rows = firsts[0] if len(firsts) == 1 else union_all(*(select(first) for first in firsts)).subquery()
        source_type, source_id = bindparam("source_type"), bindparam("source_id")
        before = or_(rows.c.source_type < source_type, and_(rows.c.source_type == source_type, rows.c.source_id < source_id))
        _SAMPLE_EDGE[key] = (
            select(case((before, 1), else_=0)).order_by(rows.c.source_type, rows.c.source_id).limit(2).offset(LINK_SAMPLE - 1)
        )
    return _SAMPLE_EDGE[key]


def _first_links(links):
    return (
        select(links.c.source_type, links.c.source_id)
        .where(
            links.c.target_type == bindparam("target_type"),
            links.c.target_id == bindparam("target_id"),
            links.c.field == LINK_FIELD,
            *(links.c.source_type != name for name in NOT_ARCHIVAL),
        )
        .order_by(links.c.source_type, links.c.source_id)
        .limit(LINK_SAMPLE + 1)
    )
