"""The one PostgreSQL URL builder: every part survives a round trip through libpq's parser."""

from __future__ import annotations

from psycopg.conninfo import conninfo_to_dict

from memhub.config import postgres_url


def test_awkward_parts_round_trip() -> None:
    url = postgres_url("db.internal", 6543, "me@corp", "p@ss/w:rd%?#", "my db/1")
    assert conninfo_to_dict(url) == {
        "host": "db.internal",
        "port": "6543",
        "user": "me@corp",
        "password": "p@ss/w:rd%?#",
        "dbname": "my db/1",
    }


def test_defaults_and_ipv6() -> None:
    assert postgres_url("localhost") == "postgresql://postgres@localhost:5432/postgres"
    assert conninfo_to_dict(postgres_url("::1", None, "u"))["host"] == "::1"
