"""The results file, docs/performance.md, and the change against the previous run."""

from __future__ import annotations

import json
from pathlib import Path

ORDER = [
    "get_one", "get_resolve", "list_10_first", "list_10_last", "list_10_first_1", "list_10_last_1", "ao_list_10_last_1",
    "list_250_first", "list_250_last", "all_ids",
    "search_term", "search_phrase", "search_boolean", "search_faceted", "tree_root", "tree_waypoint", "tree_node",
    "login", "login_32", "create", "update", "delete",
]  # fmt: skip


def previous(results_dir: Path, db: str, scale: str | None = None) -> dict | None:
    """The newest earlier result for this database (by when it ran), if any; of this scale
    only, when given (a run is compared with one of its own size)."""
    found = [json.loads(path.read_text()) for path in results_dir.glob(f"*-{db}.json")]
    found = [result for result in found if scale is None or _scale(result) == scale]
    return max(found, key=lambda result: result["date"], default=None)


def _scale(result: dict) -> str:
    return str(result["settings"]["scale"])


def write(result: dict, results_dir: Path) -> Path:
    """`<date>-<scale>-<db>.json`: a day's runs at two scales keep a file each."""
    results_dir.mkdir(parents=True, exist_ok=True)
    scale = str(result["settings"]["scale"]).replace(" ", "_")
    path = results_dir / f"{result['date'][:10]}-{scale}-{result['db']}.json"
    path.write_text(json.dumps(result, indent=2) + "\n")
    return path


def _n(value, digits: int = 1) -> str:
    return "—" if value is None else f"{value:,.{digits}f}"


