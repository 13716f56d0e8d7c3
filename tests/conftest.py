"""Test plugins: one real embedded PostgreSQL per session, a fresh database per test."""

pytest_plugins = ["tests.fix_postgres", "tests.fix_pgbouncer"]
