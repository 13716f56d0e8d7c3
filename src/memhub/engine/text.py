"""Text normalisation for duplicate detection."""

from __future__ import annotations

import hashlib
import unicodedata

__all__ = ["memory_hash", "normalize_text"]


def normalize_text(text: str) -> str:
    """Case-folded, NFKC-normalised text with runs of white space collapsed."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def memory_hash(text: str) -> str:
    """Hash of the normalised text: equal hashes in one scope are the same memory."""
    return hashlib.md5(normalize_text(text).encode("utf-8"), usedforsecurity=False).hexdigest()
