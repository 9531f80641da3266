"""Agents: people, corporate entities, families and software (ArchivesSpace's four agent types,
`/agents/people|corporate_entities|families|software`), global records linked from archival
records' `linked_agents`, from events and from each other (`related_agents`).

Their names carry the rules (`agent_names`); the fields ArchivesSpace computes when an agent is
read (`linked_agent_roles`, `used_within_repositories`, …) come from the records linking to it,
read with bounded queries."""

from __future__ import annotations

from collections import defaultdict

import orjson
from sqlalchemy import and_, func, select

from fonds.errors import FieldErrors
from fonds.records.hooks import Hooks
from fonds.records.registry import Permissions, RecordType, Scope, UniqueKey, text_column
from fonds.records.search_spec import DocumentField, SearchSpec
from fonds.records.types import agent_names
from fonds.storage import links as link_table
from fonds.storage.chunks import is_in, select_any

AGENT_TYPE_NAMES = ("agent_person", "agent_corporate_entity", "agent_family", "agent_software")
# The field archival records (and events) link agents under.
LINK_FIELD = "linked_agents/*"
# Events link agents too, but are not archival records: their roles and repositories don't count.
NOT_ARCHIVAL = ("event",)
# How many linking records an agent's read looks at for roles and publication (its repositories
# are counted exactly): a creator linked from 100,000 components must still read in milliseconds.
LINK_SAMPLE = 100
EXISTENCE = "existence"
# agent_subrecords whose `publish` follows the agent's (AgentManager::AGENT_SUBRECORDS_WITH_SUBJECTS).
WITH_SUBJECTS = ("agent_places", "agent_occupations", "agent_functions", "agent_topics")
NOT_FOR_SOFTWARE = (
    "agent_record_identifiers",
    "agent_record_controls",
    "agent_other_agency_codes",
    "agent_conventions_declarations",
    "agent_maintenance_histories",
    "agent_sources",
    "agent_alternate_sets",
    "agent_resources",
)


def structured_date_errors(date: dict, path: str) -> FieldErrors:
    """ArchivesSpace's check_structured_date_label: one single or one ranged date, matching its type."""
    errors: FieldErrors = {}
    single, ranged, kind = date.get("structured_date_single"), date.get("structured_date_range"), date.get("date_type_structured")
    if not single and not ranged:
        errors[path] = ["must specify either a single or ranged date"]
    if single and ranged:
        errors[f"{path}/structured_date_single"] = ["cannot specify both a single and ranged date"]
    if ranged and kind == "single":
        errors[f"{path}/structured_date_range"] = ["Must specify single date for date type of single"]
    if single and kind == "range":
        errors[f"{path}/structured_date_single"] = ["Must specify range date for date type of range"]
    if single and not single.get("date_expression") and not single.get("date_standardized"):
        errors[f"{path}/structured_date_single/date_standardized"] = ["or date expression is required"]
    if ranged and not ranged.get("begin_date_expression") and not ranged.get("begin_date_standardized"):
        errors[f"{path}/structured_date_range/begin_date_expression"] = ["is required"]
    return errors


class AgentHooks(Hooks):
    read_fields = ("linked_agent_roles", "is_linked_to_published_record", "used_within_repositories", "used_within_published_repositories")

    def __init__(self, type_name: str, rules: agent_names.NameRules):
        self.type_name, self.rules = type_name, rules

    def check(self, doc):
        errors: FieldErrors = {}
        dates = doc.get("dates_of_existence", [])
        if any(d.get("date_label") != EXISTENCE for d in dates):
            errors["dates_of_existence"] = ["Label must be 'existence' in this context"]
        for index, date in enumerate(dates):
            errors.update(structured_date_errors(date, f"dates_of_existence/{index}"))
        for index, name in enumerate(doc.get("names", [])):
            if name.get("sort_name_auto_generate") is False and not name.get("sort_name"):
                errors[f"names/{index}/sort_name"] = ["Property is required but was missing"]
            for n, date in enumerate(name.get("use_dates", [])):
                errors.update(structured_date_errors(date, f"names/{index}/use_dates/{n}"))
        for field in WITH_SUBJECTS:
            for index, item in enumerate(doc.get(field, [])):
                if not item.get("subjects"):
                    errors[f"{field}/{index}/subjects"] = ["Must specify a primary subject"]
        if self.type_name == "agent_software":
            errors.update({field: ["subrecord not allowed for agent software"] for field in NOT_FOR_SOFTWARE if doc.get(field)})
        return errors

    def derive(self, ctx, doc):
        names = agent_names.settle_names(self.rules, doc["names"])
        agent_names.fill_sort_names(self.rules, names, doc.get("dates_of_existence", []))
        doc["names"] = names
        display = next(n for n in names if n["is_display_name"])
        doc["display_name"] = dict(display)
        doc["title"] = display["sort_name"]
        doc["agent_type"] = self.type_name
        for field in WITH_SUBJECTS:
            for item in doc.get(field, []):
                item["publish"] = bool(doc.get("publish"))
        authorized = next(n for n in names if n["authorized"])
        ctx.columns.update(
            agent_sha1=agent_names.agent_hash(self.rules, doc),
            authority_id=authorized.get("authority_id"),
        )

    def read_extras(self, conn, rows):
        return agent_link_fields(conn, self.type_name, [row.id for row in rows])


