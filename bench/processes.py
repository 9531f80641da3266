"""Server processes the bench starts (fonds serve, the ceiling), their RSS and CPU, and cleanup.

Each server runs in its own process group, so that stopping it stops its uvicorn workers too;
`stop_all` runs on exit, on Ctrl-C and on SIGTERM."""

from __future__ import annotations

import atexit
import os
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

import httpx

_started: list[subprocess.Popen] = []
TICKS = os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start(command: list[str], *, env: dict, log_path: Path, probe_url: str, timeout: float = 120) -> subprocess.Popen:
    with open(log_path, "ab") as log:
        process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    _started.append(process)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{command[2:4]} exited with {process.returncode}; see {log_path}:\n{log_path.read_text()[-3000:]}")
        try:
            if httpx.get(probe_url, timeout=2).status_code == 200:
                return process
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    stop(process)
    raise RuntimeError(f"{probe_url} did not answer within {timeout:.0f}s; see {log_path}")


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        for sig, wait in ((signal.SIGTERM, 15), (signal.SIGKILL, 15)):
            try:
                os.killpg(process.pid, sig)
            except ProcessLookupError:
                break
            try:
                process.wait(timeout=wait)
                break
            except subprocess.TimeoutExpired:
                continue
    if process in _started:
        _started.remove(process)


def stop_all() -> None:
    for process in list(_started):
        stop(process)


def _on_sigterm(signum, frame):
    raise KeyboardInterrupt


def install_cleanup() -> None:
    atexit.register(stop_all)
    signal.signal(signal.SIGTERM, _on_sigterm)


def process_tree(pid: int) -> list[int]:
    """The process and its descendants (uvicorn's workers, the process validating large
    imports), from /proc: each thread lists the children it started (not only the main thread's)."""
    pids, index = [pid], 0
    while index < len(pids):
        tasks = f"/proc/{pids[index]}/task"
        children: list[str] = []
        try:
            names = os.listdir(tasks)
        except OSError:
            names = []
        for name in names:
            try:
                with open(f"{tasks}/{name}/children") as file:
                    children += file.read().split()
            except OSError:
                pass
        pids += [int(c) for c in dict.fromkeys(children)]
        index += 1
    return pids


def memory_bytes(pid: int) -> tuple[int, int]:
    """(RSS, RssAnon) of the process tree, in one walk and one read of each process's status:
    sampled every 50 ms through a load, a walk and two reads a process took the client ~7 % of a core.
    RssAnon is the processes' own memory; the rest of RSS is files mapped in (the search index's
    segments, shared libraries), pages the kernel can drop and read again."""
    rss = anonymous = 0
    for p in process_tree(pid):
        try:
            with open(f"/proc/{p}/status") as file:
                status = file.read()
        except OSError:
            continue
        rss += _status_kib(status, "VmRSS:") * 1024
        anonymous += _status_kib(status, "RssAnon:") * 1024
    return rss, anonymous


def _status_kib(status: str, field: str) -> int:
    start = status.find(field)
    if start < 0:  # a process exiting: its memory is gone
        return 0
    return int(status[start + len(field) : status.index("kB", start)])


def rss_bytes(pid: int) -> int:
    return memory_bytes(pid)[0]


def cpu_seconds(pid: int) -> float:
    total = 0.0
    for p in process_tree(pid):
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / TICKS
        except (OSError, IndexError):
            pass
    return total


class Sampler:
    """Samples a process tree's RSS every 50 ms while a scenario runs; keeps the peak."""

    def __init__(self, pid: int):
        self.pid, self.peak, self.anonymous_peak = pid, 0, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._sample()
            self._stop.wait(0.05)

    def _sample(self) -> None:
        rss, anonymous = memory_bytes(self.pid)
        self.peak, self.anonymous_peak = max(self.peak, rss), max(self.anonymous_peak, anonymous)

    def __enter__(self) -> Sampler:
        self.cpu_before = cpu_seconds(self.pid)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()
        self.cpu = cpu_seconds(self.pid) - self.cpu_before
