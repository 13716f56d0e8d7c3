"""memhub's storage: the protocol (one per concern), its records, and the back ends behind it.

:func:`open_store` picks the back end from the settings' URL; outside ``store/`` nothing names
one (``tests/test_layers.py``). Back ends are imported only when opened: ``import memhub``
loads no database driver.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memhub.config import MemhubSettings
    from memhub.store.protocol import Store

__all__ = ["close_all_stores", "open_store"]


async def open_store(settings: MemhubSettings) -> Store:
    """The store the settings name: ``memory://`` in-process, PostgreSQL otherwise.

    PostgreSQL's store also meets :class:`~memhub.store.protocol.OpsStore` and
    :class:`~memhub.store.protocol.BulkStore`; ask with ``isinstance``.
    """
    if (settings.database_url or "").startswith("memory://"):
        from memhub.store.inmemory.store import InMemoryStore

        return await InMemoryStore.open(settings)
    from memhub.store.postgres.store import PostgresStore

    return await PostgresStore.open(settings)


async def close_all_stores() -> None:
    """Close every database pool opened on the running loop (interpreter exit)."""
    from memhub.store.postgres.database import close_all_databases

    await close_all_databases()
