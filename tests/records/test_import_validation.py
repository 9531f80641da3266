"""The process that validates large batch imports (records/import_validation.py): what it
answers is what the server would have, a refused record is named by its place in the whole
batch, an import goes on in the server when the process is gone, and the process stops when
idle and with the app. (Every test of tests/api/test_batch_imports.py also runs through it.)"""

from __future__ import annotations

import os
import signal
import time
from concurrent.futures import ThreadPoolExecutor

import orjson
import pytest

from fonds.records import import_validation
from fonds.records.validation import MAX_DEPTH
from tests.api.test_enumerations import EXTENTS, add_values


@pytest.fixture(params=["validating", "writing"])
def validation(request, app):
    """The app's processes, started, taking every import: one validating imports that the server
    writes (as on PostgreSQL), or those writing them (as on a SQLite file)."""
    found = app.state.fonds.records.import_validation
    if request.param == "writing" and found.writer is None:
        pytest.skip("imports are written by processes of their own on a SQLite file only")
    if request.param == "validating":
        found.writer = None
    found.min_records = 1
    found.start().result(timeout=120)
    assert wait_until(lambda: len(process_ids(found)) == 1)  # a second writing process starts with two imports at once
    return found


NESTED_100 = "[" * 100 + '"x"' + "]" * 100
NESTED_300 = "[" * 300 + '"x"' + "]" * 300


@pytest.fixture(params=["reads the body", "takes records in chunks"])
def reading(request, monkeypatch):
    """How the process gets a batch: the body as it came, read there; or the records the server
    read (a body past BODY_BYTES), in chunks of 2."""
    monkeypatch.setattr(import_validation, "CHUNK", 2)
    if request.param == "takes records in chunks":
        monkeypatch.setattr(import_validation, "BODY_BYTES", 0)
    return request.param


def process_ids(validation) -> list[int]:
    return list(validation._pool._processes) if validation._pool is not None else []


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False  # gone meanwhile


def wait_until(condition, seconds: float = 30.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def accessions(repo: int, prefix: str, count: int) -> list[dict]:
    return [
        {
            "jsonmodel_type": "accession",
            "uri": f"/repositories/{repo}/accessions/import_{prefix}{n}",
            "title": f"{prefix} {n}",
            "id_0": f"{prefix}-{n}",
            "extents": [{"portion": "whole", "number": "1", "extent_type": "Reels"}],  # outside the editable list: a warning
        }
        for n in range(count)
    ]


def test_the_process_answers_as_the_server_would(api, repo, validation, reading):
    # In chunks of 2, the refused record (the 6th) is in the third: named by its place in the batch.
    records = accessions(repo, "P", 7)
    records[5]["dates"] = [{"jsonmodel_type": "date", "date_type": "single"}]  # neither begin nor expression
    by_process = api.post(f"/repositories/{repo}/batch_imports", json=records)
    validation.min_records = 0
    in_server = api.post(f"/repositories/{repo}/batch_imports", json=records)
    assert by_process.status_code == in_server.status_code == 400
    assert by_process.json() == in_server.json()
    assert any(path.startswith("batch_import/5/dates/0") for path in by_process.json()["error"])

    del records[5]["dates"]
    validation.min_records = 1
    saved = api.post(f"/repositories/{repo}/batch_imports", json=records).json()[-1]["saved"]
    stored = api.get(saved[records[6]["uri"]][0]).json()
    assert (stored["title"], stored["extents"][0]["extent_type"]) == ("P 6", "Reels")
    # The schema's defaults were filled by the process, as the server fills them.
    assert stored["linked_agents"] == [] and stored["publish"] is False


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (NESTED_100, f"Nested more than {MAX_DEPTH} levels deep"),
        (NESTED_300, f"Nested more than {MAX_DEPTH} levels deep"),  # past what the server's JSON encoder sends on
        ('"A\\u0000B"', "Must not contain a NUL character"),
    ],
)
def test_the_process_refuses_records_nested_too_deep_or_holding_nul_as_the_server_would(api, repo, validation, reading, value, message):
    # In chunks of 2, the refused record (the 4th) is in the second.
    records = [orjson.dumps(record).decode() for record in accessions(repo, "D", 5)]
    records[3] = records[3][:-1] + f', "title": {value}}}'
    body = "[" + ",".join(records) + "]"
    answers = []
    for min_records in (1, 0):  # by the process, then in the server
        validation.min_records = min_records
        response = api.post(f"/repositories/{repo}/batch_imports", content=body, headers={"content-type": "application/json"})
        assert response.status_code == 400, response.text
        answers.append(response.json()["error"])
    assert answers[0] == answers[1]
    [(path, messages)] = answers[0].items()
    assert path.startswith("batch_import/3/title") and messages == [message]
    assert api.get(f"/repositories/{repo}/accessions", params={"all_ids": "true"}).json() == []


