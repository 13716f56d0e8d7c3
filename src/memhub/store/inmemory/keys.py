"""API keys of the in-process store: the rules of ``postgres.keys``, on a dict of this process."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from memhub.store.api_keys import SHOWN_CHARS, ApiKey, hash_key, new_key

__all__ = ["InMemoryKeys"]

_TOUCH_EVERY = timedelta(minutes=1)  # as in PostgreSQL: spare a write per request


class InMemoryKeys:
    """Keys by id, each with the hash of its secret."""

    def __init__(self) -> None:
        self._keys: dict[int, tuple[ApiKey, str]] = {}

    async def create_key(self, name: str, tenant: str | None, is_admin: bool) -> tuple[ApiKey, str]:
        secret = new_key()
        key_id = max(self._keys, default=0) + 1
        key = ApiKey(
            key_id, name, secret[:SHOWN_CHARS], tenant, is_admin, datetime.now(UTC), None, None
        )
        self._keys[key_id] = (key, hash_key(secret))
        return key, secret

    async def list_keys(self, include_revoked: bool, tenant: str | None = None) -> list[ApiKey]:
        return [
            key
            for _, (key, _hash) in sorted(self._keys.items())
            if (include_revoked or key.revoked_at is None)
            and (tenant is None or key.tenant == tenant)
        ]

    async def revoke_key(self, key_id: int, tenant: str | None = None) -> ApiKey | None:
        found = self._keys.get(key_id)
        if found is None or (tenant is not None and found[0].tenant != tenant):
            return None
        key, digest = found
        if key.revoked_at is None:
            key = dataclasses.replace(key, revoked_at=datetime.now(UTC))
            self._keys[key_id] = (key, digest)
        return key

    async def find_active_key(self, key: str) -> ApiKey | None:
        digest = hash_key(key)
        for key_id, (stored, stored_digest) in self._keys.items():
            if stored_digest == digest and stored.revoked_at is None:
                now = datetime.now(UTC)
                if stored.last_used_at is None or stored.last_used_at < now - _TOUCH_EVERY:
                    self._keys[key_id] = (dataclasses.replace(stored, last_used_at=now), digest)
                return stored  # as read before the touch, like PostgreSQL's statement
        return None

    async def watch_key_changes(self, changed: Callable[[int | None], None]) -> None:
        # No other process shares these keys, and this one's callers forget what they
        # revoke: nothing to watch.
        return None

    async def list_tenants(self) -> dict[str, int]:
        tenants: dict[str, int] = {}
        for key, _digest in self._keys.values():
            if key.tenant is not None:
                tenants[key.tenant] = tenants.get(key.tenant, 0) + (key.revoked_at is None)
        return dict(sorted(tenants.items()))

    async def bootstrap_admin_key(self) -> str | None:
        if self._keys:
            return None
        _, secret = await self.create_key("bootstrap admin", None, True)
        return secret
