"""Search routes (aspace-api §9, decisions.md "Search"): GET or POST, parameters in the query
string or a form body; every route answers ArchivesSpace's envelope."""

from __future__ import annotations

from dataclasses import replace

from fastapi import APIRouter, Request
from starlette.datastructures import MultiDict

from fonds.api.deps import Services, require
from fonds.api.params import positive_int
from fonds.api.routing import add_route, json_response
from fonds.auth.permissions import has_permission
from fonds.errors import BadRequest, missing_parameter
from fonds.records.service import Actor
from fonds.search.service import SearchParams, SearchScope

BEHIND_HEADER = "X-Fonds-Index-Behind"
# ArchivesSpace's max_top_container_results: top-container search needs no paging.
TOP_CONTAINER_ROWS = 10_000
# Who may see suppressed records of a repository (aspace-api §9.4).
SEE_SUPPRESSED = ("manage_repository", "suppress_archival_record")


async def _parameters(request: Request) -> MultiDict:
    """Query-string parameters, plus those of a form body (POST)."""
    items = list(request.query_params.multi_items())
    content_type = request.headers.get("content-type", "")
    if request.method == "POST" and content_type.startswith(("application/x-www-form-urlencoded", "multipart/form-data")):
        form = await request.form()
        items += [(k, v) for k, v in form.multi_items() if isinstance(v, str)]
    return MultiDict(items)


def _list(raw: MultiDict, name: str) -> tuple[str, ...]:
    """`name[]` (ArchivesSpace's form, always a list) or plain `name`, repeated."""
    return tuple(v for v in raw.getlist(f"{name}[]") + raw.getlist(name) if v != "")


def _boolean(raw: MultiDict, name: str) -> bool:
    value = (raw.get(name) or "false").strip().lower()
    if value not in ("true", "false", "1", "0", "yes", "no", "on", "off"):
        raise BadRequest({name: [f"Wanted type Boolean but got '{raw.get(name)}'"]})
    return value in ("true", "1", "yes", "on")


def _count(raw: MultiDict, name: str, default: int) -> int:
    value = raw.get(name)
    if value in (None, ""):
        return default
    try:
        number = int(value)
    except ValueError:
        raise BadRequest({name: [f"Wanted type Integer but got '{value}'"]}) from None
    if number < 0:
        raise BadRequest({name: [f"Must be zero or more (you provided {number})"]})
    return number


def parse_params(raw: MultiDict, app, *, page_required: bool = True, rows: int | None = None) -> SearchParams:
    settings = app.settings
    page_raw = raw.get("page")
    if page_raw in (None, "") and page_required:
        raise missing_parameter("page")
    page = positive_int("page", page_raw) if page_raw not in (None, "") else 1
    size_raw = raw.get("page_size")
    size = positive_int("page_size", size_raw) if size_raw not in (None, "") else (rows or settings.default_page_size)
    if rows is None or size_raw not in (None, ""):
        size = min(size, settings.max_page_size)
    return SearchParams(
        q=raw.get("q"),
        aq=raw.get("aq"),
        types=_list(raw, "type"),
        page=page,
        page_size=size,
        sort=raw.get("sort") or None,
        facets=_list(raw, "facet"),
        facet_mincount=_count(raw, "facet_mincount", 0),
        filter_queries=_list(raw, "filter_query"),
        exclude=_list(raw, "exclude"),
        root_record=raw.get("root_record") or None,
        fields=_list(raw, "fields"),
        highlight=_boolean(raw, "hl"),
        filter=raw.get("filter") or None,
    )


def _answer(app, params: SearchParams, scope: SearchScope, extra=None):
    envelope, behind = app.search.search(params, scope)
    if extra is not None:
        envelope.update(extra(envelope, params))
    response = json_response(envelope)
    if behind:
        response.headers[BEHIND_HEADER] = str(behind)
    return response


async def search_all(request: Request, app: Services, actor: Actor = require("view_all_records")):
    params = parse_params(await _parameters(request), app)
    return await _in_thread(_answer, app, params, SearchScope())


