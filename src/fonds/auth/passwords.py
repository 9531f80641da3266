"""Password hashing with argon2id at OWASP's recommended parameters, on a few dedicated threads.

OWASP's Password Storage Cheat Sheet recommends argon2id with 19 MiB of memory and 2 iterations,
or one of four configurations it rates as equal defence, trading memory for iterations; Fonds
takes the leanest in memory, 7 MiB and 5 iterations (parallelism 1): a hash costs less CPU than
at 19 MiB (26 against 33 ms measured here) and a third of the memory. Each hash holds its memory
while it runs, so hashing happens on `HASHING_THREADS` threads of its own: at most that many
hashes at once (spread over every request thread, RSS climbed past 600 MB under concurrent
logins). Each of those threads keeps its 7 MiB between hashes and gives the pages back when no
hash is in flight (`fonds.auth.argon2_memory`). `HashingGate` keeps the requests waiting for a
turn off the request threads, so other requests keep being served."""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from argon2 import PasswordHasher, Type
from argon2.exceptions import InvalidHashError, VerificationError
from argon2.profiles import Parameters

from fonds.auth import argon2_memory
from fonds.errors import ServiceBusy

OWASP = Parameters(type=Type.ID, version=19, salt_len=16, hash_len=32, time_cost=5, memory_cost=7 * 1024, parallelism=1)
HASHING_THREADS = 2
# How long a request waits for a hashing turn before it is told to come back (503, Retry-After).
WAIT_SECONDS = 10.0
RETRY_AFTER_SECONDS = 2

_hasher = PasswordHasher.from_parameters(OWASP)
_threads = ThreadPoolExecutor(HASHING_THREADS, thread_name_prefix="argon2")
# Verified against when the user does not exist, so a wrong username costs what a wrong password does.
_DUMMY_HASH = _hasher.hash("fonds-timing-equaliser")


class _InFlight:
    """Hashes submitted and not yet answered. Once none has been for `IDLE_SECONDS`, the hashing
    threads' memory goes back to the system: logins one after another reuse it, and at rest
    none is held."""

    IDLE_SECONDS = 1.0

    def __init__(self):
        self.lock, self.count, self.timer, self.idle_since = threading.Lock(), 0, None, 0.0

    def run(self, work, *args):
        with self.lock:
            self.count += 1
        try:
            return _threads.submit(work, *args).result()
        finally:
            with self.lock:
                self.count -= 1
                if self.count == 0:
                    self.idle_since = time.monotonic()
                    if self.timer is None:
                        self._start_timer(self.IDLE_SECONDS)

    def _start_timer(self, delay: float) -> None:
        self.timer = threading.Timer(delay, self._give_back)
        self.timer.daemon = True
        self.timer.start()

    def _give_back(self) -> None:
        with self.lock:
            self.timer = None
            if self.count:
                return  # a hash started meanwhile: the timer set when it ends will do it
            # A timer set by an earlier burst counts from the end of the latest hash.
            left = self.idle_since + self.IDLE_SECONDS - time.monotonic()
            if left > 0:
                self._start_timer(left)
                return
        argon2_memory.drop_idle_pages()


_in_flight = _InFlight()


def hash_password(password: str) -> str:
    return _in_flight.run(argon2_memory.hash_password, _hasher, password)


def verify_password(password_hash: str | None, password: str) -> bool:
    return _in_flight.run(_verify, password_hash, password)


def _verify(password_hash: str | None, password: str) -> bool:
    try:
        return argon2_memory.verify_password(_hasher, password_hash or _DUMMY_HASH, password) and password_hash is not None
    except (VerificationError, InvalidHashError):
        return False


def needs_rehash(password_hash: str) -> bool:
    """A hash made with other parameters (older defaults): replaced at the next successful login."""
    try:
        return _hasher.check_needs_rehash(password_hash)
    except InvalidHashError:
        return True


class HashingGate:
    """Admits at most `HASHING_THREADS` password-hashing requests into request threads at once; the
    others wait here, on the event loop, for up to `WAIT_SECONDS`, then get 503 with Retry-After."""

    def __init__(self, slots: int = HASHING_THREADS, wait: float = WAIT_SECONDS):
        self._size, self._wait = slots, wait
        self._loop: asyncio.AbstractEventLoop | None = None
        self._slots = asyncio.Semaphore(slots)

    def _semaphore(self) -> asyncio.Semaphore:
        # An asyncio semaphore belongs to one event loop: a worker runs one, but a test client
        # starts one per request.
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            self._loop, self._slots = loop, asyncio.Semaphore(self._size)
        return self._slots

    async def __aenter__(self) -> None:
        try:
            await asyncio.wait_for(self._semaphore().acquire(), self._wait)
        except TimeoutError:
            raise ServiceBusy("Too many logins and password changes at once: try again shortly", RETRY_AFTER_SECONDS) from None

    async def __aexit__(self, *exc) -> None:
        self._slots.release()
