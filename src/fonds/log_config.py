"""Logging for `fonds serve`: uvicorn's configuration plus a filter that keeps secrets sent in
query strings (ArchivesSpace clients send `?password=` to log in and to create users) out of
the access log."""

from __future__ import annotations

import copy
import logging
import re

SECRET_PARAMETER = re.compile(r"(?i)((?:^|[?&])password=)[^&\s]*")


def redact(text: str) -> str:
    return SECRET_PARAMETER.sub(r"\1[redacted]", text)


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
    return config
