"""Settings: one frozen object built from FONDS_* environment variables and an optional TOML file.

Nothing here is read at import time; `load_settings()` is called by the CLI or by the test
harness and the result is handed to `create_app(settings)`.
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path


def _setting(default, doc: str):
    return field(default=default, metadata={"doc": doc})


@dataclass(frozen=True)
class Settings:
    data_dir: Path = _setting(Path("./fonds-data"), "Directory for the embedded database, search index and generated secrets.")
    database_url: str | None = _setting(
        None, "SQLAlchemy URL of the database (`sqlite:///…` or `postgresql://…`). Default: a SQLite file in the data dir."
    )
    admin_password: str | None = _setting(
        None,
        "Password of the `admin` user created at first start. Unset: a random one is generated, printed once and written to `<data dir>/initial-admin-password`.",
    )
    default_page_size: int = _setting(10, "Page size of listings and searches when the client gives none.")
    max_page_size: int = _setting(250, "Largest page size; larger requests are clamped to it.")
    session_expire_seconds: int = _setting(3600, "Idle seconds after which an expiring session ends.")
    session_nonexpiring_seconds: int = _setting(604800, "Idle seconds after which a session created with `expiring=false` ends.")
    max_body_bytes: int = _setting(10 * 1024 * 1024, "Largest accepted request body; larger ones get 413.")
    password_min_length: int = _setting(8, "Shortest password accepted when a user is created or a password changed.")
    login_failures_per_user: int = _setting(
        5, "Failed logins for one username before further attempts are refused (429) for a while that doubles with each failure."
    )
    login_failures_per_address: int = _setting(30, "Failed logins from one client address before it is refused (429) in the same way.")
    login_lockout_max_seconds: int = _setting(900, "Longest a username or address is locked out after repeated failed logins.")
    index_dir: Path | None = _setting(
        None, "Directory of the search index (derived data: deleting it is safe, it is rebuilt). Default: `index` in the data dir."
    )
    search_wait_seconds: float = _setting(
        2.0,
        "Longest a search waits for the index to apply the changes committed before it began; past it the search answers from the index as it is, with the header `X-Fonds-Index-Behind`.",
    )
    access_log: bool = _setting(
        True,
        "Write one line per request to the server's output (uvicorn's access log, secrets in query strings redacted). Written by the app itself, one write per turn of the event loop: about 3–8 µs of CPU a request (uvicorn's logging took 17 µs); off saves that.",
    )
    malloc_arenas: int = _setting(
        1,
        "Most glibc malloc arenas the server process uses (glibc's own default is 8 per core). More lets threads allocate native memory (SQLite, search, password hashing) side by side at the cost of RSS: each arena keeps what it freed. `MALLOC_ARENA_MAX` in the environment overrides it.",
    )
    memory_release_seconds: float = _setting(
        10.0,
        "Every this many seconds the server hands the memory malloc holds free back to the system (`malloc_trim`: 4–26 ms measured after a 10,000-record load, on a worker thread); 0 never does.",
    )
    import_process_records: int = _setting(
        1000,
        "Batch imports of at least this many records go to processes of their own. On a SQLite file two such processes read, validate and write them, taking turns to write: a bulk load then uses both cores, the server only passing bodies and answers, and ~150 MB more memory for each while they run. On PostgreSQL one process validates them beside the server's writes (~90 MB). The processes start with the first such import (imported in the server meanwhile) and stop 10-20 s after the last one. A number larger than any import keeps imports in the server.",
    )
    strict_validation: bool = _setting(
        False, "Refuse (400) records missing what ArchivesSpace requires beyond Fonds' minimum, instead of warning."
    )

    @property
    def effective_index_dir(self) -> Path:
        return self.index_dir or self.data_dir / "index"

    @property
    def effective_database_url(self) -> str:
        return self.database_url or f"sqlite:///{(self.data_dir / 'fonds.sqlite3').resolve()}"


SETTINGS_FIELDS = tuple(dataclasses.fields(Settings))


class SettingsError(ValueError):
    pass


def env_name(setting: dataclasses.Field) -> str:
    return "FONDS_" + setting.name.upper()


def _coerce(setting: dataclasses.Field, raw):
    kind = setting.type
    try:
        if "bool" in kind:
            if isinstance(raw, bool):
                return raw
            text = str(raw).strip().lower()
            if text in ("1", "true", "yes", "on"):
                return True
            if text in ("0", "false", "no", "off"):
                return False
            raise ValueError(f"expected true or false, got {raw!r}")
        if "float" in kind:
            value = float(raw)
            if not value >= 0:
                raise ValueError(f"must be a number of seconds, zero or more, got {raw!r}")
            return value
        if "int" in kind:
            value = int(raw)
            if value < 1:
                raise ValueError(f"must be a positive integer, got {raw!r}")
            return value
        if "Path" in kind:
            return Path(raw)
        return str(raw)
    except ValueError as exc:
        raise SettingsError(f"{env_name(setting)}: {exc}") from None


def load_settings(env: Mapping[str, str] | None = None, config_file: Path | None = None, **overrides) -> Settings:
    """Build settings: TOML file first, then FONDS_* environment variables, then explicit overrides."""
    env = os.environ if env is None else env
    values: dict[str, object] = {}
    config_file = config_file or (Path(env["FONDS_CONFIG"]) if env.get("FONDS_CONFIG") else None)
    if config_file is not None:
        try:
            table = tomllib.loads(Path(config_file).read_text())
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise SettingsError(f"cannot read config file {config_file}: {exc}") from None
        known = {s.name: s for s in SETTINGS_FIELDS}
        for key, raw in table.items():
            if key not in known:
                raise SettingsError(f"{config_file}: unknown setting {key!r}")
            values[key] = _coerce(known[key], raw)
    for setting in SETTINGS_FIELDS:
        raw = env.get(env_name(setting))
        if raw is not None and raw != "":
            values[setting.name] = _coerce(setting, raw)
    values.update({k: v for k, v in overrides.items() if v is not None})
    settings = Settings(**values)
    if settings.default_page_size > settings.max_page_size:
        raise SettingsError("FONDS_DEFAULT_PAGE_SIZE must not exceed FONDS_MAX_PAGE_SIZE")
    return settings