def nested(levels: int) -> str:
    """A string inside `levels` arrays, as JSON."""
    return "[" * levels + '"x"' + "]" * levels


# Where a record holds a value, and how deep the value itself lies: kept as given for the
# validator (a string's field, an extent that is no object), walked (a date's expression), or
# dropped (an unknown property, a read-only one).
PLACES = [
    ('"title": {}', 1),
    ('"extents": [{}]', 2),
    ('"dates": [{{"jsonmodel_type": "date", "date_type": "single", "label": "creation", "expression": {}}}]', 3),
    ('"unknown_property": {}', 1),
    ('"linked_events": {}', 1),
]


def test_the_process_judges_a_records_depth_as_the_server_does_wherever_it_lies(api, repo, validation):
    # The process checks depth as it normalises each record (no walk of its own before): one
    # level more than MAX_DEPTH is refused, and MAX_DEPTH itself judged on its merits, as in the
    # server. (One test for every place: each test starts the processes again.)
    for place, depth in PLACES:
        for past_limit in (False, True):
            levels = MAX_DEPTH - depth + past_limit  # the string inside lies at MAX_DEPTH (+ 1)

            def body(prefix: str, place=place, levels=levels) -> str:
                records = [orjson.dumps(record).decode() for record in accessions(repo, prefix, 3)]
                records[1] = records[1][:-1] + ", " + place.format(nested(levels)) + "}"
                return "[" + ",".join(records) + "]"

            assert_judged_alike(api, repo, validation, body, past_limit)


def test_the_process_judges_the_depth_of_subrecords_within_subrecords_as_the_server_does(api, repo, validation):
    # An outline's levels hold levels: a walk of the schema, each level two deeper than the one above.
    for past_limit in (False, True):

        def body(prefix: str, past_limit=past_limit) -> str:
            level = {"jsonmodel_type": "note_outline_level", "items": ["x"]}
            for _ in range(28 + past_limit):  # the innermost "x" at 64 (66: refused)
                level = {"jsonmodel_type": "note_outline_level", "items": [level]}
            outline = {"jsonmodel_type": "note_outline", "levels": [level]}
            note = {"jsonmodel_type": "note_bioghist", "subnotes": [outline]}
            agent = {
                "jsonmodel_type": "agent_person",
                "uri": f"/agents/people/import_{prefix}",
                "names": [{"primary_name": prefix, "name_order": "inverted", "source": "local", "sort_name_auto_generate": True}],
                "notes": [note],
            }
            return orjson.dumps([accessions(repo, prefix, 1)[0], agent]).decode()

        assert_judged_alike(api, repo, validation, body, past_limit)


def assert_judged_alike(api, repo, validation, body, past_limit: bool) -> None:
    """The batch `body(prefix)` is judged the same by the process and in the server, and refused
    as too deep (its second record) if `past_limit`."""
    answers = []
    for min_records in (1, 0):  # by the process, then in the server
        validation.min_records = min_records
        # Identifiers of their own: where nothing is refused, both imports are written.
        content = body(f"N{past_limit:d}{min_records}{time.monotonic_ns()}")
        response = api.post(f"/repositories/{repo}/batch_imports", content=content, headers={"content-type": "application/json"})
        answers.append((response.status_code, response.json()["error"] if response.status_code == 400 else None))
    assert answers[0] == answers[1], body("example")
    _, error = answers[0]
    too_deep = [path for path, messages in (error or {}).items() if messages == [f"Nested more than {MAX_DEPTH} levels deep"]]
    assert bool(too_deep) == past_limit, (body("example"), answers)
    if past_limit:
        assert too_deep[0].startswith("batch_import/1/")


def test_text_that_reads_like_an_escaped_nul_is_not_one(api, repo, validation, reading):
    # A backslash before "u0000" (in JSON, "C:\\u0000 drive"): the body holds the bytes of a NUL's escape,
    # so the process looks at every string, and finds none holding a NUL.
    records = accessions(repo, "E", 3)
    records[1]["title"] = "C:\\u0000 drive"
    response = api.post(f"/repositories/{repo}/batch_imports", json=records)
    assert response.status_code == 200, response.text
    uri = response.json()[-1]["saved"][f"/repositories/{repo}/accessions/import_E1"][0]
    assert api.get(uri).json()["title"] == "C:\\u0000 drive"


