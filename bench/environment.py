"""The databases the bench runs on, and what the report says about the machine."""

from __future__ import annotations

import os
import platform
import secrets
import subprocess
import time
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path


@contextmanager
def database(url: str | None, data_dir: Path):
    """Yields the FONDS_DATABASE_URL to use (None: SQLite in the data dir). For PostgreSQL a
    fresh database is created beside the given one and dropped afterwards."""
    if not url:
        yield None
        return
    import psycopg

    name = f"fonds_bench_{secrets.token_hex(4)}"
    plain_url = url.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(plain_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield _url_with_db(url, name)
    finally:
        with psycopg.connect(plain_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _url_with_db(url: str, name: str) -> str:
    from sqlalchemy.engine import make_url

    return make_url(url).set(database=name).render_as_string(hide_password=False)


def database_bytes(url: str | None, data_dir: Path) -> int:
    if not url:
        return sum(p.stat().st_size for p in data_dir.glob("fonds.sqlite3*"))
    import psycopg

    with psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://")) as conn:
        return conn.execute("SELECT pg_database_size(current_database())").fetchone()[0]


def database_version(url: str | None) -> str:
    if not url:
        import sqlite3

        return f"SQLite {sqlite3.sqlite_version}"
    import psycopg

    with psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://")) as conn:
        return "PostgreSQL " + conn.execute("SHOW server_version").fetchone()[0]


def machine() -> dict:
    cpu = next(
        (line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("model name")),
        platform.processor(),
    )
    memory_kb = int(next(line.split()[1] for line in Path("/proc/meminfo").read_text().splitlines() if line.startswith("MemTotal")))
    return {
        "cpu": cpu,
        "cpus": os.cpu_count(),
        "memory_gb": round(memory_kb / 1024 / 1024, 1),
        "kernel": platform.release(),
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
        "cpu_probe_ms": cpu_probe_ms(),
    }


def cpu_probe_ms() -> float:
    """The best of three runs of a fixed interpreter loop: the same machine's speed varies from
    day to day (seen: 2x), so absolute figures of two runs compare through it."""
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        sum(range(10**7))
        best = min(best, time.perf_counter() - started)
    return round(best * 1000, 1)


def versions(url: str | None) -> dict:
    found = {"python": platform.python_version(), "database": database_version(url)}
    for package in ("fonds", "fastapi", "starlette", "uvicorn", "sqlalchemy", "pydantic"):
        try:
            found[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            found[package] = "not installed"
    try:
        found["commit"] = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        found["commit"] = "unknown"
    if _wrk_version():
        found["wrk"] = _wrk_version()
    return found


def _wrk_version() -> str | None:
    try:
        out = subprocess.run(["wrk", "--version"], capture_output=True, text=True, timeout=5)
    except OSError:
        return None
    return (out.stdout or out.stderr).split("[")[0].replace("wrk", "").strip() or None