async def search_repository(request: Request, app: Services, repo_id: int, actor: Actor = require("view_repository")):
    params = parse_params(await _parameters(request), app)
    uri = f"/repositories/{repo_id}"
    sees_suppressed = any(has_permission(actor.grants, code, repo_id) for code in SEE_SUPPRESSED)
    scope = SearchScope(repositories=(uri, "global"), hide_suppressed_in=None if sees_suppressed else (uri,))
    await _in_thread(_check_repository, app, repo_id)
    return await _in_thread(_answer, app, params, scope)


async def search_repositories(request: Request, app: Services, actor: Actor = require("view_repository")):
    params = parse_params(await _parameters(request), app)
    return await _in_thread(_answer, app, params, SearchScope(types=("repository",)))


async def search_subjects(request: Request, app: Services, actor: Actor = require("view_repository")):
    params = parse_params(await _parameters(request), app)
    return await _in_thread(_answer, app, params, SearchScope(types=("subject",)))


async def search_location_profiles(request: Request, app: Services, actor: Actor = require("view_repository")):
    params = parse_params(await _parameters(request), app)
    return await _in_thread(_answer, app, params, SearchScope(types=("location_profile",)))


def _solr_response(envelope: dict, params: SearchParams) -> dict:
    start = (params.page - 1) * params.page_size
    return {"response": {"numFound": envelope["total_hits"], "start": start, "docs": envelope["results"]}}


async def search_top_containers(request: Request, app: Services, repo_id: int, actor: Actor = require("view_repository")):
    params = parse_params(await _parameters(request), app, page_required=False, rows=TOP_CONTAINER_ROWS)
    scope = SearchScope(types=("top_container",), repositories=(f"/repositories/{repo_id}",))
    await _in_thread(_check_repository, app, repo_id)
    return await _in_thread(_answer, app, params, scope, _solr_response)


async def search_records(request: Request, app: Services, actor: Actor = require("view_all_records")):
    raw = await _parameters(request)
    uris = _list(raw, "uri")
    if not uris:
        raise missing_parameter("uri[]")
    if len(uris) > app.settings.max_page_size:
        raise BadRequest({"uri[]": [f"Give at most {app.settings.max_page_size} URIs"]})
    params = replace(parse_params(raw, app, page_required=False), page=1, page_size=len(uris))
    return await _in_thread(_answer, app, params, SearchScope(uris=uris))


def search_status(app: Services, actor: Actor = require("administer_system")):
    status = app.search.status()
    return json_response(
        {
            "applied_sequence": status.applied,
            "head_sequence": status.head,
            "lag": status.lag,
            "generation": status.generation,
            "documents": status.documents,
            "size_bytes": status.size_bytes,
            "writer": status.writer,
        }
    )


def _check_repository(app, repo_id: int) -> None:
    app.records.check_repository_exists(repo_id)


async def _in_thread(function, *args):
    from starlette.concurrency import run_in_threadpool

    return await run_in_threadpool(function, *args)


ROUTES = (
    ("/search", search_all, "view_all_records", "Search every repository"),
    ("/search/repositories", search_repositories, "view_repository", "Search repositories"),
    ("/search/subjects", search_subjects, "view_repository", "Search subjects"),
    ("/search/location_profile", search_location_profiles, "view_repository", "Search location profiles"),
    ("/search/records", search_records, "view_all_records", "Search documents of the records given by URI, in that order"),
    ("/repositories/{repo_id}/search", search_repository, "view_repository", "Search a repository (and global records)"),
    ("/repositories/{repo_id}/top_containers/search", search_top_containers, "view_repository", "Search a repository's top containers"),
)


def register(router: APIRouter) -> None:
    tags = ["search"]
    for path, endpoint, permission, summary in ROUTES:
        for method in ("GET", "POST"):
            name = f"{endpoint.__name__}_{method.lower()}"
            add_route(router, path, endpoint, methods=[method], permission=permission, summary=summary, name=name, tags=tags)
    add_route(
        router, "/search/status", search_status, methods=["GET"], permission="administer_system", summary="Search index status", tags=tags
    )
