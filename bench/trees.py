"""Trees at scale, against a running `fonds serve` over HTTP.

Builds a resource of N archival objects (default 100,000) through the batch children route:
one series with 20,000 direct children, a branch six levels deep, the rest in sub-series of
2,000. Then measures tree/root, a waypoint of the 20,000-child node, tree/node at depth 6 and
moves to the front of the 20,000 siblings (p50/p95), checks the order, times the delete of the
whole resource while another client keeps reading, and prints one JSON line of figures.

    FONDS_DATA_DIR=/tmp/b FONDS_ADMIN_PASSWORD=admin fonds serve --port 8099 &
    python -m bench.trees --url http://127.0.0.1:8099 --password admin [--total 100000]
"""

from __future__ import annotations

import argparse
import json
import statistics
import threading
import time

import httpx

WIDE = 20_000
BATCH = 2_000


def percentiles(samples: list[float]) -> dict:
    ordered = sorted(samples)
    return {"p50_ms": round(statistics.median(ordered) * 1000, 1), "p95_ms": round(ordered[int(len(ordered) * 0.95) - 1] * 1000, 1)}


class Bench:
    def __init__(self, url: str, password: str):
        self.http = httpx.Client(base_url=url, timeout=600)
        token = self.http.post("/users/admin/login", data={"password": password}).json()["session"]
        self.http.headers["X-ArchivesSpace-Session"] = token
        self.created = 0
        self.load_seconds = 0.0

    def ok(self, response: httpx.Response) -> dict | list:
        assert response.status_code == 200, response.text[:500]
        return response.json()

    def children(self, target: str, titles: list[str]) -> None:
        for start in range(0, len(titles), BATCH):
            chunk = titles[start : start + BATCH]
            body = {
                "jsonmodel_type": "archival_record_children",
                "children": [{"title": t, "level": "file", "publish": True} for t in chunk],
            }
            began = time.perf_counter()
            self.ok(self.http.post(f"{target}/children", json=body))
            self.load_seconds += time.perf_counter() - began
            self.created += len(chunk)

    def waypoint(self, resource: str, parent: str | None, offset: int = 0) -> list[dict]:
        params = {"offset": offset, **({"parent_node": parent} if parent else {})}
        return self.ok(self.http.get(f"{resource}/tree/waypoint", params=params))

    def build(self, repo: int, total: int, wide: int = WIDE) -> dict:
        resource = self.ok(
            self.http.post(f"/repositories/{repo}/resources", json={"jsonmodel_type": "resource", "title": "Bench", "publish": True})
        )["uri"]
        self.children(resource, ["S0", "S1", "S2", "S3", "S4"])
        s0, s1, *rest = (e["uri"] for e in self.waypoint(resource, None))
        self.children(s0, [f"wide {i:05d}" for i in range(wide)])
        chain = [s1]
        for depth, width in ((2, 20), (3, 50), (4, 25), (5, 10), (6, 10)):
            self.children(chain[-1], [f"d{depth} {i}" for i in range(width)])
            chain.append(self.waypoint(resource, chain[-1])[0]["uri"])
        remaining, n = total - self.created, 0
        while remaining > 0:
            holder = rest[n % len(rest)]
            self.children(holder, [f"sub {n}"])
            sub = self.waypoint(resource, holder, (n // len(rest)) // 200)[(n // len(rest)) % 200]["uri"]
            self.children(sub, [f"f {n}.{i}" for i in range(min(BATCH, remaining - 1))])
            remaining, n = total - self.created, n + 1
        return {"resource": resource, "wide": s0, "leaf": chain[-1]}

    def existing(self, resource: str) -> dict:
        """A tree built earlier by `build` (maybe cut short): its widest node and deepest leaf."""
        s0, s1 = (e["uri"] for e in self.waypoint(resource, None)[:2])
        node = s1
        for depth in range(2, 7):
            if not self.waypoint(resource, node):  # the run stopped before the deep branch: add it
                self.children(node, [f"d{depth} 0"])
            node = self.waypoint(resource, node)[0]["uri"]
        self.wide = self.ok(self.http.get(f"{resource}/tree/node", params={"node_uri": s0}))["child_count"]
        self.created = len(self.ok(self.http.get(f"{resource}/ordered_records"))["uris"]) - 1
        return {"resource": resource, "wide": s0, "leaf": node}

    def timed(self, count: int, call) -> dict:
        samples = []
        for i in range(count):
            began = time.perf_counter()
            call(i)
            samples.append(time.perf_counter() - began)
        return percentiles(samples)

    def measure(self, tree: dict, repo: int) -> dict:
        resource, wide = tree["resource"], tree["wide"]
        figures = {"components": self.created, "wide_children": self.wide}
        if self.load_seconds:
            figures["load_rate_per_s"] = round(self.created / self.load_seconds)
        figures["tree_root"] = self.timed(50, lambda i: self.ok(self.http.get(f"{resource}/tree/root")))
        figures["waypoint_of_wide_node"] = self.timed(50, lambda i: self.waypoint(resource, wide, (i * 37) % -(-self.wide // 200)))
        figures["tree_node_depth_6"] = self.timed(
            50, lambda i: self.ok(self.http.get(f"{resource}/tree/node", params={"node_uri": tree["leaf"]}))
        )
        wide_id = wide.rsplit("/", 1)[1]
        pages = -(-self.wide // 200)
        last = [e["uri"] for e in self.waypoint(resource, wide, pages - 1)]
        figures["move_to_front_of_wide"] = self.timed(
            20, lambda i: self.ok(self.http.post(f"{last[-1 - i]}/parent", params={"parent": wide_id, "position": 0}))
        )
        first = self.waypoint(resource, wide, 0)
        assert [e["uri"] for e in first[:20]] == last[-20:], "moved nodes are not at the front in order"
        assert [e["position"] for e in self.waypoint(resource, wide, pages - 1)] == list(range((pages - 1) * 200, self.wide))
        figures["delete_resource"] = self.delete_while_reading(resource, repo)
        return figures

    def delete_while_reading(self, resource: str, repo: int) -> dict:
        """Delete the resource while another client reads something else; report both."""
        other = self.ok(self.http.post(f"/repositories/{repo}/resources", json={"jsonmodel_type": "resource", "title": "Other"}))["uri"]
        reader = httpx.Client(base_url=str(self.http.base_url), headers=dict(self.http.headers), timeout=600)
        done, reads = threading.Event(), []

        def read_meanwhile():
            while not done.is_set():
                began = time.perf_counter()
                assert reader.get(f"{other}/tree/root").status_code == 200
                reads.append(time.perf_counter() - began)

        thread = threading.Thread(target=read_meanwhile)
        thread.start()
        began = time.perf_counter()
        self.ok(self.http.delete(resource))
        seconds = time.perf_counter() - began
        done.set()
        thread.join()
        assert self.http.get(f"{resource}/tree/root").status_code == 404
        return {"seconds": round(seconds, 2), "reads_meanwhile": len(reads), "slowest_read_ms": round(max(reads, default=0) * 1000, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="http://127.0.0.1:8099")
    parser.add_argument("--password", default="admin")
    parser.add_argument("--total", type=int, default=100_000)
    parser.add_argument("--wide", type=int, default=WIDE, help="children of the widest node")
    parser.add_argument("--resource", help="measure this resource, built earlier (by a run cut short), instead of building one")
    args = parser.parse_args()
    bench = Bench(args.url, args.password)
    bench.wide = args.wide
    if args.resource:
        repo = int(args.resource.split("/")[2])
        print(json.dumps(bench.measure(bench.existing(args.resource), repo)))
        return
    repo = bench.ok(
        bench.http.post("/repositories", json={"jsonmodel_type": "repository", "repo_code": f"B{int(time.time())}", "name": "Bench"})
    )["id"]
    began = time.perf_counter()
    tree = bench.build(repo, args.total, args.wide)
    print(f"built {bench.created} components in {time.perf_counter() - began:.0f} s", flush=True)
    print(json.dumps(bench.measure(tree, repo)))


if __name__ == "__main__":
    main()