def _linking_rows(conn, agent_type: str, ids: list[int]):
    """(agent id, source type, source id, path) of at most LINK_SAMPLE archival records per agent."""
    links = link_table.readable(conn)
    number = func.row_number().over(partition_by=links.c.target_id, order_by=(links.c.source_type, links.c.source_id)).label("n")
    inner = (
        select(links.c.target_id, links.c.source_type, links.c.source_id, links.c.path, number)
        .where(
            links.c.target_type == agent_type,
            links.c.target_id.in_(ids),
            links.c.field == LINK_FIELD,
            links.c.source_type.not_in(NOT_ARCHIVAL),
        )
        .subquery()
    )
    return conn.execute(
        select(inner.c.target_id, inner.c.source_type, inner.c.source_id, inner.c.path).where(inner.c.n <= LINK_SAMPLE)
    ).all()


def _repositories(conn, agent_type: str, ids: list[int], source_types: set[str]) -> dict[int, set[int]]:
    """Every repository whose records link each agent (distinct, so bounded by the repositories)."""
    tables = conn.info["fonds_tables"]
    links = link_table.readable(conn)
    found: dict[int, set[int]] = defaultdict(set)
    for source_type in source_types:
        table = tables[source_type]
        statement = (
            select(links.c.target_id, table.c.repo_id)
            .distinct()
            .join(table, and_(table.c.id == links.c.source_id, links.c.source_type == source_type))
            .where(links.c.target_type == agent_type, links.c.target_id.in_(ids), links.c.field == LINK_FIELD)
        )
        for agent_id, repo_id in conn.execute(statement):
            found[agent_id].add(repo_id)
    return found


def _source_types(conn, agent_type: str, ids: list[int]) -> set[str]:
    links = link_table.readable(conn)
    statement = (
        select(links.c.source_type)
        .distinct()
        .where(links.c.target_type == agent_type, links.c.target_id.in_(ids), links.c.field == LINK_FIELD)
        .where(links.c.source_type.not_in(NOT_ARCHIVAL))
    )
    return set(conn.execute(statement).scalars())


def _load_json(conn, by_type: dict[str, set[int]]) -> dict[tuple[str, int], dict]:
    tables = conn.info["fonds_tables"]
    loaded = {}
    for source_type, source_ids in by_type.items():
        table = tables[source_type]
        rows = select_any(
            conn, lambda chunk, table=table: select(table.c.id, table.c.json).where(is_in(table.c.id, chunk)), sorted(source_ids)
        )
        loaded.update({(source_type, row.id): orjson.loads(row.json) for row in rows})
    return loaded


def _published_repositories(conn, repo_ids: set[int]) -> set[int]:
    if not repo_ids:
        return set()
    table = conn.info["fonds_tables"]["repository"]
    rows = conn.execute(select(table.c.id, table.c.json).where(table.c.id.in_(sorted(repo_ids)))).all()
    return {row.id for row in rows if orjson.loads(row.json).get("publish")}


def _item_at(doc: dict, path: str):
    node = doc
    for part in path.split("/"):
        if isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        elif isinstance(node, dict):
            node = node.get(part)
        else:
            return None
    return node


def agent_link_fields(conn, agent_type: str, ids: list[int]) -> list[dict]:
    """ArchivesSpace's read-time fields of agents, from the archival records linking them."""
    source_types = _source_types(conn, agent_type, ids) if ids else set()
    if not source_types:
        return [_link_fields([], set(), set()) for _ in ids]
    sample = _linking_rows(conn, agent_type, ids)
    docs = _load_json(conn, _group_sources(sample))
    repositories = _repositories(conn, agent_type, ids, source_types)
    published_repos = _published_repositories(conn, set().union(*repositories.values()))
    links_by_agent: dict[int, list[tuple[dict, dict]]] = defaultdict(list)
    for agent_id, source_type, source_id, path in sample:
        doc = docs.get((source_type, source_id))
        link = _item_at(doc, path) if doc else None
        if isinstance(link, dict):
            links_by_agent[agent_id].append((doc, link))
    return [_link_fields(links_by_agent.get(i, []), repositories.get(i, set()), published_repos) for i in ids]


