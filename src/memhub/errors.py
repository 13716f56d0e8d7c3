"""The one error tree of memhub.

    MemhubError
    ├── ConfigurationError          settings that cannot work (bad URL, dimension mismatch)
    ├── UsageError (ValueError)     the caller passed something invalid
    ├── ModelBudgetSpent            models changed as many of a user's memories as allowed
    ├── StoreError                  the database failed
    │   ├── StoreUnavailable        it cannot be reached (down, timeout, pool exhausted)
    │   ├── StatementTimeout        a statement ran past its time limit, or was cancelled
    │   ├── MemoryNotFound          no such memory in the caller's scope
    │   └── Conflict                a concurrent change won
    │       └── NotRestorable       restore of an erased, current or duplicated memory
    └── ProviderError               an embedder or LLM failed
        ├── ProviderHTTPError       the provider answered with an HTTP error or not at all
        └── ProviderOutputError     the provider answered with something unusable

Exceptions of dependencies (psycopg, openai, onnxruntime) are translated at the adapter
boundary with ``raise ... from exc`` so callers only ever catch these.
"""

from __future__ import annotations

__all__ = [
    "ConfigurationError",
    "Conflict",
    "MemhubError",
    "MemoryNotFound",
    "ModelBudgetSpent",
    "NotRestorable",
    "ProviderError",
    "ProviderHTTPError",
    "ProviderOutputError",
    "StatementTimeout",
    "StoreError",
    "StoreUnavailable",
    "UsageError",
    "install_hint",
]


class MemhubError(Exception):
    """Base of every error memhub raises on purpose."""

    __module__ = "memhub"


class ConfigurationError(MemhubError):
    """The configuration cannot work; the message names the fix."""

    __module__ = "memhub"


class UsageError(MemhubError, ValueError):
    """The caller passed an invalid argument; nothing was written."""

    __module__ = "memhub"


class ModelBudgetSpent(MemhubError):
    """A model's retire, supersede or reword was refused: models already changed as many of
    this user's memories as ``MEMHUB_MODEL_CHANGES_PER_DAY`` allows in the last 24 hours."""

    __module__ = "memhub"


class StoreError(MemhubError):
    """The database failed to do what was asked."""

    __module__ = "memhub"


class StoreUnavailable(StoreError):
    """The database cannot be reached right now; retrying later may work."""

    __module__ = "memhub"


class StatementTimeout(StoreError):
    """A statement ran past ``statement_timeout_ms`` (or was cancelled); the database is up.

    Not a :class:`StoreUnavailable`: the work that ran the statement failed (a background job
    counts an attempt and is parked after too many), the database did not go away.
    """

    __module__ = "memhub"


class MemoryNotFound(StoreError, KeyError):
    """No memory with that id exists in the caller's scope."""

    __module__ = "memhub"

    def __str__(self) -> str:  # KeyError quotes its argument; keep the plain message
        return str(self.args[0]) if self.args else "memory not found"


class Conflict(StoreError):
    """A concurrent change made this one impossible."""

    __module__ = "memhub"


class NotRestorable(Conflict):
    """``restore`` cannot bring this memory back: it was erased (the user's delete, or the
    retention purge), it is current already, or an equal memory is current now."""

    __module__ = "memhub"


class ProviderError(MemhubError):
    """An embedder or LLM provider failed."""

    __module__ = "memhub"


class ProviderHTTPError(ProviderError):
    """The provider answered with an HTTP error, or did not answer in time."""

    __module__ = "memhub"

    def __init__(self, message: str, *, status_code: int | None = None) -> None:
        super().__init__(message)
        self.status_code = status_code


class ProviderOutputError(ProviderError):
    """The provider answered, but with output memhub cannot use."""

    __module__ = "memhub"

    def __init__(self, message: str, *, raw: str | None = None) -> None:
        super().__init__(message)
        self.raw = raw


def install_hint(extra: str | None = None) -> str:
    """How to install memhub (with ``extra``), as error messages say it.

    memhub is installed from a checkout (or a wheel ``make dist`` built); the PyPI form is
    named too, for once it is published there.
    """
    target = "." if extra is None else f".[{extra}]"
    published = "memhub" if extra is None else f"memhub[{extra}]"
    return (
        f"in memhub's checkout run .venv/bin/pip install -e '{target}'"
        f" (once memhub is on PyPI: pip install '{published}')"
    )
