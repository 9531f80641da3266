"""`python -m bench`: see the README, "Benchmark"."""

from __future__ import annotations

import argparse
from pathlib import Path

from bench import processes, report
from bench.generate import SCALES
from bench.run import Options, execute

ROOT = Path(__file__).resolve().parent.parent


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench", description="Load a generated archive into `fonds serve` and measure it over HTTP."
    )
    parser.add_argument(
        "--scale",
        choices=list(SCALES),
        default=None,
        help="archive size: small ~10k, medium ~100k, large ~1M records (default small; tiny with --quick)",
    )
    parser.add_argument("--records", type=int, default=None, help="override the scale's record count (for smoke tests)")
    parser.add_argument(
        "--database-url", help="PostgreSQL server to run on (a fresh database is created there and dropped); default SQLite"
    )
    parser.add_argument("--workers", type=int, default=1, help="uvicorn worker processes of the server and of the ceiling (default 1)")
    parser.add_argument("--clients", type=int, default=8, help="concurrent client connections per scenario (default 8)")
    parser.add_argument("--duration", type=float, default=None, help="seconds per scenario (default 5; 1 with --quick)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the generated archive (default 1)")
    parser.add_argument("--quick", action="store_true", help="a fast smoke run: tiny archive, 1 s per scenario, nothing published")
    parser.add_argument(
        "--client",
        choices=["auto", "python"],
        default="auto",
        help="auto: wrk for fixed GETs if installed; python: the asyncio driver only",
    )
    parser.add_argument("--results-dir", type=Path, default=ROOT / "bench" / "results", help="where results JSON files go")
    parser.add_argument("--docs", type=Path, default=ROOT / "docs" / "performance.md", help="the page to regenerate")
    args = parser.parse_args(argv)
    args.scale = args.scale or ("tiny" if args.quick else "small")
    args.duration = args.duration or (1.0 if args.quick else 5.0)
    if args.records is not None and args.records < 50:
        parser.error("--records must be at least 50")
    if args.clients < 1 or args.workers < 1 or not 0 < args.duration <= 600:
        parser.error("--clients and --workers must be at least 1, --duration between 0 and 600 s")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    processes.install_cleanup()
    options = Options(
        args.scale,
        args.database_url,
        args.workers,
        args.clients,
        args.duration,
        args.seed,
        args.client,
        records=args.records,
        log=lambda m: print(m, flush=True),
    )
    try:
        result = execute(options)
    except KeyboardInterrupt:
        print("interrupted; servers stopped")
        return 130
    before = report.previous(args.results_dir, result["db"], str(result["settings"]["scale"]))
    print("\n".join([*report.summary(result), "", *report.rows(result)]))
    if args.quick:
        print("(--quick: nothing written)")
        return 0
    path = report.write(result, args.results_dir)
    args.docs.parent.mkdir(parents=True, exist_ok=True)
    args.docs.write_text(report.page(report.newest_per_database(args.results_dir, result)))
    print("\n".join(report.changes(result, before)))
    print(f"wrote {path} and {args.docs}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
