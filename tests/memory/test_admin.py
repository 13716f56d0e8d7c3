"""The admin API on real PostgreSQL: keys per tenant, users by keyset pages, the job queue."""

from __future__ import annotations

from collections.abc import AsyncIterator

import psycopg
import pytest

from memhub import AsyncMemory, MemhubSettings
from memhub.errors import ConfigurationError, UsageError
from memhub.memory.admin import AsyncAdmin


@pytest.fixture
async def memory(settings: MemhubSettings) -> AsyncIterator[AsyncMemory]:
    # No in-process worker: these tests read turns and the queue as the callers left them.
    async with AsyncMemory(settings=settings.model_copy(update={"worker": "off"})) as memory:
        await memory.open()
        yield memory


@pytest.fixture
def admin(memory: AsyncMemory) -> AsyncAdmin:
    return AsyncAdmin(memory)


async def _say(memory: AsyncMemory, *users: str) -> None:
    for user in users:
        await memory.add(f"{user} was here.", user_id=user, infer=False)


async def _all_pages(admin: AsyncAdmin, limit: int, tenant: str | None = None) -> list[str]:
    seen: list[str] = []
    cursor = None
    while True:
        page = await admin.list_users(tenant=tenant, limit=limit, cursor=cursor)
        seen += [row.user_id for row in page.results]
        if page.next_cursor is None:
            return seen
        cursor = page.next_cursor


async def test_keys_are_created_listed_resolved_and_revoked(admin: AsyncAdmin) -> None:
    key, secret = await admin.create_key("acme app", tenant="acme")
    assert key.tenant == "acme" and not key.is_admin
    assert secret.startswith(key.prefix)
    found = await admin.resolve_key(secret)
    assert found is not None and found.id == key.id
    assert await admin.resolve_key(secret + "x") is None
    assert [k.id for k in await admin.list_keys()] == [key.id]
    revoked = await admin.revoke_key(key.id)
    assert revoked is not None and revoked.revoked_at is not None
    assert await admin.resolve_key(secret) is None
    assert await admin.list_keys() == []
    assert [k.id for k in await admin.list_keys(include_revoked=True)] == [key.id]


async def test_key_operations_stay_inside_their_tenant(admin: AsyncAdmin) -> None:
    acme, _ = await admin.create_key("a", tenant="acme")
    globex, globex_secret = await admin.create_key("g", tenant="globex")
    await admin.create_key("ops", is_admin=True)
    assert [k.id for k in await admin.list_keys(tenant="acme")] == [acme.id]
    # acme cannot revoke globex's key: it answers like a key that does not exist
    assert await admin.revoke_key(globex.id, tenant="acme") is None
    assert await admin.resolve_key(globex_secret) is not None
    assert await admin.revoke_key(globex.id, tenant="globex") is not None
    assert await admin.list_tenants() == {"acme": 1, "globex": 0}


@pytest.mark.parametrize(
    ("name", "tenant", "is_admin"),
    [("k", None, False), ("k", "acme", True), ("k", "Acme", False), ("k", "a:b", False)],
)
async def test_bad_keys_are_refused(
    admin: AsyncAdmin, name: str, tenant: str | None, is_admin: bool
) -> None:
    with pytest.raises(UsageError):
        await admin.create_key(name, tenant=tenant, is_admin=is_admin)
    assert await admin.list_keys() == []


async def test_the_first_admin_key_is_created_once(admin: AsyncAdmin) -> None:
    secret = await admin.bootstrap_admin_key()
    assert secret is not None
    assert await admin.bootstrap_admin_key() is None
    found = await admin.resolve_key(secret)
    assert found is not None and found.is_admin


async def test_users_are_counted_per_page(memory: AsyncMemory, admin: AsyncAdmin) -> None:
    await memory.add(["Jack one.", "Jack two."], user_id="jack", infer=False)
    await _say(memory, "kate")
    await memory.add("An agent's own turn.", agent_id="bot", infer=False)  # no user: not listed
    page = await admin.list_users()
    assert [(r.user_id, r.turns) for r in page.results] == [("jack", 2), ("kate", 1)]
    assert all(r.last_activity is not None for r in page.results)
    assert page.next_cursor is None
    (second,) = (await admin.list_users(limit=1, offset=1)).results
    assert second.user_id == "kate"


async def test_keyset_pages_have_no_gaps_or_repeats_while_users_arrive(
    memory: AsyncMemory, admin: AsyncAdmin
) -> None:
    first = [f"u{n:02d}" for n in range(0, 40, 2)]  # u00, u02, ... u38
    await _say(memory, *first)
    seen: list[str] = []
    added: list[str] = []
    cursor = None
    for turn in range(100):
        page = await admin.list_users(limit=3, cursor=cursor)
        seen += [row.user_id for row in page.results]
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
        # new users on both sides of the cursor, and a new turn for a user already listed
        fresh = [f"u{2 * turn + 1:02d}", f"v{turn:02d}", f"a{turn:02d}"]
        await _say(memory, *fresh, seen[-1])
        added += fresh
    assert len(seen) == len(set(seen)), "a user was listed twice"
    assert seen == sorted(seen)
    assert set(first) <= set(seen), "a user who was there all along was skipped"
    # users added ahead of the cursor are all listed; those behind it never
    assert {u for u in added if u.startswith("v")} <= set(seen)
    assert not {u for u in added if u.startswith("a")} & set(seen)


