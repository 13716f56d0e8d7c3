"""The REST server's own settings (``MEMHUB_ADMIN_KEY``, ``MEMHUB_HOST``, ...)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, SecretStr
from pydantic_settings import SettingsConfigDict

from memhub.config import EnvSettings

__all__ = ["ServerSettings"]


class ServerSettings(EnvSettings):
    """How ``memhub serve`` listens and authenticates. Read ``MEMHUB_*`` with :meth:`from_env`.

    Attributes:
        admin_key: A key with every right (managing keys, all users' data). Unset, the first
            start on an empty key table creates one and prints it once.
        host: The address to bind; with ``auth="off"`` it is always 127.0.0.1.
        port: The TCP port.
        auth: ``"on"`` requires an API key on every ``/v1`` call; ``"off"`` (local development
            only) treats every caller as admin.
    """

    # extra="ignore": MEMHUB_* also holds MemhubSettings' variables.
    model_config = SettingsConfigDict(env_prefix="MEMHUB_", extra="ignore")

    admin_key: SecretStr | None = Field(default=None, min_length=16)
    host: str = "127.0.0.1"
    port: int = Field(default=8765, ge=0, le=65535)
    auth: Literal["on", "off"] = "on"
