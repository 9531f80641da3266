"""Domain errors: what the layers below the API raise, each with its HTTP status and its
ArchivesSpace-shaped body (fonds.api.errors answers them). No web framework here: the processes
writing large imports hold none."""

from __future__ import annotations

import orjson

FieldErrors = dict[str, list[str]]


class FondsError(Exception):
    status = 500

    def __init__(self, error: str | FieldErrors, **extra):
        super().__init__(error if isinstance(error, str) else orjson.dumps(error).decode())
        self.error = error
        self.extra = extra

    def body(self) -> dict:
        return {"error": self.error, **self.extra}

    def headers(self) -> dict[str, str]:
        return {}

    def __reduce__(self):
        # As raised: an error crosses from the processes writing large imports to the server,
        # and Exception's own pickling would rebuild it from its message alone.
        return _rebuilt, (self.__class__, self.error, self.extra), self.__dict__


def _rebuilt(cls: type[FondsError], error: str | FieldErrors, extra: dict) -> FondsError:
    rebuilt = cls.__new__(cls)
    FondsError.__init__(rebuilt, error, **extra)
    return rebuilt


class BadRequest(FondsError):
    """400: the request itself is wrong (unparseable, bad parameter, reference to nothing)."""

    status = 400


class Invalid(BadRequest):
    """400 for a record that fails validation: `{"error": {path: [msgs]}, "warning": {...}}`."""

    def __init__(self, errors: FieldErrors, warnings: FieldErrors | None = None):
        super().__init__(errors, warning=warnings or {})


def nested_under(error: Invalid, prefix: str) -> Invalid:
    """A record's validation errors, named by where the record sits in a batch (`children/3/title`)."""
    errors = error.error if isinstance(error.error, dict) else {"": [str(error.error)]}
    warnings = error.extra.get("warning") or {}
    return Invalid({f"{prefix}/{path}".rstrip("/"): messages for path, messages in errors.items()}, warnings)


def invalid_field(path: str, message: str) -> Invalid:
    return Invalid({path: [message]})


def missing_parameter(*names: str) -> Invalid:
    return Invalid({name: ["Parameter required but no value provided"] for name in names})


class Denied(FondsError):
    status = 403

    def __init__(self, error: str = "Access denied"):
        super().__init__(error)


class LoginFailed(Denied):
    def __init__(self):
        super().__init__("Login failed")


class NotFound(FondsError):
    status = 404


class Conflict(FondsError):
    status = 409


class SessionGone(FondsError):
    status = 412

    def __init__(self, code: str = "SESSION_GONE", error: str = "No session found for the token given"):
        super().__init__(error, code=code)


class TooLarge(FondsError):
    status = 413


class TooManyRequests(FondsError):
    status = 429

    def __init__(self, error: str, retry_after: int):
        super().__init__(error)
        self.retry_after = retry_after

    def headers(self) -> dict[str, str]:
        return {"Retry-After": str(self.retry_after)}


class ServiceBusy(TooManyRequests):
    """503: the server is busy with work of this kind (password hashing); Retry-After says when to retry."""

    status = 503
