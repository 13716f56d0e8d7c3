"""From ``add()`` arguments to stored turns, the memories they become and their queued job."""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from memhub.engine.text import memory_hash
from memhub.messages import Message, serialize
from memhub.store.records import (
    IdempotencyKey,
    JobPayload,
    NewJob,
    NewTurn,
    PendingMemory,
    Scope,
)

__all__ = [
    "DEFAULT_SESSION",
    "INGEST_JOB",
    "AddPlan",
    "AddRequest",
    "id_source",
    "idempotency",
    "long_term_roles",
    "plan_add",
    "turns_and_job",
]

INGEST_JOB = "ingest"
# Mem0-style calls without a run id still need ARKOS's NOT NULL session id: "" is an id no
# caller can pass, so erasing a run (its session's turns) never takes these.
DEFAULT_SESSION = ""
SYSTEM_ROLE = "system"


@dataclass(frozen=True)
class AddRequest:
    """An ``add()`` call's arguments once checked (``check_add`` checks them).

    Attributes:
        scope: Whose memory.
        messages: The messages, normalised.
        metadata: Stored with every turn and memory.
        said_at: When the messages were said; None: now.
        infer: The caller asks an LLM to extract facts (if one is configured).
        memory_type: Stored with the memories made from the turns.
        expires_at: When those memories expire.
        remember_roles: Only messages of these roles become memories; None: every role but
            system messages (a system message only when its role is named).
        idempotency_key: The caller's key for this call, if any.
        session_id: The conversation the turns belong to (ARKOS's session); None: the run
            id, else the default session.
    """

    scope: Scope
    messages: tuple[Message, ...]
    metadata: dict[str, Any]
    said_at: datetime | None
    infer: bool
    memory_type: str | None = None
    expires_at: datetime | None = None
    remember_roles: frozenset[str] | None = None
    idempotency_key: str | None = None
    session_id: str | None = None


@dataclass(frozen=True)
class AddPlan:
    """What an add (or one imported item) writes: its turns, their job, the ids it returns.

    The first four fields are what the importer needs of an item (it batches the jobs of
    items stored one memory per turn).

    Attributes:
        scope: Whose memory.
        turns: Every message's turn; a long-term turn carries the memory it becomes.
        one_per_turn: Each long-term turn becomes one memory, else an LLM extracts facts.
        payload: The ingest job's payload (its event id, instructions, memory ids).
        job: The ingest job; None when no message goes to long-term memory.
        memory_ids: The ids of the long-term turns' memories, in order.
        remembered: The messages that go to long-term memory, paired with ``memory_ids``.
        idempotency: The stored form of the caller's idempotency key, if any.
    """

    scope: Scope
    turns: list[NewTurn]
    one_per_turn: bool
    payload: JobPayload
    job: NewJob | None = None
    memory_ids: tuple[uuid.UUID, ...] = ()
    remembered: tuple[Message, ...] = ()
    idempotency: IdempotencyKey | None = None


def plan_add(request: AddRequest, *, extracts_facts: bool, instructions: str | None) -> AddPlan:
    """The turns, job and ids of ``request``; ``add()``, ARKOS's ``add_turn`` and the importer
    store what it says.

    ``extracts_facts``: an LLM is configured, so ``infer`` extracts facts instead of keeping
    each turn; ``instructions`` (the settings' ``custom_instructions``) travel with the job,
    since the worker may serve many Memory objects.
    """
    new_id = id_source(request.scope, request.idempotency_key)
    one_per_turn = not request.infer or not extracts_facts
    roles = long_term_roles(request.remember_roles, request.messages)
    kept = tuple(m for m in request.messages if m.role in roles)
    # Every long-term turn's memory (its episode) is written with it, under an id chosen
    # now; with an LLM, facts are added beside the episodes later and never replace them.
    memory_ids = tuple(new_id(str(n)) for n in range(len(kept)))
    payload = JobPayload(
        infer=request.infer,
        event_id=str(new_id("event")),
        instructions=instructions or None,
        memory_type=request.memory_type,
        expires_at=request.expires_at,
        memory_ids=memory_ids,
    )
    turns, job = turns_and_job(
        request.messages,
        request.scope,
        session_id=request.session_id,
        metadata=request.metadata,
        created_at=request.said_at,
        job_payload=payload,
        remember_roles=roles,
        memory_type=request.memory_type,
    )
    key = request.idempotency_key
    return AddPlan(
        scope=request.scope,
        turns=turns,
        one_per_turn=one_per_turn,
        payload=payload,
        job=job,
        memory_ids=memory_ids,
        remembered=kept,
        idempotency=None if key is None else idempotency(key, turns, job),
    )


