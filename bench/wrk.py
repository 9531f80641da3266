"""wrk for the fixed GETs: C, multi-threaded, so the client is not what is measured."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile

SCRIPT = """
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('WRKJSON {"requests":%d,"duration_us":%d,"socket_errors":%d,"non2xx":%d,"p50_us":%d,"p95_us":%d,"p99_us":%d}\\n',
    summary.requests, summary.duration, e.connect + e.read + e.write + e.timeout, e.status,
    latency:percentile(50), latency:percentile(95), latency:percentile(99)))
end
"""


def available() -> bool:
    return shutil.which("wrk") is not None


def run(url: str, *, clients: int, duration: float, headers: dict[str, str]) -> dict:
    """One wrk run against a fixed URL; the same figures as the Python driver's summary."""
    seconds = max(1, round(duration))
    with tempfile.NamedTemporaryFile("w", suffix=".lua") as script:
        script.write(SCRIPT)
        script.flush()
        command = ["wrk", "-t", str(min(2, clients)), "-c", str(clients), "-d", f"{seconds}s", "--timeout", "10s", "-s", script.name]
        for name, value in headers.items():
            command += ["-H", f"{name}: {value}"]
        output = subprocess.run([*command, url], capture_output=True, text=True, timeout=seconds + 30, check=True).stdout
    line = next(line for line in output.splitlines() if line.startswith("WRKJSON "))
    figures = json.loads(line.removeprefix("WRKJSON "))
    elapsed = figures["duration_us"] / 1e6
    return {
        "requests": figures["requests"],
        "errors": figures["socket_errors"] + figures["non2xx"],
        "seconds": round(elapsed, 3),
        "throughput_rps": round(figures["requests"] / elapsed, 2) if elapsed else 0.0,
        "p50_ms": figures["p50_us"] / 1000,
        "p95_ms": figures["p95_us"] / 1000,
        "p99_ms": figures["p99_us"] / 1000,
    }
