"""The names of a named embedding space's schema, and its migrations (no I/O)."""

from __future__ import annotations

import hashlib
import re

from memhub.store.postgres.migrate import Migration

__all__ = ["SPACE_SCHEMA_PREFIX", "space_migrations", "space_schema"]

SPACE_SCHEMA_PREFIX = "memhub_space_"


def space_schema(name: str) -> str:
    """The schema of the space ``name``: readable, and distinct for distinct names (digest)."""
    slug = re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")[:32]
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{SPACE_SCHEMA_PREFIX}{slug}_{digest}" if slug else f"{SPACE_SCHEMA_PREFIX}{digest}"


def space_migrations(schema: str, migrations: list[Migration]) -> list[Migration]:
    """``migrations`` for a space's schema: an index a file drops "if it exists" is the
    space's own (unqualified, the name would fall through the search path to the default
    space's index of that name while the space's does not exist yet)."""
    drop = re.compile(r"(DROP INDEX (?:CONCURRENTLY )?IF EXISTS )(\w+)")
    return [
        Migration(m.version, drop.sub(lambda found: f"{found[1]}{schema}.{found[2]}", m.sql))
        for m in migrations
    ]
