"""``plan_add``: what ``add()`` and ``memhub import`` write for the same input (no database)."""

from __future__ import annotations

from pathlib import Path

import pytest

from memhub.config import MemhubSettings
from memhub.engine.ingest import AddPlan, AddRequest, plan_add
from memhub.errors import UsageError
from memhub.memory.importer import Importer, ImportRecord
from memhub.memory.inputs import Limits, check_add
from memhub.messages import SystemMessage
from memhub.store.records import Scope

MESSAGES = [
    {"role": "system", "content": "You are a helpful assistant"},
    {"role": "user", "content": "I moved to Lyon"},
    {"role": "assistant", "content": "Noted"},
]


def _plan(*, infer: bool, extracts_facts: bool, key: str | None = None) -> AddPlan:
    request = check_add(
        Limits(),
        MESSAGES,
        user_id="ada",
        agent_id=None,
        run_id=None,
        metadata={"source": "chat"},
        timestamp=None,
        infer=infer,
        idempotency_key=key,
    )
    return plan_add(request, extracts_facts=extracts_facts, instructions="be brief")


def _settings(tmp_path: Path, **llm: str) -> MemhubSettings:
    return MemhubSettings(database_url="postgresql://nowhere/none", data_dir=tmp_path, **llm)


def test_raw_mode_keeps_system_messages_as_turns_only() -> None:
    plan = _plan(infer=True, extracts_facts=False)
    assert plan.one_per_turn
    assert [t.long_term for t in plan.turns] == [False, True, True]
    assert [t.memory is None for t in plan.turns] == [True, False, False]
    assert [m.role for m in plan.remembered] == ["user", "assistant"]
    memories = [t.memory for t in plan.turns if t.memory is not None]
    assert tuple(m.id for m in memories) == plan.memory_ids == plan.payload.memory_ids
    assert plan.job is not None and plan.job.payload == plan.payload


def test_the_payload_carries_the_event_id_and_the_instructions() -> None:
    plan = _plan(infer=True, extracts_facts=True)
    assert not plan.one_per_turn
    assert plan.payload.infer is True
    assert plan.payload.event_id is not None
    assert plan.payload.instructions == "be brief"
    # with an LLM too, a system message is a conversation turn only, never an episode
    assert [t.long_term for t in plan.turns] == [False, True, True]
    assert [m.role for m in plan.remembered] == ["user", "assistant"]
    # the episodes carry the caller's memory_type (none here), as without an LLM
    assert {t.memory.memory_type for t in plan.turns if t.memory} == {None}


def test_an_idempotency_key_gives_the_same_ids_again() -> None:
    first = _plan(infer=False, extracts_facts=False, key="k1")
    again = _plan(infer=False, extracts_facts=False, key="k1")
    other = _plan(infer=False, extracts_facts=False, key="k2")
    assert first.memory_ids == again.memory_ids != other.memory_ids
    assert first.payload.event_id == again.payload.event_id
    assert first.idempotency == again.idempotency is not None
    assert _plan(infer=False, extracts_facts=False).idempotency is None


def test_an_imported_item_is_planned_as_add_plans_it(tmp_path: Path) -> None:
    llm = {"llm_model": "m", "llm_base_url": "http://127.0.0.1:9/v1"}
    record = ImportRecord(MESSAGES, "ada", None, None, {"source": "chat"}, None, None)
    for infer, settings in [
        (False, _settings(tmp_path)),
        (True, _settings(tmp_path, **llm)),
    ]:
        item = Importer(settings, infer=infer).check(record)
        added = _plan(infer=infer, extracts_facts=settings.llm_configured)
        assert item.one_per_turn == added.one_per_turn
        assert item.payload.event_id is not None
        assert [(t.role, t.long_term, t.memory is None) for t in item.turns] == [
            (t.role, t.long_term, t.memory is None) for t in added.turns
        ]


def test_an_imported_item_is_checked_as_add_checks_it(tmp_path: Path) -> None:
    importer = Importer(_settings(tmp_path), infer=False)
    with pytest.raises(UsageError, match="one of user_id, agent_id or run_id is required"):
        importer.check(ImportRecord("hi", None, None, None, None, None, None))
    with pytest.raises(UsageError, match="metadata cannot set scope ids"):
        importer.check(ImportRecord("hi", "ada", None, None, {"user_id": "x"}, None, None))


def test_a_system_message_is_long_term_only_when_its_role_is_named() -> None:
    """Mem0's rule for add(); ARKOS's add_turn names the role of the one message it is given,
    since its seed keeps every message long-term (tests/memory/test_arkos.py)."""

    def remembered(roles: frozenset[str] | None) -> list[bool]:
        request = AddRequest(
            scope=Scope(user_id="ada"),
            messages=(SystemMessage(content="You are terse."),),
            metadata={},
            said_at=None,
            infer=True,
            remember_roles=roles,
            session_id="s1",
        )
        plan = plan_add(request, extracts_facts=False, instructions=None)
        assert [t.session_id for t in plan.turns] == ["s1"]
        return [t.long_term for t in plan.turns]

    assert remembered(None) == [False]
    assert remembered(frozenset({"user"})) == [False]
    assert remembered(frozenset({"system"})) == [True]
