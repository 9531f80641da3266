"""One bench run: servers up, archive loaded, every scenario measured, figures gathered."""

from __future__ import annotations

import asyncio
import os
import secrets
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from multiprocessing import get_context
from pathlib import Path

import httpx

from bench import drive, environment, processes, wrk
from bench.generate import BIG_TREE_SHARE, SCALES, Archive, plan
from bench.load import Loader, load_archive
from bench.processes import Sampler
from bench.scenarios import CREATE, DELETE, LOGIN, LOGIN_32, NEW_ACCESSION, UPDATE, Scenario, read_scenarios, search_path

HOST = "127.0.0.1"
MB = 1024 * 1024


@dataclass
class Options:
    scale: str = "small"
    database_url: str | None = None
    workers: int = 1
    clients: int = 8
    duration: float = 5.0
    seed: int = 1
    tool: str = "auto"  # auto: wrk for fixed GETs when installed; python: the asyncio driver for all
    records: int | None = None  # overrides the scale's count
    log: object = print


class Bench:
    def __init__(self, options: Options, data_dir: Path, database_url: str | None):
        self.o, self.data_dir, self.database_url = options, data_dir, database_url
        self.password = secrets.token_urlsafe(16)
        self.executor = ProcessPoolExecutor(max_workers=1, mp_context=get_context("spawn"))
        self.use_wrk = options.tool == "auto" and wrk.available()
        if options.tool == "auto" and not self.use_wrk:
            # Its figures are then not comparable with runs that had it (the Python client's
            # ceiling and ratios are lower), which the published page's runs do.
            self.o.log("wrk not found: every GET is driven by the Python client (apt-get install wrk for wrk's figures)")

    # -- servers ------------------------------------------------------------------------
    def start_servers(self) -> None:
        log_path = self.data_dir / "servers.log"
        self.ceiling_port, self.port = processes.free_port(), processes.free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith("FONDS_")}
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(Path(__file__).resolve().parent.parent), env.get("PYTHONPATH")) if p)
        ceiling = [sys.executable, "-m", "bench.ceiling", "--port", str(self.ceiling_port), "--workers", str(self.o.workers)]
        self.ceiling = processes.start(ceiling, env=env, log_path=log_path, probe_url=f"http://{HOST}:{self.ceiling_port}/")
        # Like for like: the ceiling writes no access log either (FONDS_ACCESS_LOG costs ~35 µs a request).
        env.update(FONDS_DATA_DIR=str(self.data_dir / "fonds"), FONDS_ADMIN_PASSWORD=self.password, FONDS_ACCESS_LOG="false")
        if self.database_url:
            env["FONDS_DATABASE_URL"] = self.database_url
        self.server_env = env
        serve = [sys.executable, "-m", "fonds", "serve", "--host", HOST, "--port", str(self.port), "--workers", str(self.o.workers)]
        self.server = processes.start(serve, env=env, log_path=log_path, probe_url=f"http://{HOST}:{self.port}/version")
        self.http = httpx.Client(base_url=f"http://{HOST}:{self.port}", timeout=120)
        self.token = self.http.post("/users/admin/login", data={"password": self.password}).raise_for_status().json()["session"]
        self.http.headers["X-ArchivesSpace-Session"] = self.token
        spec = self.http.get("/openapi.json").raise_for_status().json()
        self.routes = {f"{method.upper()} {path}" for path, item in spec["paths"].items() for method in item}

    def close(self) -> None:
        self.executor.shutdown(wait=False, cancel_futures=True)
        processes.stop_all()

    # -- the archive --------------------------------------------------------------------
    def load(self) -> dict:
        total = self.o.records or SCALES[self.o.scale]
        agents = "POST /agents/people" in self.routes
        repo_count = {"tiny": 1, "small": 2, "medium": 3, "large": 4}[self.o.scale]
        shares = [0.7] + [0.3 / (repo_count - 1)] * (repo_count - 1) if repo_count > 1 else [1.0]
        archives, self.counts = [], {"repositories": repo_count}
        for index, share in enumerate(shares):
            body = {"jsonmodel_type": "repository", "repo_code": f"BENCH{index + 1}", "name": f"Bench repository {index + 1}"}
            repo = self.http.post("/repositories", json=body).raise_for_status().json()["uri"]
            p = plan(int(total * share), agents=agents, big_tree=int(total * BIG_TREE_SHARE) if index == 0 else 0)
            archives.append((repo, Archive(self.o.seed + index, int(repo.rsplit("/", 1)[1]), p, global_prefix=f"r{index + 1}_")))
            for kind, n in vars(p).items():
                self.counts[kind] = self.counts.get(kind, 0) + n
        self.repo, self.plan = archives[0][0], archives[0][1].plan
        loader = Loader(HOST, self.port, self.token, self.routes, self.o.clients)
        self.o.log(f"loading {sum(v for k, v in self.counts.items() if k != 'repositories'):,} records via {loader.path} …")
        with Sampler(self.server.pid) as sampler:
            result = asyncio.run(load_archive(loader, archives, lambda n: None))
        self.mapping = loader.mapping
        # The server's processes during the load (the process validating large imports included).
        result.update(rss_peak_mb=round(sampler.peak / MB, 1), server_cores=round(sampler.cpu / result["seconds"], 2))
        return result

    def targets(self) -> dict:
        acc = self.http.get(f"{self.repo}/accessions", params={"page": 1, "page_size": 10}).raise_for_status().json()
        last_250 = self.http.get(f"{self.repo}/accessions", params={"page": 1, "page_size": 250}).raise_for_status().json()["last_page"]
        ao = self.http.get(f"{self.repo}/archival_objects", params={"page": 1, "page_size": 1}).raise_for_status().json()
        big = self.mapping.get(f"{self.repo}/resources/import_1", f"{self.repo}/resources/1")
        size = self.plan.big_tree or self.plan.components
        inner = [self.mapping.get(f"{self.repo}/archival_objects/import_1_{i}") for i in (size - 2, 0)]
        return {
            "repo": self.repo,
            "accession": acc["results"][0]["uri"],
            "accessions": acc["total"],
            "last_10": acc["last_page"],
            "last_250": last_250,
            "archival_objects": ao["total"],
            "ao_last_10": max(1, -(-ao["total"] // 10)),
            "archival_object": ao["results"][0]["uri"] if ao["results"] else f"{self.repo}/archival_objects/1",
            "resource": big,
            "deep_node": inner[0] or inner[1] or "",
            "wide_node": inner[1] or "",
        }

    # -- measuring ----------------------------------------------------------------------
    def measure(self, pid: int, port: int, scenario: Scenario, spec: dict, clients: int) -> dict:
        use_wrk = self.use_wrk and scenario.fixed_get
        base = {"host": HOST, "port": port, "clients": clients, "duration": self.o.duration, "kind": scenario.kind}
        with Sampler(pid) as sampler:
            if use_wrk:
                figures = wrk.run(
                    f"http://{HOST}:{port}{spec['requests'][0]['path']}",
                    clients=clients,
                    duration=self.o.duration,
                    headers=self._headers(spec),
                )
            else:
                figures = self.executor.submit(drive.run, {**base, **spec}).result(timeout=self.o.duration + 300)
        figures.update(
            tool="wrk" if use_wrk else "python",
            clients=clients,
            rss_peak_mb=round(sampler.peak / MB, 1),
            anonymous_rss_peak_mb=round(sampler.anonymous_peak / MB, 1),
        )
        if figures["requests"]:
            figures["server_cpu_ms_per_request"] = round(sampler.cpu * 1000 / figures["requests"], 3)
        return figures

    def _headers(self, spec: dict) -> dict:
        return {"X-ArchivesSpace-Session": spec["token"]} if spec.get("token") else {}

    def _python_ceiling(self) -> dict:
        self_use, self.use_wrk = self.use_wrk, False
        try:
            return self.measure(
                self.ceiling.pid, self.ceiling_port, Scenario("ceiling", "", "", path="/"), {"requests": [{"path": "/"}]}, self.o.clients
            )
        finally:
            self.use_wrk = self_use

    def run_scenario(self, scenario: Scenario, spec: dict, clients: int | None = None) -> dict:
        if scenario.route not in self.routes:
            return {"label": scenario.label, "available": False, "reason": f"{scenario.route} is not served"}
        if scenario.fixed_get:
            probe = self.http.get(spec["requests"][0]["path"])
            if probe.status_code == 404:
                return {"label": scenario.label, "available": False, "reason": f"404 for {spec['requests'][0]['path']}"}
            if probe.status_code != 200:
                return {"label": scenario.label, "available": True, "failed": f"{probe.status_code} {probe.text[:300]}"}
        self.o.log(f"  {scenario.label} …")
        figures = self.measure(self.server.pid, self.port, scenario, {"token": self.token, **spec}, clients or self.o.clients)
        return {"label": scenario.label, "available": True, **figures}

    def scenarios(self, targets: dict) -> dict:
        results = {}
        for scenario in read_scenarios(targets):
            results[scenario.name] = self.run_scenario(scenario, {"requests": [{"path": scenario.path}]}, scenario.clients)
        for login in (LOGIN, LOGIN_32):
            results[login.name] = self.run_scenario(login, {"username": "admin", "password": self.password, "token": None}, login.clients)
        create = self.run_scenario(CREATE, {"path": f"{self.repo}/accessions", "record": NEW_ACCESSION})
        created = create.pop("created", [])
        results["create"] = create
        records = [self.http.get(uri).json() for uri in created[: self.o.clients * 10]]
        if records:
            results["update"] = self.run_scenario(UPDATE, {"records": records})
        results["delete"] = (
            self.run_scenario(DELETE, {"uris": created})
            if created
            else {"label": DELETE.label, "available": False, "reason": "nothing created"}
        )
        return results

    def searchability(self, samples: int) -> dict:
        """Seconds from a create's response until a search finds the new record."""
        if "GET /repositories/{repo_id}/search" not in self.routes:
            return {"available": False, "reason": "GET /repositories/{repo_id}/search is not served"}
        delays = []
        for _ in range(samples):
            word = "zq" + secrets.token_hex(5)
            body = {**NEW_ACCESSION, "title": f"Searchability {word}", "id_1": word, "id_2": "1"}
            uri = self.http.post(f"{self.repo}/accessions", json=body).raise_for_status().json()["uri"]
            start = time.perf_counter()
            while time.perf_counter() - start < 30:
                found = self.http.get(search_path(self.repo, q=word))
                if found.status_code == 200 and uri in found.text:
                    delays.append(time.perf_counter() - start)
                    break
                time.sleep(0.005)
        if not delays:
            return {"available": True, "failed": "no created record became searchable within 30 s"}
        delays.sort()
        return {
            "available": True,
            "samples": len(delays),
            "p50_ms": round(delays[len(delays) // 2] * 1000, 2),
            "p95_ms": round(delays[max(0, -(-len(delays) * 95 // 100) - 1)] * 1000, 2),
            "max_ms": round(delays[-1] * 1000, 2),
        }

    def index_catch_up(self, limit_s: float = 3600) -> dict:
        """Seconds from the end of the load until the search index has applied every change."""
        if "GET /search/status" not in self.routes:
            return {"available": False, "reason": "GET /search/status is not served"}
        began = time.perf_counter()
        while time.perf_counter() - began < limit_s:
            if self.http.get("/search/status").raise_for_status().json()["lag"] == 0:
                return {"available": True, "seconds": round(time.perf_counter() - began, 1)}
            time.sleep(0.5)
        return {"available": True, "failed": f"still behind after {limit_s:.0f} s"}

    def reindex(self) -> dict:
        """`fonds reindex` over the loaded archive while the server keeps serving: its wall
        time and the documents it indexed per second."""
        if "GET /search/status" not in self.routes:
            return {"available": False, "reason": "GET /search/status is not served"}
        command = [sys.executable, "-m", "fonds", "reindex"]
        began = time.perf_counter()
        done = subprocess.run(command, env=self.server_env, capture_output=True, text=True, timeout=3600)
        seconds = time.perf_counter() - began
        if done.returncode != 0:
            return {"available": True, "failed": (done.stderr or done.stdout)[-300:]}
        documents = self.http.get("/search/status").raise_for_status().json()["documents"]
        return {"available": True, "documents": documents, "seconds": round(seconds, 2), "documents_per_s": round(documents / seconds)}


def execute(options: Options) -> dict:
    """The whole run; every process it starts is stopped before it returns or raises."""
    with tempfile.TemporaryDirectory(prefix="fonds-bench-") as tmp:
        data_dir = Path(tmp)
        with environment.database(options.database_url, data_dir) as database_url:
            bench = Bench(options, data_dir, database_url)
            try:
                return _measure_all(bench, options, database_url, data_dir)
            finally:
                bench.close()


def _measure_all(bench: Bench, options: Options, database_url: str | None, data_dir: Path) -> dict:
    log = options.log
    result = {"format": 1, "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "db": "postgresql" if database_url else "sqlite"}
    result["machine"], result["versions"] = environment.machine(), environment.versions(database_url)
    bench.start_servers()
    start_rss, start_anonymous = processes.memory_bytes(bench.server.pid)
    result["settings"] = {
        "scale": options.scale if not options.records else f"{options.records} records",
        "seed": options.seed,
        "workers": options.workers,
        "clients": options.clients,
        "duration_s": options.duration,
    }
    result["settings"]["client"] = "wrk (fixed GETs) + asyncio driver (the rest)" if bench.use_wrk else "asyncio driver"
    result["load"] = bench.load()
    result["records"] = bench.counts
    log(f"loaded {result['load']['records']:,} records in {result['load']['seconds']} s ({result['load']['records_per_s']:,}/s)")
    # Measured at rest: an indexer still working through the load would take the CPU the requests need.
    result["index_catch_up"] = bench.index_catch_up()
    log(f"search index caught up {result['index_catch_up'].get('seconds')} s after the load")
    time.sleep(1)
    rest, rest_anonymous = processes.memory_bytes(bench.server.pid)
    log("ceiling …")
    result["ceiling"] = (
        {
            "wrk": bench.measure(
                bench.ceiling.pid, bench.ceiling_port, Scenario("ceiling", "", "", path="/"), {"requests": [{"path": "/"}]}, options.clients
            )
        }
        if bench.use_wrk
        else {}
    )
    result["ceiling"]["python"] = bench._python_ceiling()
    processes.stop(bench.ceiling)  # it would otherwise take CPU from the server
    result["scenarios"] = bench.scenarios(bench.targets())
    result["searchability"] = bench.searchability(3 if options.duration < 2 else 20)
    log("reindex …")
    result["reindex"] = bench.reindex()
    peaks = [s.get("rss_peak_mb", 0) for s in result["scenarios"].values()]
    anonymous_peaks = [s.get("anonymous_rss_peak_mb", 0) for s in result["scenarios"].values()]
    result["server_rss_mb"] = {
        "at_start": round(start_rss / MB, 1),
        "at_rest": round(rest / MB, 1),
        "under_load_peak": max(peaks, default=0),
        "anonymous_at_start": round(start_anonymous / MB, 1),
        "anonymous_at_rest": round(rest_anonymous / MB, 1),
        "anonymous_under_load_peak": max(anonymous_peaks, default=0),
    }
    result["database_bytes"] = environment.database_bytes(database_url, data_dir / "fonds")
    add_ratios(result)
    return result


def add_ratios(result: dict) -> None:
    """Each figure beside the ceiling measured by the same client tool: throughput as a
    fraction of the ceiling's, latencies as multiples of the ceiling's."""
    for figures in result["scenarios"].values():
        ceiling = result["ceiling"].get(figures.get("tool", ""))
        if not ceiling or not figures.get("requests") or figures.get("clients") != ceiling.get("clients"):
            continue  # the ceiling is measured with the run's clients only
        figures["ratio_to_ceiling"] = {
            "throughput": round(figures["throughput_rps"] / ceiling["throughput_rps"], 4),
            **{key: round(figures[key] / ceiling[key], 2) for key in ("p50_ms", "p95_ms", "p99_ms") if ceiling[key]},
        }
