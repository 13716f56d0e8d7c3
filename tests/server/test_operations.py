"""The admin operations routes: queue per worker lane and job kind, LLM use per day, parked jobs and retry."""

from __future__ import annotations

import httpx

from tests.server.test_validation import Conn


async def park_a_job(aconn: Conn) -> int:
    cur = await aconn.execute(
        "INSERT INTO memory_jobs (kind, user_id, payload, status, attempts, last_error)"
        " VALUES ('ingest', 'acme:zed', '{\"turn_ids\": []}', 'parked', 5,"
        " 'ProviderHTTPError: the LLM said 500') RETURNING id"
    )
    row = await cur.fetchone()
    assert row is not None
    await aconn.execute(
        "INSERT INTO memory_llm_usage (model, calls, prompt_tokens, completion_tokens, turns,"
        " jobs) VALUES ('m', 3, 1200, 300, 6, 2)"
    )
    return int(row[0])


async def test_operations_routes(
    client: httpx.AsyncClient, tenant_a: httpx.AsyncClient, aconn: Conn
) -> None:
    job_id = await park_a_job(aconn)
    stats = (await client.get("/v1/jobs/stats")).json()
    assert stats["by_kind"]["ingest"]["parked"] == 1
    assert stats["by_lane"] == {
        "ingest": {
            "kinds": ["ingest"],
            "queued": 0,
            "running": 0,
            "parked": 1,
            "oldest_queued_seconds": 0,
        },
        "consolidate": {
            "kinds": [],
            "queued": 0,
            "running": 0,
            "parked": 0,
            "oldest_queued_seconds": 0,
        },
    }
    (today,) = stats["llm_per_day"]
    assert (today["calls"], today["prompt_tokens"], today["completion_tokens"]) == (3, 1200, 300)
    parked = (await client.get("/v1/jobs/parked")).json()["results"]
    assert [(j["id"], j["user_id"], j["attempts"]) for j in parked] == [(job_id, "acme:zed", 5)]
    assert "the LLM said 500" in parked[0]["last_error"]

    for path in ("/v1/jobs/parked", "/v1/jobs/stats"):
        assert (await tenant_a.get(path)).status_code == 403
    assert (await tenant_a.post("/v1/jobs/retry", json={"ids": [job_id]})).status_code == 403

    retried = await client.post("/v1/jobs/retry", json={"ids": [job_id]})
    assert retried.json() == {"requeued": 1}
    assert (await client.get("/v1/jobs/parked")).json()["results"] == []


async def test_queue_per_lane_counts_waiting_and_leased_jobs(
    client: httpx.AsyncClient, aconn: Conn
) -> None:
    # Queued far in the future so the test's worker leaves them alone.
    await aconn.execute(
        "INSERT INTO memory_jobs (kind, user_id, payload, status, created_at, run_after,"
        " lease_owner, lease_until) VALUES"
        " ('consolidate', 'u', '{}', 'queued', now() - interval '120 seconds',"
        "  now() + interval '1 day', NULL, NULL),"
        " ('consolidate', 'u', '{}', 'queued', now() - interval '10 seconds',"
        "  now() + interval '1 day', 'w1', now() + interval '1 day'),"
        " ('reembed', 'u', '{}', 'queued', now(), now() + interval '1 day', NULL, NULL)"
    )
    lanes = (await client.get("/v1/jobs/stats")).json()["by_lane"]
    consolidate = lanes["consolidate"]
    assert (consolidate["queued"], consolidate["running"]) == (2, 1)
    assert 120 <= consolidate["oldest_queued_seconds"] < 180
    # A kind nobody handles is the ingest lane's (which parks it with an error).
    assert lanes["ingest"]["kinds"] == ["reembed"]
    assert lanes["ingest"]["queued"] == 1
