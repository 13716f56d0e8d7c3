"""Fixtures for facade tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from memhub import AsyncMemory, MemhubSettings
from memhub._portal import run_sync


@pytest.fixture
def shared_memory(settings: MemhubSettings) -> Iterator[AsyncMemory]:
    """An AsyncMemory living on memhub's portal loop, for sync-driven tests (hypothesis)."""
    memory = AsyncMemory(settings=settings)
    yield memory
    run_sync(memory.aclose())
