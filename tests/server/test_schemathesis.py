"""schemathesis over the whole OpenAPI schema, with a tenant key and with the admin key.

The app, on its own database, answers generated requests in-process; the run is bounded and
seeded so CI repeats it. It fails on any 5xx and any answer that breaks the schema (status
code, body); how fast answers come is not checked (on a loaded machine it says nothing
about the app). ``MEMHUB_SCHEMATHESIS_EXAMPLES`` sets the cases
per operation: the default, 150, makes over 2,000 requests per key (checked below), about
10 ms of CPU each (measured: 2 x 2,246 requests at 160 took 54 s of CPU, 4 min on a machine
shared by several test runs); lower it for a quick local run.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import hypothesis
import psycopg
import pytest
import schemathesis
from fastapi import FastAPI
from psycopg import sql
from pydantic import SecretStr
from schemathesis import checks
from schemathesis.python import asgi

from memhub import MemhubSettings
from memhub.server import ServerSettings, create_app
from tests.fix_postgres import TEMPLATE, database_url
from tests.server.conftest import ADMIN_KEY, bearer

DEFAULT_EXAMPLES = 150
EXAMPLES = int(os.environ.get("MEMHUB_SCHEMATHESIS_EXAMPLES", str(DEFAULT_EXAMPLES)))
# The bound: 2,000 cases per key, whenever the run is not cut down on purpose.
MIN_REQUESTS = 2_000 if EXAMPLES >= DEFAULT_EXAMPLES else 0
SEED = 20261130
CHECKS = [
    checks.not_a_server_error,
    checks.status_code_conformance,
    checks.response_schema_conformance,
    checks.content_type_conformance,
]


@pytest.fixture(scope="module")
def fuzzed_app(pg_admin_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[FastAPI]:
    """The app on its own database for the whole module (generated data piles up in it).

    Called in-process through schemathesis's ASGI transport, which runs the app's lifespan
    once on its own event loop thread: no port, no server thread. (It costs the same CPU per
    case as uvicorn on a loopback port: generating the cases is half of it.)
    """
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
        embedder="minilm",
        database_url=database_url(pg_admin_url, name),
        data_dir=tmp_path_factory.mktemp("schemathesis"),
        connect_timeout=30.0,  # as the settings fixture: a loaded machine is slow to connect
    )
    # Rate limits off: the run explores the API; 429s are tested on their own.
    server_settings = ServerSettings(
        admin_key=SecretStr(ADMIN_KEY),
        rate_limit=0,
        turn_rate_limit=0,
        max_queued_jobs=0,
        max_in_flight_per_key=0,
    )
    yield create_app(settings, server=server_settings)
    asgi.shutdown_lifespans()  # closes the app's memory, worker and pool
    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )


def _fuzz(app: FastAPI, key: str) -> tuple[int, list[str]]:
    """Every operation of the schema, EXAMPLES cases each; the count and the failures."""
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    failures: list[str] = []
    calls = 0

    def call(case: Any) -> None:
        nonlocal calls
        calls += 1
        response = case.call(headers=bearer(key), timeout=60)
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


def test_schema_with_a_tenant_key(fuzzed_app: FastAPI) -> None:
    with asgi.get_client(fuzzed_app) as client:
        response = client.post(
            f"http://{asgi.HOST}/v1/keys",
            json={"name": "fuzzed tenant", "tenant": "fuzz"},
            headers=bearer(ADMIN_KEY),
        )
    assert response.status_code == 201, response.text
    calls, failures = _fuzz(fuzzed_app, str(response.json()["key"]))
    print(f"tenant key: {calls} requests")
    assert not failures, "\n\n".join(failures)
    assert calls >= MIN_REQUESTS


def test_schema_with_the_admin_key(fuzzed_app: FastAPI) -> None:
    calls, failures = _fuzz(fuzzed_app, ADMIN_KEY)
    print(f"admin key: {calls} requests")
    assert not failures, "\n\n".join(failures)
    assert calls >= MIN_REQUESTS
