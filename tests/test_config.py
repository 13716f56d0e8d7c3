"""Settings objects: explicit ones ignore the environment, ``from_env()`` reads it, keys stay secret."""

from __future__ import annotations

import os

import pytest

from memhub.config import MemhubSettings
from memhub.server.settings import ServerSettings
from tests.fix_env import TEST_ENVIRONMENT, memhub_variables


def test_explicit_settings_ignore_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMHUB_LLM_MODEL", "leaked-model")
    monkeypatch.setenv("DB_URL", "postgresql://leaked/db")
    monkeypatch.setenv("MEMHUB_ADMIN_KEY", "leaked-admin-key-0123456789")
    explicit = MemhubSettings(llm_base_url="http://localhost:8000/v1")
    assert explicit.llm_model is None and explicit.database_url is None
    assert not explicit.llm_configured
    assert ServerSettings().admin_key is None


def test_from_env_reads_memhub_and_arkos_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMHUB_LLM_MODEL", "qwen2.5:7b")
    monkeypatch.setenv("DB_URL", "postgresql://arkos/db")
    monkeypatch.setenv("MEMHUB_ADMIN_KEY", "admin-key-0123456789")
    settings = MemhubSettings.from_env(llm_base_url="http://gpu:8000/v1", max_text_chars=None)
    assert (settings.llm_model, settings.database_url) == ("qwen2.5:7b", "postgresql://arkos/db")
    assert settings.llm_base_url == "http://gpu:8000/v1"  # explicit overrides win
    assert settings.max_text_chars == 32_000  # None overrides are ignored
    server = ServerSettings.from_env(port=9000)
    assert server.port == 9000 and server.admin_key is not None
    # The environment is read only during from_env(): the next explicit object is clean again.
    assert MemhubSettings().llm_model is None


def test_api_keys_are_secret_in_repr() -> None:
    settings = MemhubSettings(llm_api_key="sk-llm-secret", embedder_api_key="sk-embed-secret")
    shown = repr(settings) + str(settings) + settings.model_dump_json()
    assert "sk-llm-secret" not in shown and "sk-embed-secret" not in shown
    assert settings.llm_api_key is not None
    assert settings.llm_api_key.get_secret_value() == "sk-llm-secret"


def test_the_test_environment_holds_no_memhub_variables_but_its_embedder() -> None:
    # tests/fix_env.py strips them before every test, then sets its one.
    assert memhub_variables(os.environ) == list(TEST_ENVIRONMENT)


def test_arkos_memory_reads_the_environment_explicit_settings_do_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from memhub import AsyncMemory, Memory

    monkeypatch.setenv("DB_URL", "postgresql://arkos@db/arkos")
    monkeypatch.setenv("MEMHUB_LLM_MODEL", "qwen2.5:7b")
    # ARKOS: Memory(user_id, session_id, db_url, use_long_term) and the environment applies.
    arkos = Memory("user-1", "session-1", None, True)
    assert arkos.settings.database_url == "postgresql://arkos@db/arkos"
    assert arkos.settings.llm_model == "qwen2.5:7b"
    given = AsyncMemory("user-1", "session-1", "postgresql://given/db", True)
    assert given.settings.database_url == "postgresql://given/db"  # an explicit db_url wins
    explicit = AsyncMemory("user-1", settings=MemhubSettings(embedder="minilm", worker="off"))
    assert explicit.settings.database_url is None and explicit.settings.llm_model is None