def id_source(scope: Scope, idempotency_key: str | None) -> Callable[[str], uuid.UUID]:
    """Where ``add()`` takes the ids it returns before the rows exist.

    Random, except under an idempotency key: then derived from the scope and the key, so a
    retry of the same call returns (and its job carries) the same ids as the first.
    """
    if idempotency_key is None:
        return lambda _name: uuid.uuid4()
    seed = json.dumps([scope.user_id, scope.agent_id, scope.run_id, idempotency_key])
    return lambda name: uuid.uuid5(uuid.NAMESPACE_URL, f"memhub:add:{seed}:{name}")


def turns_and_job(
    messages: Sequence[Message],
    scope: Scope,
    *,
    session_id: str | None,
    metadata: dict[str, Any] | None,
    created_at: datetime | None,
    job_payload: JobPayload | None,
    remember_roles: Collection[str] | None = None,
    memory_type: str | None = None,
) -> tuple[list[NewTurn], NewJob | None]:
    """The turns to store for ``messages`` and, if ``job_payload`` is given, their job.

    Only messages of ``remember_roles`` (None: every role) go to long-term memory; the
    others are stored as turns only. No such message means no job.

    With a job, each long-term turn that says something carries the memory it becomes
    (:class:`PendingMemory`, of ``memory_type``), written with it under the ids of the
    payload's ``memory_ids`` (paired with its ``turn_ids``), so the ingest job fills in the
    vectors of those very rows.
    """
    session = session_id or scope.run_id or DEFAULT_SESSION
    long_term = [remember_roles is None or m.role in remember_roles for m in messages]
    job = None
    assigned: list[uuid.UUID] = []
    if job_payload is not None and any(long_term):
        job = NewJob(kind=INGEST_JOB, scope=scope, payload=job_payload)
        assigned = list(job_payload.memory_ids or ())
    ids = iter(assigned)
    expires = None if job_payload is None else job_payload.expires_at
    turns = []
    for message, remembered in zip(messages, long_term, strict=True):
        memory_id = next(ids, None) if remembered else None
        text = message.content
        turns.append(
            NewTurn(
                # conversation_context.user_id is NOT NULL; agent- or run-only turns use ""
                # (an id no caller can pass, so it never collides with a real user).
                user_id=scope.user_id or "",
                session_id=session,
                role=message.role,
                message=serialize(message),
                agent_id=scope.agent_id,
                metadata=metadata or None,
                created_at=created_at,
                long_term=remembered,
                memory=None
                if memory_id is None or not text.strip()  # the worker skips blank turns
                else PendingMemory(memory_id, text, memory_hash(text), memory_type, expires),
            )
        )
    return turns, job


def long_term_roles(
    remember_roles: Collection[str] | None, messages: Sequence[Message]
) -> frozenset[str]:
    """The roles of ``messages`` that go to long-term memory (``remember_roles``, or all).

    A system message is not one unless its role is named, with or without an LLM, as in
    Mem0: it is the application's instruction, not something anyone said, and stored on
    every call it would fill recall with "You are a helpful assistant" (and an LLM would be
    shown it as part of the conversation to extract facts from). It is still a turn of the
    conversation (``recent_turns``, ARKOS's short-term memory). ARKOS's ``add_turn`` names
    the role of the one message it is given: its seed keeps every message long-term.
    """
    present = {m.role for m in messages}
    if remember_roles is None:
        return frozenset(present - {SYSTEM_ROLE})
    return frozenset(present & frozenset(remember_roles))


def idempotency(key: str, turns: Sequence[NewTurn], job: NewJob | None) -> IdempotencyKey:
    """The stored form of a caller's idempotency key for the add that writes ``turns``.

    The owner is the call's scope, so equal keys of different users never meet; the
    fingerprint covers everything the call would write.
    """
    scope = job.scope if job is not None else Scope(user_id=turns[0].user_id or None)
    owner = json.dumps([scope.user_id, scope.agent_id, scope.run_id])
    request = {
        "turns": [
            [t.user_id, t.session_id, t.role, t.message, t.agent_id, t.metadata, t.created_at]
            for t in turns
        ],
        "job": None if job is None else [job.kind, job.payload.to_json()],
    }
    encoded = json.dumps(request, sort_keys=True, default=str).encode("utf-8")
    return IdempotencyKey(owner=owner, key=key, fingerprint=hashlib.sha256(encoded).hexdigest())
