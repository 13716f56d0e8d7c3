"""Nothing ever crosses a scope: random users, agents, runs and operations (property-based)."""

from __future__ import annotations

import asyncio

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memhub import AsyncMemory

USERS = ["ann", "ben", "cat"]
AGENTS = [None, "bot"]
RUNS = [None, "r1", "r2"]

scopes = st.tuples(st.sampled_from(USERS), st.sampled_from(AGENTS), st.sampled_from(RUNS))
operations = st.lists(
    st.tuples(
        st.sampled_from(["add", "add", "add", "delete_all", "delete_one"]),
        scopes,
        st.integers(0, 50),
    ),
    min_size=1,
    max_size=12,
)


def _owned(item: dict[str, object], user: str, agent: str | None, run: str | None) -> bool:
    return (
        item.get("user_id") == user
        and (agent is None or item.get("agent_id") == agent)
        and (run is None or item.get("run_id") == run)
    )


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=operations, probe=scopes)
def test_reads_and_deletes_stay_inside_their_scope(
    shared_memory: AsyncMemory,
    ops: list[tuple[str, tuple[str, str | None, str | None], int]],
    probe: tuple[str, str | None, str | None],
) -> None:
    async def scenario() -> None:
        memory = shared_memory
        await memory.reset()
        expected: dict[tuple[str, str | None, str | None], set[str]] = {}
        for op, (user, agent, run), n in ops:
            if op == "add":
                text = f"{user} {agent} {run} secret {n}"
                await memory.add(
                    text, user_id=user, agent_id=agent, run_id=run, infer=False, wait=True
                )
                expected.setdefault((user, agent, run), set()).add(text)
            elif op == "delete_all":
                await memory.delete_all(user_id=user, agent_id=agent, run_id=run)
                for key in list(expected):
                    if (
                        key[0] == user
                        and (agent is None or key[1] == agent)
                        and (run is None or key[2] == run)
                    ):
                        expected.pop(key)
            else:
                found = (await memory.get_all(user_id=user, agent_id=agent, run_id=run))["results"]
                if found:
                    # Deleting by id with another user's scope must fail and change nothing.
                    other = next(u for u in USERS if u != user)
                    assert await memory.get(found[0]["id"], user_id=other) is None
        user, agent, run = probe
        want = {
            t
            for (u, a, r), texts in expected.items()
            if u == user and (agent is None or a == agent) and (run is None or r == run)
            for t in texts
        }
        listed = (await memory.get_all(user_id=user, agent_id=agent, run_id=run))["results"]
        assert {i["memory"] for i in listed} == want
        assert all(_owned(dict(i), user, agent, run) for i in listed)
        hits = (await memory.search("secret", user_id=user, agent_id=agent, run_id=run, limit=50))[
            "results"
        ]
        assert {h["memory"] for h in hits} <= want
        assert all(_owned(dict(h), user, agent, run) for h in hits)

    asyncio.run_coroutine_threadsafe(scenario(), shared_memory_loop()).result(120)


def shared_memory_loop() -> asyncio.AbstractEventLoop:
    from memhub._portal import portal_loop

    return portal_loop()
