"""Every test starts from an environment without memhub's variables.

A developer's ``MEMHUB_LLM_MODEL`` or ``DB_URL`` must not change what a test exercises; tests
that are about the environment set the variables they need with ``monkeypatch``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import pytest

# MEMHUB_TEST_* are the opt-in switches of the tests themselves (a real LLM, say): kept.
_READ_BY_MEMHUB = ("MEMHUB_", "MEM0_", "MEM0__")
_NAMES = ("DB_URL", "OPENAI_API_KEY")


def memhub_variables(environ: Mapping[str, str]) -> list[str]:
    """The names in ``environ`` that memhub (or a seed it honours) reads."""
    return [
        name
        for name in environ
        if (name.startswith(_READ_BY_MEMHUB) and not name.startswith("MEMHUB_TEST_"))
        or name in _NAMES
    ]


@pytest.fixture(autouse=True)
def _isolated_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in memhub_variables(os.environ):
        monkeypatch.delenv(name)