@pytest.mark.parametrize("settings_overrides", [{"strict_validation": True}])
def test_the_process_checks_values_against_the_lists_the_import_read(api, repo, validation):
    # Strict: a value outside an editable list is refused, not a warning.
    refused = api.post(f"/repositories/{repo}/batch_imports", json=accessions(repo, "L", 3))
    assert refused.status_code == 400
    assert refused.json()["error"] == {
        "batch_import/0/extents/0/extent_type": ["Value 'Reels' is not in the editable list extent_extent_type"]
    }
    add_values(api, EXTENTS, "Reels")
    response = api.post(f"/repositories/{repo}/batch_imports", json=accessions(repo, "L", 3))
    assert response.status_code == 200, response.text


def test_an_import_is_validated_in_the_server_when_the_process_is_gone(api, repo, validation, reading):
    pids = process_ids(validation)
    pool = validation._pool
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    assert wait_until(lambda: not any(alive(pid) for pid in pids))
    # Once the pool knows (an import sent to a process that died with it may have been written: 503).
    assert wait_until(lambda: pool._broken)
    response = api.post(f"/repositories/{repo}/batch_imports", json=accessions(repo, "K", 3))
    assert response.status_code == 200, response.text
    assert len(response.json()[-1]["saved"]) == 3
    # A later import starts the processes again.
    validation.start().result(timeout=120)
    assert process_ids(validation) and not set(process_ids(validation)) & set(pids)
    assert api.post(f"/repositories/{repo}/batch_imports", json=accessions(repo, "M", 3)).status_code == 200


