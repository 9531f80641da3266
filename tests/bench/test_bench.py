"""The benchmark runs end to end at a tiny scale against a real `fonds serve` (no timed assertions:
speed is what the bench reports, not what the suite checks)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import orjson

from bench import import_cost, load
from bench.generate import BIG_TREE_SHARE, Archive, plan
from bench.load import Loader, load_archive, refs_replaced, rewrite, saved_uris

ROOT = Path(__file__).resolve().parents[2]
MEASURED = {"throughput_rps", "p50_ms", "p95_ms", "p99_ms", "requests"}
ALWAYS_SERVED = [
    "get_one",
    "get_resolve",
    "list_10_first",
    "list_10_last",
    "list_250_first",
    "list_250_last",
    "all_ids",
    "login",
    "create",
    "update",
    "delete",
]


def test_generated_archive_refers_only_to_earlier_records():
    archive = Archive(7, 2, plan(400, agents=True, big_tree=40), global_prefix="t")
    seen, refs = set(), []

    def collect(value):
        if isinstance(value, dict):
            if "ref" in value:
                refs.append(value["ref"])
            for item in value.values():
                collect(item)
        elif isinstance(value, list):
            for item in value:
                collect(item)

    units = list(archive.units())
    for unit in units:
        seen |= {record["uri"] for record in unit}
        refs.clear()
        collect(unit)
        assert set(refs) <= seen
    kinds = {record["jsonmodel_type"] for unit in units for record in unit}
    assert kinds == {"subject", "agent_person", "top_container", "accession", "resource", "archival_object"}
    assert list(Archive(7, 2, plan(400, agents=True, big_tree=40), global_prefix="t").units()) == units  # seeded: the same archive again


def test_batch_import_answers_are_mapped_and_refs_rewritten():
    answer = [{"status": "Importing"}, {"saved": {"/repositories/2/resources/import_1": ["/repositories/2/resources/9", 9]}}]
    mapping = saved_uris(answer)
    assert mapping == {"/repositories/2/resources/import_1": "/repositories/2/resources/9"}
    record = {"resource": {"ref": "/repositories/2/resources/import_1"}, "parent": {"ref": "/repositories/2/archival_objects/import_1_0"}}
    assert rewrite(record, mapping) == {
        "resource": {"ref": "/repositories/2/resources/9"},
        "parent": {"ref": "/repositories/2/archival_objects/import_1_0"},
    }
    quoted = {'/subjects/import_"1"': "/subjects/4"}
    records = [record, {"uri": "/repositories/2/resources/import_1", "subjects": [{"ref": '/subjects/import_"1"'}]}]
    assert orjson.loads(refs_replaced(orjson.dumps(records), mapping | quoted)) == [
        rewrite(record, mapping),
        {"uri": "/repositories/2/resources/import_1", "subjects": [{"ref": "/subjects/4"}]},
    ]
    # Text that reads like a ref is text: only refs are rewritten, with or without escapes elsewhere.
    titled = [record | {"title": 'See "ref":"/repositories/2/resources/import_1"'}]
    assert orjson.loads(refs_replaced(orjson.dumps(titled), mapping)) == [rewrite(record, mapping) | {"title": titled[0]["title"]}]


class FakeServer:
    """batch_imports as the server answers it, refusing a ref to a record it has not created."""

    def __init__(self):
        self.created: dict[str, str] = {}
        self.requests: list[list[str]] = []  # each request's temporary URIs
        self.most_at_once = self.now = 0

    def connection(self, *args, **kwargs):
        server = self

        class Connection:
            async def request(self, method, path, body):
                server.now += 1
                server.most_at_once = max(server.most_at_once, server.now)
                await asyncio.sleep(0.001)  # the other request may go out meanwhile
                records = orjson.loads(body)
                own = {record["uri"] for record in records}
                refs = {found.decode() for found in load._REF.findall(body)}
                unknown = refs - own - set(server.created.values()) - {"/vocabularies/1"}
                server.now -= 1
                if unknown:
                    return 400, orjson.dumps({"error": sorted(unknown)[:3]})
                saved = {uri: [f"/real{len(server.created) + n}", 1] for n, uri in enumerate(records_uris(records))}
                server.created.update({uri: real for uri, (real, _) in saved.items()})
                server.requests.append(records_uris(records))
                return 200, orjson.dumps([{"saved": saved}])

            async def close(self):
                pass

        return Connection()


def records_uris(records):
    return [record["uri"] for record in records]


def test_units_are_packed_whole_into_chunks_and_sent_in_flight_together_once_their_refs_exist(monkeypatch):
    monkeypatch.setattr(load, "CHUNK", 300)
    server = FakeServer()
    loader = Loader("127.0.0.1", 1, "token", {"POST /repositories/{repo_id}/batch_imports"}, 2)
    monkeypatch.setattr(loader, "connection", server.connection)
    archive = Archive(7, 2, plan(3_000, agents=True, big_tree=600), global_prefix="t")
    units = list(Archive(7, 2, plan(3_000, agents=True, big_tree=600), global_prefix="t").units())

    result = asyncio.run(load_archive(loader, [("/repositories/2", archive)], lambda n: None))

    sizes = [len(uris) for uris in server.requests]
    assert result["records"] == sum(map(len, units)) == sum(sizes) == len(server.created)
    assert max(sizes) == 300
    request_of = {uri: n for n, uris in enumerate(server.requests) for uri in uris}
    small = [unit for unit in units if len(unit) <= 300]
    assert len(small) > 5  # collections of ~150 share requests, none split over two
    for unit in small:
        assert len({request_of[record["uri"]] for record in unit}) == 1
    large = [unit for unit in units if len(unit) > 300]
    assert large  # a list of subjects, the big tree: split where a request is full
    for unit in large:
        holding = sorted({request_of[record["uri"]] for record in unit})
        assert [sizes[n] for n in holding[:-1]] == [300] * (len(holding) - 1)
    assert server.most_at_once == load.IN_FLIGHT == 3
    assert set(loader.mapping) == set(server.created)


def test_a_chunk_waiting_for_an_earlier_ones_answer_lets_the_chunks_after_it_go():
    # A tree in three chunks, each referring to the one before, then three collections on their own.
    def record(uri, parent=None):
        return {"uri": uri, **({"parent": {"ref": parent}} if parent else {})}

    tree = [load._chunk("/repositories/2", [record(f"/t/{n}", f"/t/{n - 1}" if n else None)]) for n in range(3)]
    alone = [load._chunk("/repositories/2", [record(f"/c/{n}")]) for n in range(3)]
    server = FakeServer()
    sent: list[str] = []
    connection = server.connection

    def recording_connection():
        inner = connection()

        class Recording:
            async def request(self, method, path, body):
                sent.append(orjson.loads(body)[0]["uri"])
                return await inner.request(method, path, body)

            async def close(self):
                pass

        return Recording()

    loader = Loader("127.0.0.1", 1, "token", {"POST /repositories/{repo_id}/batch_imports"}, 2)
    loader.connection = recording_connection

    async def send_all():
        chunks = load.Chunks(loader)
        for chunk in [*tree, *alone]:
            await chunks.send(chunk)
        await chunks.finish()

    asyncio.run(send_all())

    assert sent[:3] == ["/t/0", "/c/0", "/c/1"]  # the second part of the tree waits for the first's answer; the others go
    assert sent.index("/t/1") < sent.index("/t/2")
    assert sorted(sent) == sorted(["/t/0", "/t/1", "/t/2", "/c/0", "/c/1", "/c/2"])
    assert set(loader.mapping) == set(sent)


def test_bench_runs_against_a_real_server(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("FONDS_")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), str(ROOT)])
    command = [sys.executable, "-m", "bench", "--records", "50", "--duration", "0.2", "--clients", "2", "--client", "python"]
    command += ["--results-dir", str(tmp_path / "results"), "--docs", str(tmp_path / "performance.md")]
    if os.environ.get("FONDS_TEST_DATABASE_URL"):
        command += ["--database-url", os.environ["FONDS_TEST_DATABASE_URL"]]
    run = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=180)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]

    [path] = (tmp_path / "results").glob("*.json")
    result = json.loads(path.read_text())
    assert path.name.endswith(f"-{result['db']}.json")
    assert result["load"]["records"] >= 50 and result["load"]["records_per_s"] > 0
    assert result["ceiling"]["python"]["throughput_rps"] > 0
    for name in ALWAYS_SERVED:
        figures = result["scenarios"][name]
        assert figures["available"] and "failed" not in figures, (name, figures)
        assert all(isinstance(figures[key], int | float) and figures[key] > 0 for key in MEASURED), (name, figures)
        assert figures["errors"] == 0, (name, figures)
        assert figures["ratio_to_ceiling"]["throughput"] > 0
    for figures in result["scenarios"].values():
        assert "available" in figures  # routes not served yet are reported, not crashed on
    assert result["server_rss_mb"]["at_rest"] > 0 and result["server_rss_mb"]["under_load_peak"] > 0
    rss = result["server_rss_mb"]
    assert 0 < rss["anonymous_at_rest"] <= rss["at_rest"] and 0 < rss["anonymous_under_load_peak"] <= rss["under_load_peak"]
    assert result["database_bytes"] > 0
    page = (tmp_path / "performance.md").read_text()
    assert "| GET one accession | python |" in page
    assert "No previous" in run.stdout


def test_the_page_shows_the_newest_run_of_each_database(tmp_path):
    from bench import report

    stored = json.loads((ROOT / "bench" / "results" / "2026-11-24-sqlite.json").read_text())
    older_pg = {**stored, "db": "postgresql", "date": "2026-11-20T00:00:00Z"}
    newer_pg = {**stored, "db": "postgresql", "date": "2026-11-22T00:00:00Z"}
    for result in (older_pg, newer_pg):
        report.write(result, tmp_path)
    current = {**stored, "date": "2026-11-25T00:00:00Z"}
    page = report.page(report.newest_per_database(tmp_path, current))
    assert page.index("## sqlite") < page.index("## postgresql")
    assert "Run 2026-11-25T00:00:00Z on **sqlite**" in page
    assert "Run 2026-11-22T00:00:00Z on **postgresql**" in page
    assert "2026-11-20" not in page


def test_the_page_keeps_the_newest_run_of_each_scale(tmp_path):
    from bench import report

    stored = json.loads((ROOT / "bench" / "results" / "2026-11-24-sqlite.json").read_text())

    def run(db: str, scale: str, date: str) -> dict:
        return {**stored, "db": db, "date": date, "settings": {**stored["settings"], "scale": scale}}

    for result in (run("sqlite", "large", "2026-11-20T00:00:00Z"), run("sqlite", "medium", "2026-11-21T00:00:00Z")):
        report.write(result, tmp_path)
    report.write(run("postgresql", "medium", "2026-11-22T00:00:00Z"), tmp_path)
    current = run("sqlite", "medium", "2026-11-25T00:00:00Z")
    page = report.page(report.newest_per_database(tmp_path, current))
    headings = [line for line in page.splitlines() if line.startswith("## ")]
    assert headings == ["## sqlite, scale large", "## sqlite, scale medium", "## postgresql, scale medium"]
    assert "Run 2026-11-20T00:00:00Z on **sqlite**, scale **large**" in page
    assert "Run 2026-11-25T00:00:00Z on **sqlite**, scale **medium**" in page
    assert "2026-11-21" not in page
    assert report.previous(tmp_path, "sqlite", "large")["date"] == "2026-11-20T00:00:00Z"


def test_two_runs_of_a_day_at_two_scales_keep_a_file_each_and_the_later_is_previous(tmp_path):
    from bench import report

    stored = json.loads((ROOT / "bench" / "results" / "2026-11-24-sqlite.json").read_text())
    later = {**stored, "date": "2026-11-26T21:00:00Z", "settings": {**stored["settings"], "scale": "medium"}}
    earlier = {**stored, "date": "2026-11-26T09:00:00Z", "settings": {**stored["settings"], "scale": "large"}}
    paths = [report.write(result, tmp_path) for result in (later, earlier)]
    assert sorted(p.name for p in paths) == ["2026-11-26-large-sqlite.json", "2026-11-26-medium-sqlite.json"]
    assert report.previous(tmp_path, "sqlite")["date"] == "2026-11-26T21:00:00Z"


def test_the_change_against_the_previous_run_shows_the_ratio_and_a_change_of_client():
    """Hosts differ in speed (the ratio to the ceiling of the same run is what compares), and wrk
    reaches rates the Python client does not: a change of client is not the server's."""
    from bench import report

    before = json.loads((ROOT / "bench" / "results" / "2026-11-29-large-sqlite.json").read_text())
    after = json.loads(json.dumps(before))
    after["scenarios"]["get_one"].update(tool="python", throughput_rps=10_000.0, ratio_to_ceiling={"throughput": 0.5})
    lines = {line.split()[0]: line for line in report.changes(after, before)[1:]}
    ratio = {name: before["scenarios"][name]["ratio_to_ceiling"]["throughput"] for name in ("get_one", "create")}
    assert lines["get_one"].endswith(f"of the ceiling {ratio['get_one']:.3f} -> 0.500 (client wrk -> python: not comparable)")
    assert lines["create"].endswith(f"of the ceiling {ratio['create']:.3f} -> {ratio['create']:.3f}")


def test_import_cost_imports_the_whole_archive_through_the_validating_task_and_the_server_import():
    # Its figures are the CPU of each part: only that both parts ran over every record is checked.
    figures = import_cost.run(records=300, seed=3, count=None)
    archive = Archive(3, 2, plan(300, agents=True, big_tree=int(300 * BIG_TREE_SHARE)), global_prefix="c_")
    assert figures["records"] == sum(len(unit) for unit in archive.units())
    assert figures["server_us_per_record"] > 0 and figures["validator_us_per_record"] > 0
