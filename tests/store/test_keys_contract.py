"""The API-key contract, run on PostgreSQL and on the in-process store (``store`` fixture)."""

from __future__ import annotations

from memhub.store.api_keys import KEY_PREFIX
from memhub.store.protocol import Store


async def test_a_key_is_found_by_its_secret_only(store: Store) -> None:
    key, secret = await store.create_key("ci", "acme", False)
    assert secret.startswith(KEY_PREFIX) and secret.startswith(key.prefix)
    assert len(key.prefix) < len(secret)  # listings never show the secret
    found = await store.find_active_key(secret)
    assert found is not None and (found.id, found.tenant, found.is_admin) == (key.id, "acme", False)
    assert await store.find_active_key(secret + "x") is None
    assert await store.find_active_key(key.prefix) is None


async def test_finding_a_key_marks_it_used(store: Store) -> None:
    key, secret = await store.create_key("ci", "acme", False)
    assert key.last_used_at is None
    await store.find_active_key(secret)
    (listed,) = await store.list_keys(False)
    assert listed.last_used_at is not None


async def test_revoking_is_scoped_to_the_tenant_and_idempotent(store: Store) -> None:
    key, secret = await store.create_key("ci", "acme", False)
    assert await store.revoke_key(key.id, "other") is None  # another tenant's key: not found
    assert await store.find_active_key(secret) is not None
    revoked = await store.revoke_key(key.id, "acme")
    assert revoked is not None and revoked.revoked_at is not None
    assert await store.find_active_key(secret) is None
    again = await store.revoke_key(key.id)
    assert again is not None and again.revoked_at == revoked.revoked_at
    assert await store.revoke_key(key.id + 1000) is None


async def test_listing_filters_by_tenant_and_revocation_oldest_first(store: Store) -> None:
    a1, _ = await store.create_key("a1", "acme", False)
    b1, _ = await store.create_key("b1", "bolt", False)
    admin, _ = await store.create_key("root", None, True)
    await store.create_key("a2", "acme", False)
    await store.revoke_key(a1.id)
    assert [k.name for k in await store.list_keys(False)] == ["b1", "root", "a2"]
    assert [k.name for k in await store.list_keys(True)] == ["a1", "b1", "root", "a2"]
    assert [k.name for k in await store.list_keys(True, "acme")] == ["a1", "a2"]
    assert [k.name for k in await store.list_keys(False, "acme")] == ["a2"]
    await store.revoke_key(b1.id)
    assert await store.list_tenants() == {"acme": 1, "bolt": 0}  # admin keys have no tenant
    assert admin.is_admin and admin.tenant is None


async def test_bootstrap_creates_one_admin_key_on_an_empty_store(store: Store) -> None:
    secret = await store.bootstrap_admin_key()
    assert secret is not None
    found = await store.find_active_key(secret)
    assert found is not None and found.is_admin and found.tenant is None
    assert await store.bootstrap_admin_key() is None
    assert len(await store.list_keys(True)) == 1