def cpu_ticks(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def test_an_import_whose_writing_process_dies_is_refused_with_503_and_written_all_or_none(api, repo, validation):
    if validation.writer is None:
        pytest.skip("a test of the processes writing imports")
    pids = process_ids(validation)

    def settled() -> bool:  # done starting up
        ticks = [cpu_ticks(pid) for pid in pids]
        time.sleep(0.3)
        return ticks == [cpu_ticks(pid) for pid in pids]

    assert wait_until(settled)
    before = {pid: cpu_ticks(pid) for pid in pids}
    with ThreadPoolExecutor(1) as requests:
        # Seconds of work for the process that takes it: killed once it has begun.
        sent = requests.submit(api.post, f"/repositories/{repo}/batch_imports", json=accessions(repo, "X", 20_000))
        assert wait_until(lambda: any(cpu_ticks(pid) > before[pid] + 20 for pid in pids))
        for pid in pids:
            os.kill(pid, signal.SIGKILL)
        response = sent.result()
    assert response.status_code == 503, response.text
    # Not to be sent again as it is without a look (it may have been written): no Retry-After.
    assert "stopped before it answered" in response.json()["error"] and "Retry-After" not in response.headers
    stored = len(api.get(f"/repositories/{repo}/accessions", params={"all_ids": "true"}).json())
    assert stored in (0, 20_000)
    # The next import is written (in the server, then by processes started again).
    assert api.post(f"/repositories/{repo}/batch_imports", json=accessions(repo, "Y", 3)).status_code == 200
    validation.start().result(timeout=120)
    assert api.post(f"/repositories/{repo}/batch_imports", json=accessions(repo, "Z", 3)).status_code == 200


def children() -> set[int]:
    """This process's children, whichever of its threads started them."""
    found = set()
    for task in os.listdir(f"/proc/{os.getpid()}/task"):
        try:
            with open(f"/proc/{os.getpid()}/task/{task}/children") as listed:
                found.update(int(pid) for pid in listed.read().split())
        except FileNotFoundError:
            pass  # a thread that ended meanwhile
    return {pid for pid in found if alive(pid)}


def test_the_process_stops_once_idle_and_leaves_no_process_behind(api, repo, validation):
    assert api.post(f"/repositories/{repo}/batch_imports", json=accessions(repo, "I", 2)).status_code == 200
    pids = process_ids(validation)
    started = children()
    assert set(pids) <= started and len(started) >= len(pids) + 1  # the processes, and multiprocessing's resource tracker
    assert validation.stop_if_idle(idle_seconds=3600) is False
    assert validation.stop_if_idle(idle_seconds=0) is True
    assert wait_until(lambda: not children() & started)
    assert not validation.running
    # The next large import starts them again.
    validation.start().result(timeout=120)
    assert api.post(f"/repositories/{repo}/batch_imports", json=accessions(repo, "J", 2)).status_code == 200


def test_the_process_stops_with_the_app(settings):
    from fastapi.testclient import TestClient

    from fonds.app import create_app

    app = create_app(settings)
    with TestClient(app):
        validation = app.state.fonds.records.import_validation
        validation.start().result(timeout=120)
        assert wait_until(lambda: len(process_ids(validation)) == 1)
        pids = process_ids(validation)
    assert wait_until(lambda: not any(alive(pid) for pid in pids))


# What differs between two imports of the same records: when and as whom they were stored.
STAMPS = {"created", "modified", "create_time", "system_mtime", "user_mtime", "created_by", "last_modified_by"}


def tree_archive(repo: int, prefix: str) -> list[dict]:
    """A resource and its components (one placed at a position, one in its parent's resource by
    its parent alone, one with its own ref_id, a subject and a text that reads like a stand-in
    URI), an accession: each kind of record the process derives, or not."""
    base = f"/repositories/{repo}"
    resource, series = f"{base}/resources/import_{prefix}r", f"{base}/archival_objects/import_{prefix}series"

    def component(name: str, **fields) -> dict:
        return {"jsonmodel_type": "archival_object", "uri": f"{base}/archival_objects/import_{prefix}{name}", "title": name} | fields

    return [
        {"jsonmodel_type": "subject", "uri": f"/subjects/import_{prefix}s", "title": f"{prefix} topic", "source": "local", "terms": []},
        {"jsonmodel_type": "resource", "uri": resource, "title": "Papers", "id_0": f"{prefix}-R", "level": "collection"},
        component("series", level="series", resource={"ref": resource}, subjects=[{"ref": f"/subjects/import_{prefix}s"}]),
        component(
            "a",
            level="file",
            resource={"ref": resource},
            parent={"ref": series},
            dates=[{"begin": "1950", "date_type": "single", "label": "creation"}],
        ),
        component("b", level="file", resource={"ref": resource}, parent={"ref": series}, ref_id=f"{prefix}-own-ref"),
        component("first", level="file", resource={"ref": resource}, parent={"ref": series}, position=0),
        component("by parent", level="item", parent={"ref": f"{base}/archival_objects/import_{prefix}a"}),
        component(f"{base}/archival_objects/{2**63 + 2}", level="file", resource={"ref": resource}),  # its title reads like a stand-in URI
        {
            "jsonmodel_type": "accession",
            "uri": f"{base}/accessions/import_{prefix}acc",
            "title": "Gift",
            "id_0": f"{prefix}-A",
            "subjects": [{"ref": f"/subjects/import_{prefix}s"}],
        },
    ]


def stored_as_imported(api, repo: int, prefix: str) -> dict[str, dict]:
    """Each record of `tree_archive` as read back, by its temporary URI, with the URIs of the
    import's records given as their temporary ones; its stamps and generated ref_ids left out."""
    response = api.post(f"/repositories/{repo}/batch_imports", json=tree_archive(repo, prefix))
    assert response.status_code == 200, response.text
    saved = response.json()[-1]["saved"]
    temporary = {uri: temporary_uri.replace(f"import_{prefix}", "import_") for temporary_uri, (uri, _) in saved.items()}

    def plain(node):
        if isinstance(node, dict):
            return {key: plain(value) for key, value in node.items() if key not in STAMPS}
        if isinstance(node, list):
            return [plain(item) for item in node]
        if not isinstance(node, str):
            return node
        for uri, temporary_uri in temporary.items():
            if node == uri or node.startswith(f"{uri}/"):  # a resource's tree
                return temporary_uri + node[len(uri) :]
        return node.replace(prefix, "")

    records = {}
    for temporary_uri, (uri, _) in saved.items():
        record = api.get(uri).json()
        if record["jsonmodel_type"] == "archival_object" and record["ref_id"] != f"{prefix}-own-ref":
            assert len(record.pop("ref_id")) == 32
        records[temporary[uri]] = plain(record)
    return records


def test_records_the_process_derives_are_stored_as_the_server_stores_them(api, repo, validation, reading):
    by_process = stored_as_imported(api, repo, "Q1")
    validation.min_records = 0
    in_server = stored_as_imported(api, repo, "Q2")
    assert by_process == in_server
    base = f"/repositories/{repo}"
    series, first = by_process[f"{base}/archival_objects/import_series"], by_process[f"{base}/archival_objects/import_first"]
    assert series["display_string"] == "series" and series["subjects"] == [{"ref": "/subjects/import_s"}]
    assert first["position"] == 0 and by_process[f"{base}/archival_objects/import_a"]["display_string"] == "a, 1950"
    assert by_process[f"{base}/archival_objects/import_by parent"]["resource"] == {"ref": f"{base}/resources/import_r"}
    titled = by_process[f"{base}/archival_objects/import_{base}/archival_objects/{2**63 + 2}"]
    assert titled["title"] == f"{base}/archival_objects/{2**63 + 2}"
    assert by_process[f"{base}/accessions/import_acc"]["display_string"] == "Gift"
    assert all(
        record["repository"] == {"ref": base} and record["lock_version"] == 0
        for record in by_process.values()
        if "/repositories/" in record["uri"]
    )