def _group_sources(sample) -> dict[str, set[int]]:
    by_type: dict[str, set[int]] = defaultdict(set)
    for _, source_type, source_id, _ in sample:
        by_type[source_type].add(source_id)
    return by_type


def _link_fields(links: list[tuple[dict, dict]], repos: set[int], published_repos: set[int]) -> dict:
    roles = sorted({link["role"] for _, link in links if link.get("role")})
    published = any(doc.get("publish") and not doc.get("suppressed") for doc, _ in links)
    return {
        "linked_agent_roles": roles,
        "is_linked_to_published_record": published,
        "used_within_repositories": [f"/repositories/{r}" for r in sorted(repos)],
        "used_within_published_repositories": [f"/repositories/{r}" for r in sorted(repos & published_repos)],
    }


def _names(doc: dict, key: str) -> list[str]:
    return [n[key] for n in doc.get("names", []) if n.get(key)]


def _authorized(doc: dict) -> dict:
    return next((n for n in doc.get("names", []) if n.get("authorized")), {})


def _primary_identifier(doc: dict) -> dict:
    return next((i for i in doc.get("agent_record_identifiers", []) if i.get("primary_identifier")), {})


def _authority(doc: dict, key: str) -> str | None:
    """ArchivesSpace's indexer: the primary record identifier's id and source, else the authorized name's."""
    primary = _primary_identifier(doc)
    if primary:
        return primary.get("record_identifier" if key == "authority_id" else key)
    return _authorized(doc).get(key)


def _rules(doc: dict, _) -> str | None:
    declarations = doc.get("agent_conventions_declarations") or [{}]
    return declarations[0].get("name_rule") or _authorized(doc).get("rules")


# What an agent's search document holds besides the shared fields (ArchivesSpace's indexer); its
# title is the display name's sort name, and the records linking it carry that title
# (`agents`, `creators`). Every agent is also of type `agent`.
AGENT_SEARCH = SearchSpec(
    fields=(
        DocumentField("authority_id", "keyword", lambda doc, _: _authority(doc, "authority_id"), default_weight=3.0),
        DocumentField("source", "keyword", lambda doc, _: _authority(doc, "source")),
        DocumentField("rules", "keyword", _rules),
        DocumentField("names", "text", lambda doc, _: _names(doc, "sort_name"), default_weight=2.0),
        DocumentField("linked_agent_roles", "keyword", lambda doc, _: doc.get("linked_agent_roles")),
        DocumentField("related_agent_uris", "keyword", lambda doc, _: [r["ref"] for r in doc.get("related_agents", []) if r.get("ref")]),
        DocumentField("agent_type", "keyword", lambda doc, _: doc.get("agent_type")),
    ),
    title=lambda doc: doc.get("title"),
    shown_in_linkers=True,
    types=("agent",),
)
UNIQUE_AGENT = UniqueKey(("agent_sha1",), "names", "Agent must be unique", report_conflict=True)
UNIQUE_AUTHORITY_ID = UniqueKey(("authority_id",), "authority_id", "Authority ID must be unique", report_conflict=True)


def agent_type(name: str, path: str, model_name: str, rules: agent_names.NameRules) -> RecordType:
    return RecordType(
        name=name,
        path=path,
        scope=Scope.GLOBAL,
        model_name=model_name,
        permissions=Permissions(
            read="view_repository", create="update_agent_record", update="update_agent_record", delete="delete_agent_record"
        ),
        columns=(text_column("agent_sha1", 64), text_column("authority_id")),
        unique_keys=(UNIQUE_AGENT, UNIQUE_AUTHORITY_ID),
        hooks=AgentHooks(name, rules),
        search=AGENT_SEARCH,
    )


TYPES = (
    agent_type("agent_person", "agents/people", "AgentPerson", agent_names.PERSON),
    agent_type("agent_corporate_entity", "agents/corporate_entities", "AgentCorporateEntity", agent_names.CORPORATE_ENTITY),
    agent_type("agent_family", "agents/families", "AgentFamily", agent_names.FAMILY),
    agent_type("agent_software", "agents/software", "AgentSoftware", agent_names.SOFTWARE),
)