async def test_a_tenant_pages_through_its_own_users_only(
    memory: AsyncMemory, admin: AsyncAdmin
) -> None:
    await _say(memory, "acme:zed", "acme:amy", "acme-two:bob", "acmf:x", "acme:", "acm:y")
    await _say(memory, *[f"acme:u{n}" for n in range(5)])
    mine = await _all_pages(admin, 2, tenant="acme")
    assert mine == sorted(["acme:", "acme:amy", "acme:zed"] + [f"acme:u{n}" for n in range(5)])
    assert await _all_pages(admin, 100, tenant="acme-two") == ["acme-two:bob"]
    everyone = await _all_pages(admin, 4)
    assert len(everyone) == 11 == len(set(everyone))


async def test_ids_outside_ascii_are_paged_in_byte_order(
    memory: AsyncMemory, admin: AsyncAdmin
) -> None:
    users = ["zoë", "Zed", "émile", "ß", "日本", "acme:é", "acme:z"]
    await _say(memory, *users)
    assert await _all_pages(admin, 2) == sorted(users, key=lambda u: u.encode())
    assert await _all_pages(admin, 1, tenant="acme") == ["acme:z", "acme:é"]


@pytest.mark.parametrize("cursor", ["", "not-base64!", "WzFd", "e30"])
async def test_a_bad_cursor_is_a_usage_error(admin: AsyncAdmin, cursor: str) -> None:
    with pytest.raises(UsageError, match="cursor"):
        await admin.list_users(cursor=cursor)


async def test_the_user_page_reads_only_its_users(
    memory: AsyncMemory, aconn: psycopg.AsyncConnection[tuple[object, ...]]
) -> None:
    """No aggregate over every memory and turn: the ids come from byte-order indexes."""
    from psycopg import sql

    from memhub.store.postgres import users as pg_users

    await _say(memory, *[f"user{n:03d}" for n in range(30)])
    await aconn.execute("ANALYZE")
    await aconn.execute("SET enable_seqscan = off")  # tiny tables: ask what the plan can do
    rows = await pg_users.list_users(aconn, prefix="user0", after="user005", limit=3)
    assert [r.user_id for r in rows] == ["user006", "user007", "user008"]
    query, params = pg_users.users_page(prefix="user0", after="user005", limit=3)
    cur = await aconn.execute(sql.SQL("EXPLAIN {}").format(query), params)
    plan = "\n".join(str(row[0]) for row in await cur.fetchall())
    assert "memories_current_user_c" in plan, plan
    assert "conversation_context_user_c" in plan, plan


async def test_job_stats_parked_jobs_and_retry(
    memory: AsyncMemory, admin: AsyncAdmin, aconn: psycopg.AsyncConnection[tuple[object, ...]]
) -> None:
    await _say(memory, "lee", "acme:max")
    stats = await admin.job_stats()
    assert (stats.queued, stats.parked) == (2, 0)
    assert sum(kind["queued"] for kind in stats.by_kind.values()) == 2
    assert await admin.queued_jobs("acme", cap=10) == 1
    await aconn.execute(
        "UPDATE memory_jobs SET status = 'parked', last_error = 'boom' WHERE user_id = 'lee'"
    )
    (parked,) = await admin.parked_jobs()
    assert (parked.scope.user_id, parked.last_error) == ("lee", "boom")
    assert await admin.retry_parked([parked.id]) == 1
    assert (await admin.job_stats()).parked == 0
    await admin.ping()


async def test_a_memory_owner_is_found_after_deletion(
    memory: AsyncMemory, admin: AsyncAdmin
) -> None:
    added = await memory.add("Owned.", user_id="olga", agent_id="bot", infer=False)
    await memory.wait_idle()
    memory_id = added["results"][0]["id"]
    owner = {"user_id": "olga", "agent_id": "bot", "run_id": None}
    assert await admin.memory_owner(memory_id) == owner
    await memory.delete(memory_id, user_id="olga")
    assert await admin.memory_owner(memory_id) == owner


async def test_operator_views_need_postgresql_keys_do_not(settings: MemhubSettings) -> None:
    async with AsyncMemory(settings=settings.model_copy(update={"database_url": "memory://"})) as m:
        admin = AsyncAdmin(m)
        with pytest.raises(ConfigurationError, match="PostgreSQL"):
            await admin.list_users()
        key, secret = await admin.create_key("ci", tenant="acme")
        assert await admin.resolve_key(secret) == key


async def test_open_fails_at_once_on_an_unreachable_database(settings: MemhubSettings) -> None:
    """What the server's start relies on: open() connects, instead of the first call."""
    from memhub.errors import StoreUnavailable

    unreachable = settings.model_copy(
        update={"database_url": "postgresql://memhub@127.0.0.1:1/none", "connect_timeout": 1.0}
    )
    memory = AsyncMemory(settings=unreachable)
    with pytest.raises(StoreUnavailable):
        await memory.open()
    await memory.aclose()


async def test_a_cursor_after_the_longest_id_fits_the_rest_apis_cap(
    memory: AsyncMemory, admin: AsyncAdmin
) -> None:
    longest = "😀" * 255  # 4 bytes each in UTF-8
    await _say(memory, longest, "😀" * 254 + "😁")
    page = await admin.list_users(limit=1)
    assert page.next_cursor is not None and len(page.next_cursor) <= 1500
    (rest,) = (await admin.list_users(limit=1, cursor=page.next_cursor)).results
    assert rest.user_id == "😀" * 254 + "😁"
