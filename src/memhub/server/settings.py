"""The REST server's own settings (``MEMHUB_ADMIN_KEY``, ``MEMHUB_HOST``, ...)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from memhub.doors.access import AccessSettings

__all__ = ["ServerSettings"]


class ServerSettings(AccessSettings):
    """How ``memhub serve`` listens and authenticates. Read ``MEMHUB_*`` with :meth:`from_env`.

    Attributes:
        admin_key: A key with every right (managing keys, all users' data). Unset, the first
            start on an empty key table creates one and prints it once.
        host: The address to bind; with ``auth="off"`` it is always 127.0.0.1.
        port: The TCP port.
        auth: ``"on"`` requires an API key on every ``/v1`` call; ``"off"`` (local development
            only) treats every caller as admin.
        max_body_bytes: Larger request bodies are refused with 413 before being read.
        max_messages_per_add: More messages in one ``POST /v1/memories`` are refused (422).
        max_offset: Deeper ``offset`` values are refused (422): an OFFSET reads and drops
            every row before it.
        rate_limit: Requests a second each tenant key may make (a token bucket); 0 disables.
        rate_burst: Requests a tenant key may make at once after being idle.
        turn_rate_limit: Messages a second each tenant key may queue through ``add``.
        turn_burst: Messages a tenant key may queue at once after being idle.
        max_in_flight_per_key: Requests of one tenant key served at once; more are answered
            429 at once, so a flooding tenant cannot occupy the server. 0 disables.
        key_cache_seconds: How long a verified key is trusted without asking the database.
            A revocation through any process is pushed to every other one at once
            (LISTEN/NOTIFY); this is the bound while that is not possible (the listening
            session lost, PgBouncer without a direct URL). 0 disables.
        max_queued_jobs: Adds of one tenant waiting for the worker; more are refused with 429
            so one tenant cannot bury the queue. 0 disables.
        flood_hold_seconds: Past 50 refusals of one tenant key within a second, its further
            429s are sent after this delay (until it has had none for the delay plus 1 s), so
            a client that waits for each answer floods at one request per delay and
            connection. 0 disables.
        request_slots: Tenant requests served at once; a tenant with nothing running or
            waiting starts at once in one spare slot, more wait their tenant's turn (the
            tenant with the fewest running goes next, an over-quota key's requests after the
            others'). 0: one fewer than the cores this process may use, at least one.
    """

    # admin_key, rate_limit, rate_burst, max_in_flight_per_key, key_cache_seconds and
    # request_slots are AccessSettings', shared with the MCP HTTP transport.
    # extra="ignore": MEMHUB_* also holds MemhubSettings' variables.
    model_config = SettingsConfigDict(env_prefix="MEMHUB_", extra="ignore")

    host: str = "127.0.0.1"
    port: int = Field(default=8765, ge=0, le=65535)
    auth: Literal["on", "off"] = "on"
    max_body_bytes: int = Field(default=1_048_576, ge=1024)
    max_messages_per_add: int = Field(default=100, ge=1)
    max_offset: int = Field(default=1_000_000, ge=0)
    turn_rate_limit: float = Field(default=50.0, ge=0)
    turn_burst: float = Field(default=200.0, ge=1)
    max_queued_jobs: int = Field(default=1_000, ge=0)
    flood_hold_seconds: float = Field(default=1.0, ge=0, le=30)
