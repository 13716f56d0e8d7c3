"""schemathesis over the whole OpenAPI schema, with a tenant key and with the admin key.

A real server (uvicorn on a loopback port, its own database) answers generated requests; the
run is bounded and seeded so CI repeats it. It fails on any 5xx, any answer that breaks the
schema (status code, body) and any answer slower than 5 s. ``MEMHUB_SCHEMATHESIS_EXAMPLES``
sets the cases per operation: the default, 40, makes about 500 requests per key (CI time on
2 cores); 170 makes about 2,000.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import hypothesis
import psycopg
import pytest
import schemathesis
import uvicorn
from psycopg import sql
from pydantic import SecretStr
from schemathesis import checks

from memhub import MemhubSettings
from memhub.server import ServerSettings, create_app
from tests.fix_postgres import TEMPLATE, database_url
from tests.server.conftest import ADMIN_KEY, bearer

EXAMPLES = int(os.environ.get("MEMHUB_SCHEMATHESIS_EXAMPLES", "40"))
SEED = 20261130
SLOW_SECONDS = 5.0
CHECKS = [
    checks.not_a_server_error,
    checks.status_code_conformance,
    checks.response_schema_conformance,
    checks.content_type_conformance,
]


@pytest.fixture(scope="module")
def base_url(pg_admin_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A server on its own database for the whole module (generated data piles up in it)."""
    name = "memhub_schemathesis"
    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )
        conn.execute(
            sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
                sql.Identifier(name), sql.Identifier(TEMPLATE)
            )
        )
    settings = MemhubSettings(
        database_url=database_url(pg_admin_url, name),
        data_dir=tmp_path_factory.mktemp("schemathesis"),
        connect_timeout=3.0,
    )
    # Rate limits off: the run explores the API; 429s are tested on their own.
    server_settings = ServerSettings(
        admin_key=SecretStr(ADMIN_KEY), rate_limit=0, turn_rate_limit=0, max_queued_jobs=0
    )
    app = create_app(settings, server=server_settings)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
        time.sleep(0.05)
    port = server.servers[0].sockets[0].getsockname()[1]
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(30)
    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )


def _fuzz(base_url: str, key: str) -> tuple[int, list[str]]:
    """Every operation of the schema, EXAMPLES cases each; the count and the failures."""
    schema = schemathesis.openapi.from_url(f"{base_url}/openapi.json")
    failures: list[str] = []
    calls = 0

    def call(case: Any) -> None:
        nonlocal calls
        calls += 1
        response = case.call(headers=bearer(key), timeout=60)
        slow = response.elapsed > SLOW_SECONDS
        assert not slow, f"{case.method} {case.path}: {response.elapsed:.1f} s"
        case.validate_response(response, checks=CHECKS)

    for result in schema.get_all_operations():
        operation = result.ok()
        test = hypothesis.given(case=operation.as_strategy())(call)
        test = hypothesis.seed(SEED)(test)
        test = hypothesis.settings(
            max_examples=EXAMPLES,
            derandomize=True,
            deadline=None,
            database=None,
            suppress_health_check=list(hypothesis.HealthCheck),
            phases=[hypothesis.Phase.explicit, hypothesis.Phase.generate],  # no shrinking
        )(test)
        try:
            test()
        except Exception as exc:  # collect every operation's failure, not only the first
            failures.append(f"{operation.label}: {exc}"[:2000])
    return calls, failures


def test_schema_with_a_tenant_key(base_url: str) -> None:
    response = httpx.post(
        f"{base_url}/v1/keys",
        json={"name": "fuzzed tenant", "tenant": "fuzz"},
        headers=bearer(ADMIN_KEY),
    )
    assert response.status_code == 201, response.text
    calls, failures = _fuzz(base_url, str(response.json()["key"]))
    print(f"tenant key: {calls} requests")
    assert not failures, "\n\n".join(failures)


def test_schema_with_the_admin_key(base_url: str) -> None:
    calls, failures = _fuzz(base_url, ADMIN_KEY)
    print(f"admin key: {calls} requests")
    assert not failures, "\n\n".join(failures)