def rows(result: dict) -> list[str]:
    lines = [
        "| call | client | req/s | ÷ ceiling | p50 ms | p95 ms | p99 ms | server CPU ms/req | peak RSS MB | errors |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for tool, ceiling in result["ceiling"].items():
        lines.append(
            f"| **ceiling** (bare Starlette) | {tool} | {_n(ceiling['throughput_rps'], 0)} | 1 | {_n(ceiling['p50_ms'], 2)} | {_n(ceiling['p95_ms'], 2)} "
            f"| {_n(ceiling['p99_ms'], 2)} | {_n(ceiling.get('server_cpu_ms_per_request'), 3)} | {_n(ceiling['rss_peak_mb'])} | {ceiling['errors']} |"
        )
    for name in ORDER:
        s = result["scenarios"].get(name)
        if s is None:
            continue
        if not s.get("available"):
            lines.append(f"| {s['label']} | — | not available | | | | | | | |")
        elif "failed" in s:
            lines.append(f"| {s['label']} | — | failed: {s['failed'][:80]} | | | | | | | |")
        else:
            ratio = s.get("ratio_to_ceiling", {}).get("throughput")
            lines.append(
                f"| {s['label']} | {s['tool']} | {_n(s['throughput_rps'], 0)} | {_n(ratio, 3)} | {_n(s['p50_ms'], 2)} | {_n(s['p95_ms'], 2)} | {_n(s['p99_ms'], 2)} "
                f"| {_n(s.get('server_cpu_ms_per_request'), 3)} | {_n(s['rss_peak_mb'])} | {s['errors']} |"
            )
    return lines


def summary(result: dict) -> list[str]:
    """The run's single figures, as Markdown list items."""
    load, rss = result["load"], result["server_rss_mb"]
    records = ", ".join(f"{k.replace('_', ' ')} {n:,}" for k, n in result["records"].items() if n)
    search = result["searchability"]
    search_line = (
        f"p50 {search['p50_ms']} ms, p95 {search.get('p95_ms', '—')} ms, max {search['max_ms']} ms over {search['samples']} writes"
        if "p50_ms" in search
        else "not available"
        if not search.get("available")
        else search.get("failed", "")
    )
    return [
        f"- Archive: {records}",
        f"- Load: {load['records']:,} records via `{load['path']}` in {load['seconds']:,} s = **{load['records_per_s']:,.0f} records/s**"
        + (f" (server: {load['server_cores']} cores, RSS peak {load['rss_peak_mb']} MB)" if "rss_peak_mb" in load else "")
        + ("; the records generated before the clock started" if load.get("generated_beforehand") else ""),
        f"- Server RSS: {rss['at_start']} MB at start, {rss['at_rest']} MB at rest after loading, {rss['under_load_peak']} MB peak under load"
        + _anonymous_part(rss),
        f"- Database size after loading and the scenarios: {result['database_bytes'] / 1024 / 1024:,.1f} MB",
        f"- From a write's response to its searchability: {search_line}",
        f"- Search index caught up with the load {result.get('index_catch_up', {}).get('seconds', '—')} s after it ended (scenarios start then)",
        f"- Reindex (`fonds reindex` while serving): {_reindex_line(result.get('reindex', {}))}",
    ]


def _anonymous_part(rss: dict) -> str:
    if "anonymous_at_rest" not in rss:
        return ""  # a result from before the bench measured it
    return (
        f"; of which the processes' own memory (RssAnon) {rss['anonymous_at_start']} / {rss['anonymous_at_rest']} / "
        f"{rss['anonymous_under_load_peak']} MB, the rest files mapped in (search index segments, libraries)"
    )


def _reindex_line(reindex: dict) -> str:
    if "documents_per_s" in reindex:
        return f"{reindex['documents']:,} documents in {reindex['seconds']:,} s = **{reindex['documents_per_s']:,} documents/s**"
    return reindex.get("failed") or reindex.get("reason") or "not measured"


# Sections of a database go from the largest archive down.
SCALE_ORDER = ("large", "medium", "small", "tiny")
# Earlier runs keep their section at these scales (the targets are stated at them); a smaller
# run's figures appear only as the run just made.
KEPT_SCALES = ("large", "medium")


def newest_per_database(results_dir: Path, current: dict) -> list[dict]:
    """The run just made, then the newest result of each other database and kept scale in
    `results_dir` (so a run at one scale leaves the figures of the others on the page): the
    current database's first, each database's largest scale first."""
    found = [json.loads(path.read_text()) for path in results_dir.glob("*-*.json")]
    newest: dict[tuple[str, str], dict] = {}
    for result in found:
        key = (result["db"], _scale(result))
        if key[1] not in KEPT_SCALES or key == (current["db"], _scale(current)):
            continue
        if key not in newest or result["date"] > newest[key]["date"]:
            newest[key] = result
    newest[(current["db"], _scale(current))] = current

    def order(key: tuple[str, str]) -> tuple:
        db, scale = key
        rank = SCALE_ORDER.index(scale) if scale in SCALE_ORDER else len(SCALE_ORDER)
        return (db != current["db"], db, rank, scale)

    return [newest[key] for key in sorted(newest, key=order)]


def page(results: list[dict]) -> str:
    """docs/performance.md: a section per database and scale, each from its newest run."""
    head = ["# Performance", "", 'Generated by `python -m bench` (see the README, "Benchmark"); do not edit by hand.', ""]
    return "\n".join(head + [markdown(result) for result in results])


def markdown(result: dict) -> str:
    """One run's section of the page."""
    m, v, st = result["machine"], result["versions"], result["settings"]
    return "\n".join(
        [
            f"## {result['db']}, scale {st['scale']}",
            "",
            f"Run {result['date']} on **{result['db']}**, scale **{st['scale']}** (seed {st['seed']}), {st['workers']} worker(s), "
            f"{st['clients']} concurrent clients, {st['duration_s']} s per scenario.",
            "",
            f"- Machine: {m['cpu']}, {m['cpus']} CPUs, {m['memory_gb']} GB RAM, Linux {m['kernel']} (load average at start {m['load_average_at_start'][0]})"
            + (f"; CPU probe {m['cpu_probe_ms']} ms (`sum(range(10**7))`, lower is faster)" if "cpu_probe_ms" in m else ""),
            "- Versions: " + ", ".join(f"{k} {val}" for k, val in v.items()),
            f"- Client: {st['client']}, on the same machine over loopback",
            *summary(result),
            "",
            "Each figure beside the ceiling — a bare Starlette+uvicorn JSON endpoint measured in the same run with the same",
            "client and clients — as a fraction of its throughput. Server CPU is the server processes' user+system time",
            'during the scenario divided by the requests served. "Not available": the server does not offer the route yet.',
            "",
            *rows(result),
            "",
        ]
    )


def changes(result: dict, before: dict | None) -> list[str]:
    """Lines comparing throughput and p50 with the previous result for the same database."""
    if before is None:
        return [f"No previous {result['db']} result to compare with."]
    lines = [f"Change against {before['date']} ({before['settings']['scale']}, {before['versions'].get('commit', '?')}):"]
    for name in ORDER:
        now, then = result["scenarios"].get(name, {}), before.get("scenarios", {}).get(name, {})
        if now.get("throughput_rps") and then.get("throughput_rps"):
            delta = (now["throughput_rps"] / then["throughput_rps"] - 1) * 100
            lines.append(
                f"  {name:16} {then['throughput_rps']:>9,.0f} -> {now['throughput_rps']:>9,.0f} req/s ({delta:+.0f} %), p50 {then['p50_ms']:.2f} -> {now['p50_ms']:.2f} ms"
                + _ratio_change(then, now)
                + _client_change(then, now)
            )
        elif now.get("throughput_rps"):
            lines.append(f"  {name:16} new: {now['throughput_rps']:,.0f} req/s")
    if before.get("load", {}).get("records_per_s"):
        lines.append(f"  load             {before['load']['records_per_s']:>9,.0f} -> {result['load']['records_per_s']:>9,.0f} records/s")
    return lines


def _ratio_change(then: dict, now: dict) -> str:
    """The throughput as a fraction of the ceiling measured in the same run: comparable across
    hosts of different speeds, where req/s are not."""
    before, after = (then.get("ratio_to_ceiling") or {}).get("throughput"), (now.get("ratio_to_ceiling") or {}).get("throughput")
    return f", of the ceiling {before:.3f} -> {after:.3f}" if before and after else ""


def _client_change(then: dict, now: dict) -> str:
    """wrk and the Python client reach different rates: a change of client is not a change of server."""
    if then.get("tool") and now.get("tool") and then["tool"] != now["tool"]:
        return f" (client {then['tool']} -> {now['tool']}: not comparable)"
    return ""
