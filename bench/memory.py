"""`python -m bench.memory`: where the server's memory goes, at start, at rest after a load, and
under load (32 concurrent logins, then the read scenarios with 32 clients).

RSS is the process tree's resident set (as `python -m bench` reports it); each figure is also
split by what /proc/PID/smaps says holds it: anonymous memory (the Python heap, malloc arenas,
native libraries' allocations), mapped files (the search index's segments and SQLite's files:
counted only while their pages are resident) and shared-library code."""

from __future__ import annotations

import argparse
import re
import tempfile
import time
from collections import Counter
from pathlib import Path

from bench import environment, processes
from bench.run import MB, Bench, Options
from bench.scenarios import LOGIN, read_scenarios

# Longer than the server's FONDS_MEMORY_RELEASE_SECONDS (10 s by default).
RELEASE_WAIT = 11
MAPPING = re.compile(r"^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \d+\s*(.*)$")


def breakdown(pid: int) -> dict[str, float]:
    """Resident MB of the process tree by kind of mapping."""
    kinds: Counter = Counter()
    for p in processes.process_tree(pid):
        kind = None
        try:
            lines = Path(f"/proc/{p}/smaps").read_text().splitlines()
        except OSError:
            continue
        for line in lines:
            found = MAPPING.match(line)
            if found:
                name = found.group(1).strip()
                kind = "anonymous" if not name or name == "[heap]" else "code" if ".so" in name or name.startswith("[") else "files"
            elif line.startswith("Rss:") and kind:
                kinds[kind] += int(line.split()[1]) * 1024
    return {kind: round(size / MB, 1) for kind, size in sorted(kinds.items())}


def report(label: str, pid: int, peak: int | None = None) -> None:
    now = processes.rss_bytes(pid)
    peak_text = f", peak {peak / MB:.1f} MB" if peak is not None else ""
    print(f"{label}: RSS {now / MB:.1f} MB{peak_text}  {breakdown(pid)}", flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.memory", description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", default="small", choices=["tiny", "small", "medium", "large"])
    parser.add_argument("--records", type=int, default=None)
    parser.add_argument("--database-url", default=None)
    parser.add_argument("--clients", type=int, default=32, help="concurrent clients of the logins and reads (default 32)")
    parser.add_argument("--duration", type=float, default=5.0)
    args = parser.parse_args(argv)
    processes.install_cleanup()
    options = Options(args.scale, args.database_url, 1, 8, args.duration, records=args.records, log=lambda m: print(m, flush=True))
    with tempfile.TemporaryDirectory(prefix="fonds-memory-") as tmp, environment.database(args.database_url, Path(tmp)) as url:
        bench = Bench(options, Path(tmp), url)
        try:
            bench.start_servers()
            processes.stop(bench.ceiling)
            pid = bench.server.pid
            report("at start", pid)
            bench.load()
            bench.index_catch_up()
            time.sleep(1)
            report("at rest after loading (1 s after the index caught up, as `python -m bench` reads it)", pid)
            time.sleep(RELEASE_WAIT)
            report(f"at rest after loading ({RELEASE_WAIT + 1} s after, past a memory release)", pid)
            login = bench.run_scenario(LOGIN, {"username": "admin", "password": bench.password, "token": None}, args.clients)
            report(
                f"{args.clients} concurrent logins ({login.get('throughput_rps')} req/s, {login.get('server_cpu_ms_per_request')} ms CPU each, {login.get('errors')} errors)",
                pid,
                MB * login["rss_peak_mb"],
            )
            peak = 0.0
            for scenario in read_scenarios(bench.targets()):
                figures = bench.run_scenario(scenario, {"requests": [{"path": scenario.path}]}, args.clients)
                peak = max(peak, figures.get("rss_peak_mb", 0))
                print(
                    f"  {scenario.label}: {figures.get('throughput_rps')} req/s, {figures.get('server_cpu_ms_per_request')} ms CPU each,"
                    f" peak {figures.get('rss_peak_mb')} MB",
                    flush=True,
                )
            report(f"after the read scenarios with {args.clients} clients", pid, MB * peak)
        finally:
            bench.close()


if __name__ == "__main__":
    main()
