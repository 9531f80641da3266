"""The serving process: what `fonds serve` turns into once the database is prepared.

It replaces the command's process (same PID, for a supervisor or `ps`) so that the server holds
uvicorn and the app but not the command line's libraries: Typer and Rich, imported by every
`fonds` command, were 3.6 MB of a server's RSS at start. Workers (`--workers N`) start from
this module too."""

from __future__ import annotations

import argparse
import sys

import uvicorn

from fonds.log_config import uvicorn_log_config


def run(host: str, port: int, workers: int) -> None:
    uvicorn.run(
        "fonds.app:app_from_environment",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        log_level="info",
        log_config=uvicorn_log_config(),
        # The app writes its own (fonds.api.access_log), the same lines at a fraction of the cost.
        access_log=False,
    )


def command(host: str, port: int, workers: int) -> list[str]:
    """The argument vector of a serving process: this module run by this interpreter."""
    return [sys.executable, "-m", __name__, "--host", host, "--port", str(port), "--workers", str(workers)]


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m fonds.server", description="Serve an already prepared database (`fonds serve` prepares it first)."
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8089)
    parser.add_argument("--workers", type=int, default=1)
    options = parser.parse_args()
    run(options.host, options.port, options.workers)


if __name__ == "__main__":
    main()
