"""Test plugins: an environment free of memhub's variables; one real embedded PostgreSQL per
session, a fresh database per test."""

pytest_plugins = ["tests.fix_env", "tests.fix_postgres", "tests.fix_pgbouncer"]
