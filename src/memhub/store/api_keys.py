"""API keys as every back end stores them: the record, and how a secret is made and hashed.

Keys are 256-bit random tokens. Only their SHA-256 is stored: a slow password hash (bcrypt,
argon2) defends guessable secrets against brute force, which a 2**256 search space already
rules out, and a plain digest lets every request find its key with one indexed lookup.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import datetime

__all__ = ["KEY_PREFIX", "SHOWN_CHARS", "ApiKey", "hash_key", "keys_equal", "new_key"]

KEY_PREFIX = "mhk_"
SHOWN_CHARS = len(KEY_PREFIX) + 6
"""Shown in listings so people can tell keys apart without the secret: "mhk_" + 6 characters."""


@dataclass(frozen=True)
class ApiKey:
    """One stored key, without its secret."""

    id: int
    name: str
    prefix: str
    tenant: str | None
    is_admin: bool
    created_at: datetime
    revoked_at: datetime | None
    last_used_at: datetime | None


def new_key() -> str:
    """A fresh random key (43 URL-safe characters of entropy after the prefix)."""
    return KEY_PREFIX + secrets.token_urlsafe(32)


def hash_key(key: str) -> str:
    """The stored form of ``key``."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def keys_equal(presented: str, expected: str) -> bool:
    """Constant-time comparison of two keys (through their digests, so lengths leak nothing)."""
    return hmac.compare_digest(hash_key(presented), hash_key(expected))
