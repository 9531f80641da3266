"""The measured scenarios: what each requests, and which route must exist for it."""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import quote, urlencode


@dataclass
class Scenario:
    name: str
    label: str
    route: str  # "METHOD /path/template" that must be in the server's OpenAPI document
    kind: str = "requests"  # a maker in bench.drive; "requests" are fixed GETs (wrk can run them)
    path: str = ""
    params: dict = field(default_factory=dict)
    clients: int | None = None  # None: the run's number of clients

    @property
    def fixed_get(self) -> bool:
        return self.kind == "requests"


def search_path(repo: str, **params) -> str:
    return f"{repo}/search?{urlencode({'page': 1, **params}, doseq=True, quote_via=quote)}"


def read_scenarios(t: dict) -> list[Scenario]:
    """GETs of fixed URLs. `t` holds the targets found after loading (URIs, last pages)."""
    repo, acc = t["repo"], f"{t['repo']}/accessions"
    tree = f"{t['resource']}/tree"
    listing = "GET /repositories/{repo_id}/accessions"
    return [
        Scenario("get_one", "GET one accession", "GET /repositories/{repo_id}/accessions/{id}", path=t["accession"]),
        Scenario(
            "get_resolve",
            "GET archival object ?resolve[]=resource",
            "GET /repositories/{repo_id}/archival_objects/{id}",
            path=f"{t['archival_object']}?resolve[]=resource",
        ),
        Scenario("list_10_first", "list accessions, page of 10, first page", listing, path=f"{acc}?page=1&page_size=10"),
        Scenario("list_10_last", "list accessions, page of 10, last page", listing, path=f"{acc}?page={t['last_10']}&page_size=10"),
        # The listing target is a latency one: any page, one client, p50 ≤ 10 ms however long the table.
        Scenario(
            "list_10_first_1", "list accessions, page of 10, first page, 1 client", listing, path=f"{acc}?page=1&page_size=10", clients=1
        ),
        Scenario(
            "list_10_last_1",
            "list accessions, page of 10, last page, 1 client",
            listing,
            path=f"{acc}?page={t['last_10']}&page_size=10",
            clients=1,
        ),
        Scenario(
            "ao_list_10_last_1",
            f"list archival objects ({t['archival_objects']:,}), page of 10, last page, 1 client",
            "GET /repositories/{repo_id}/archival_objects",
            path=f"{repo}/archival_objects?page={t['ao_last_10']}&page_size=10",
            clients=1,
        ),
        Scenario("list_250_first", "list accessions, page of 250, first page", listing, path=f"{acc}?page=1&page_size=250"),
        Scenario("list_250_last", "list accessions, page of 250, last page", listing, path=f"{acc}?page={t['last_250']}&page_size=250"),
        Scenario("all_ids", f"all_ids over {t['accessions']:,} accessions", listing, path=f"{acc}?all_ids=true"),
        Scenario("search_term", "search, one term", "GET /repositories/{repo_id}/search", path=search_path(repo, q="letters")),
        Scenario("search_phrase", "search, phrase", "GET /repositories/{repo_id}/search", path=search_path(repo, q='"family papers"')),
        Scenario(
            "search_boolean",
            "search, boolean",
            "GET /repositories/{repo_id}/search",
            path=search_path(repo, q="(letters OR diaries) AND NOT maps"),
        ),
        Scenario(
            "search_faceted",
            "search, faceted",
            "GET /repositories/{repo_id}/search",
            path=search_path(repo, q="letters", **{"facet[]": ["primary_type", "subjects", "level"]}),
        ),
        Scenario("tree_root", "tree/root of the big resource", "GET /repositories/{repo_id}/resources/{id}/tree/root", path=f"{tree}/root"),
        Scenario(
            "tree_waypoint",
            "tree/waypoint of the big resource",
            "GET /repositories/{repo_id}/resources/{id}/tree/waypoint",
            path=f"{tree}/waypoint?offset=0&parent_node={quote(t['wide_node'], safe='')}",
        ),
        Scenario(
            "tree_node",
            "tree/node, deep in the big resource",
            "GET /repositories/{repo_id}/resources/{id}/tree/node",
            path=f"{tree}/node?node_uri={quote(t['deep_node'], safe='')}",
        ),
    ]


LOGIN = Scenario("login", "login", "POST /users/{username}/login", kind="login")
# The memory target holds "under load, including 32 concurrent logins".
LOGIN_32 = Scenario("login_32", "login, 32 clients", "POST /users/{username}/login", kind="login", clients=32)
CREATE = Scenario("create", "create an accession", "POST /repositories/{repo_id}/accessions", kind="create")
UPDATE = Scenario("update", "update an accession", "POST /repositories/{repo_id}/accessions/{id}", kind="update")
DELETE = Scenario("delete", "delete an accession", "DELETE /repositories/{repo_id}/accessions/{id}", kind="delete")

NEW_ACCESSION = {
    "jsonmodel_type": "accession",
    "title": "Bench accession {n} of the Carver family",
    "id_0": "BENCH",
    "id_1": "{tag}",
    "id_2": "{n}",
    "accession_date": "2024-05-01",
    "content_description": "Letters, diaries and ledgers of a harbour mill.",
    "extents": [{"jsonmodel_type": "extent", "portion": "whole", "number": "2", "extent_type": "linear_feet"}],
}
