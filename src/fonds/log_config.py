"""Logging for `fonds serve`: uvicorn's configuration plus a filter that keeps secrets sent in
query strings (ArchivesSpace clients send `?password=` to log in and to create users) out of
the access log."""

from __future__ import annotations

import copy
import logging
import re
from urllib.parse import unquote_plus

# Parameter names whose values are secrets, compared after percent-decoding and lower-casing:
# `pass%77ord` and `PASSWORD` reach the application as `password` and must be hidden alike.
SECRET_NAMES = frozenset({"password", "password[]"})
# name=value pairs of a query string (after `?`) or of a form-encoded body (from the start).
_PARAMETER = re.compile(r"(^|[?&;])([^=&;?\s]*)=([^&;\s]*)")


def is_secret(name: str) -> bool:
    return unquote_plus(name).strip().lower() in SECRET_NAMES


def redact(text: str) -> str:
    """The text (a path with its query string, or a form-encoded body) with secret values replaced."""

    def hide(match: re.Match) -> str:
        separator, name, _ = match.groups()
        return f"{separator}{name}=[redacted]" if is_secret(name) else match.group(0)

    return _PARAMETER.sub(hide, text)


class RedactSecrets(logging.Filter):
    """Rewrites the request path of uvicorn's access-log records (its third argument)."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) >= 3 and isinstance(args[2], str):
            record.args = (*args[:2], redact(args[2]), *args[3:])
        elif isinstance(record.msg, str):
            record.msg = redact(record.msg)
        return True


def uvicorn_log_config() -> dict:
    from uvicorn.config import LOGGING_CONFIG

    config = copy.deepcopy(LOGGING_CONFIG)
    config.setdefault("filters", {})["redact_secrets"] = {"()": RedactSecrets}
    config["handlers"]["access"]["filters"] = ["redact_secrets"]
    # Fonds' own messages (unexpected errors, vanished clients, bootstrap) beside uvicorn's.
    config["loggers"]["fonds"] = {"handlers": ["default"], "level": "INFO", "propagate": False}
    return config
