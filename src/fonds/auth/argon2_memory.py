"""argon2 hashes computed in working memory that the hashing threads keep between hashes and
give back to the system as soon as no hash is in flight.

argon2id at the parameters Fonds takes from OWASP works in 7 MiB. Through argon2-cffi's own
calls that memory comes from malloc: either fresh pages for each hash (a third more CPU per
login, faulting them in), or, as Fonds had it, kept at the top of the hashing thread's malloc
arena, where `malloc_trim` never reaches (~20 MB held for good per arena at 19 MiB, at rest
too). Here argon2's allocation callbacks hand it a private mapping of the thread's own: a burst
of logins reuses it (as fast as the kept heap), and the last hash of the burst drops its pages
(`MADV_DONTNEED`), so at rest none is held.

The hash strings are argon2's standard encoding (`$argon2id$v=19$m=…,t=…,p=…$salt$hash`),
read and written by argon2-cffi alike; hashes with other parameters than the hasher's are left to
argon2-cffi (they are replaced at the next login)."""

from __future__ import annotations

import base64
import hmac
import mmap
import os
import threading

from argon2 import PasswordHasher, extract_parameters
from argon2.exceptions import InvalidHashError
from argon2.low_level import ARGON2_VERSION, ffi, lib
from argon2.profiles import Parameters


class _Scratch:
    """One hashing thread's argon2 memory: mapped once, its pages dropped when no hash runs."""

    def __init__(self):
        self.lock = threading.Lock()  # held while a hash uses the memory
        self.memory: mmap.mmap | None = None
        self.buffer = None

    def address(self, size: int):
        if self.memory is None or len(self.memory) < size:
            self.close()
            self.memory = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE)
            self.buffer = ffi.from_buffer(self.memory)
        return ffi.cast("uint8_t *", self.buffer)

    def drop_pages(self) -> None:
        """Give the pages back (the mapping stays; it reads as zeros, refaulted on next use)."""
        if self.memory is not None and self.lock.acquire(blocking=False):
            try:
                self.memory.madvise(mmap.MADV_DONTNEED)
            finally:
                self.lock.release()

    def close(self) -> None:
        if self.memory is not None:
            self.buffer = None
            self.memory.close()
            self.memory = None


_local = threading.local()
_scratches: list[_Scratch] = []
_scratches_lock = threading.Lock()


def _scratch() -> _Scratch:
    scratch = getattr(_local, "scratch", None)
    if scratch is None:
        scratch = _local.scratch = _Scratch()
        with _scratches_lock:
            _scratches.append(scratch)
    return scratch


def _allocate(memory, size):
    memory[0] = _scratch().address(size)
    return lib.ARGON2_OK


def _free(memory, size):
    pass  # kept for the next hash; `drop_idle_pages` gives its pages back


def _callbacks() -> dict:
    """argon2's allocation callbacks; NULL ones (argon2 then uses malloc) where private mappings
    cannot be dropped (no `MADV_DONTNEED`) or libffi may not make callbacks (no executable memory)."""
    if hasattr(mmap, "MAP_PRIVATE") and hasattr(mmap, "MADV_DONTNEED"):
        try:
            return {
                # A failure inside the callback tells argon2 the allocation failed (no hash made).
                "allocate_cbk": ffi.callback("int(uint8_t **, size_t)", _allocate, error=lib.ARGON2_MEMORY_ALLOCATION_ERROR),
                "free_cbk": ffi.callback("void(uint8_t *, size_t)", _free),
            }
        except (MemoryError, OSError):
            pass
    return {"allocate_cbk": ffi.NULL, "free_cbk": ffi.NULL}


_CALLBACKS = _callbacks()


def drop_idle_pages() -> None:
    """Give back every hashing thread's memory that no hash is using."""
    with _scratches_lock:
        scratches = list(_scratches)
    for scratch in scratches:
        scratch.drop_pages()


def raw_hash(password: bytes, salt: bytes, p: Parameters) -> bytes:
    out = ffi.new("uint8_t[]", p.hash_len)
    secret, salt_buffer = ffi.new("uint8_t[]", password), ffi.new("uint8_t[]", salt)
    context = ffi.new(
        "argon2_context *",
        {
            "out": out,
            "outlen": p.hash_len,
            "pwd": secret,
            "pwdlen": len(password),
            "salt": salt_buffer,
            "saltlen": len(salt),
            "secret": ffi.NULL,
            "secretlen": 0,
            "ad": ffi.NULL,
            "adlen": 0,
            "t_cost": p.time_cost,
            "m_cost": p.memory_cost,
            "lanes": p.parallelism,
            "threads": p.parallelism,
            "version": p.version,
            **_CALLBACKS,
            "flags": lib.ARGON2_DEFAULT_FLAGS,
        },
    )
    with _scratch().lock:
        code = lib.argon2_ctx(context, p.type.value)
    if code != lib.ARGON2_OK:
        raise ValueError(ffi.string(lib.argon2_error_message(code)).decode())
    return bytes(ffi.buffer(out, p.hash_len))


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)


def parameters(hasher: PasswordHasher) -> Parameters:
    return Parameters(
        type=hasher.type,
        version=ARGON2_VERSION,
        salt_len=hasher.salt_len,
        hash_len=hasher.hash_len,
        time_cost=hasher.time_cost,
        memory_cost=hasher.memory_cost,
        parallelism=hasher.parallelism,
    )


def hash_password(hasher: PasswordHasher, password: str) -> str:
    p = parameters(hasher)
    salt = os.urandom(p.salt_len)
    digest = raw_hash(password.encode(), salt, p)
    return f"$argon2{p.type.name.lower()}$v={p.version}$m={p.memory_cost},t={p.time_cost},p={p.parallelism}${_b64(salt)}${_b64(digest)}"


def verify_password(hasher: PasswordHasher, password_hash: str, password: str) -> bool:
    """Whether `password` matches; InvalidHashError for a string that is no argon2 hash."""
    p = extract_parameters(password_hash)
    if p != parameters(hasher):
        return hasher.verify(password_hash, password)  # another hasher's: argon2-cffi's own check
    try:
        salt, digest = (_unb64(part) for part in password_hash.rsplit("$", 2)[1:])
    except ValueError:
        raise InvalidHashError(password_hash) from None
    return hmac.compare_digest(raw_hash(password.encode(), salt, p), digest)
