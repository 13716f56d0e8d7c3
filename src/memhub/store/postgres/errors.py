"""Translate psycopg's exceptions into memhub's error tree, at the store boundary."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

import psycopg
import psycopg_pool

from memhub.errors import Conflict, StatementTimeout, StoreError, StoreUnavailable, UsageError

__all__ = ["translate_errors"]

# SQLSTATEs PostgreSQL gives a failed file operation besides its classes 53 (insufficient
# resources: a full disk, no memory) and 58 (system errors: I/O), which psycopg already makes
# OperationalError: errcode_for_file_access() reports EACCES, EPERM and EROFS as
# insufficient_privilege (42501), ENOTDIR and EISDIR as wrong_object_type (42809), and any
# other errno as internal_error (XX000). The same codes also mean a missing GRANT or a bug,
# which no retry cures, so only a message about a file or directory counts.
_FILE_ACCESS_STATES: Final = frozenset({"42501", "42809", "XX000"})
_FILE_OPERATION = re.compile(r'^could not [a-z ]+ (?:file|directory) "|\bin file "')


def _storage_fault(exc: psycopg.Error) -> bool:
    """True when PostgreSQL failed to read or write its own files (a permission, I/O).

    An operator's fix (the permission restored, the disk replaced) cures it without any
    change to the request, so it is an outage, like a full disk, not a failed statement.
    """
    message = exc.diag.message_primary or ""
    return exc.sqlstate in _FILE_ACCESS_STATES and bool(_FILE_OPERATION.search(message))


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
        if _storage_fault(exc):
            # PostgreSQL could not read or write its files (a permission changed under it):
            # a 503 with Retry-After like a full disk, not a 500.
            raise StoreUnavailable(f"{action}: database storage failed ({exc})") from exc
        raise StoreError(f"{action}: {exc}") from exc
