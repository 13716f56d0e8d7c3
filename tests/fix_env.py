"""Every test starts from an environment without memhub's variables but one.

A developer's ``MEMHUB_LLM_MODEL`` or ``DB_URL`` must not change what a test exercises; tests
that are about the environment set the variables they need with ``monkeypatch``.

The one variable set: the suite embeds with all-MiniLM-L6-v2 (``MEMHUB_EMBEDDER=minilm``), the
smaller of memhub's two in-process models, a real model that installs with memhub. The default,
all-mpnet-base-v2 int8, embeds several times slower and is built into the model cache on
first use; tests/embed/test_default_model.py runs it end to end, and the guard below fails
any other test that builds it by accident.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import pytest

# MEMHUB_TEST_* are the opt-in switches of the tests themselves (a real LLM, say): kept.
_READ_BY_MEMHUB = ("MEMHUB_", "MEM0_", "MEM0__")
_NAMES = ("DB_URL", "OPENAI_API_KEY")
#: What every test's environment holds (see the module docstring).
TEST_ENVIRONMENT = {"MEMHUB_EMBEDDER": "minilm"}


def memhub_variables(environ: Mapping[str, str]) -> list[str]:
    """The names in ``environ`` that memhub (or a seed it honours) reads."""
    return [
        name
        for name in environ
        if (name.startswith(_READ_BY_MEMHUB) and not name.startswith("MEMHUB_TEST_"))
        or name in _NAMES
    ]


@pytest.fixture(autouse=True)
def _isolated_environment(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> None:
    for name in memhub_variables(os.environ):
        monkeypatch.delenv(name)
    for name, value in TEST_ENVIRONMENT.items():
        monkeypatch.setenv(name, value)
    if request.node.get_closest_marker("default_model") is None:
        import memhub.embed.packaged

        build = memhub.embed.packaged.prepare
        shipped = list(memhub.embed.packaged.PACKAGED_MODELS.values())

        def refuse(model: memhub.embed.packaged.PackagedModel, *args: object) -> object:
            # Tiny models split into packages a test wrote are built for real.
            if model not in shipped:
                return build(model, *args)  # type: ignore[arg-type]
            raise AssertionError(
                "this test built memhub's default embedding model; the suite embeds with "
                "all-MiniLM-L6-v2 (embedder='minilm'; tests/fix_env.py says why)"
            )

        monkeypatch.setattr(memhub.embed.packaged, "prepare", refuse)
