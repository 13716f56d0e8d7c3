"""Translate psycopg's exceptions into memhub's error tree, at the store boundary."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
import psycopg_pool

from memhub.errors import Conflict, StatementTimeout, StoreError, StoreUnavailable, UsageError

__all__ = ["translate_errors"]


@contextmanager
def translate_errors(action: str) -> Iterator[None]:
    """Re-raise psycopg and pool failures as :class:`StoreError` subclasses naming ``action``."""
    try:
        yield
    except (psycopg.errors.DeadlockDetected, psycopg.errors.SerializationFailure) as exc:
        # The cause (with the server's details) stays on __cause__ for the log.
        raise Conflict(f"{action}: a concurrent change won; retry") from exc
    except psycopg.errors.UniqueViolation as exc:
        raise Conflict(f"{action}: it would duplicate an existing row") from exc
    except psycopg.errors.DataError as exc:
        # Values the checks upstream let through but PostgreSQL refuses (out of range,
        # unsupported escapes): the caller's input, so a UsageError, never a server error.
        refused = exc.diag.message_primary or str(exc)  # None when psycopg refused it
        raise UsageError(f"{action}: the database refused a value: {refused}") from exc
    except psycopg_pool.PoolTimeout as exc:
        raise StoreUnavailable(f"{action}: no database connection available ({exc})") from exc
    except psycopg.errors.QueryCanceled as exc:
        # Before OperationalError, its base class: a statement that times out fails the work
        # that ran it (a job counts an attempt), where an unreachable database does not.
        raise StatementTimeout(f"{action}: statement timed out or was cancelled ({exc})") from exc
    except (psycopg.OperationalError, psycopg.errors.AdminShutdown, OSError) as exc:
        raise StoreUnavailable(f"{action}: database unavailable ({exc})") from exc
    except psycopg.Error as exc:
        raise StoreError(f"{action}: {exc}") from exc
