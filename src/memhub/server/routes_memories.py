"""``/v1/memories``: the Mem0-style memory API over HTTP, inside the caller's namespace."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, HTTPException, Path, Query, Response

from memhub.doors.answers import RETRY_AFTER_SECONDS
from memhub.errors import MemoryNotFound, UsageError
from memhub.memory.cursors import before_change, change_cursor
from memhub.memory.writes import QueuedTurns, caller_writes
from memhub.server.auth import Caller, State, check_rate
from memhub.server.causal import CAUSAL_HEADER, encode_token, tokens_writes
from memhub.server.models import (
    AddRequest,
    AddResponse,
    ChangeList,
    ChatMessage,
    DeleteAllResponse,
    ErrorBody,
    HistoryOut,
    MemoryList,
    MemoryOut,
    MemoryPage,
    MessageResponse,
    PatchRequest,
    RetiredList,
    SearchRequest,
    UpdateRequest,
    UpdateResponse,
)
from memhub.server.tenancy import Principal, ScopeIds

__all__ = ["router"]

_ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorBody} for status in (401, 404, 409, 413, 422, 429, 500, 502, 503)
}
router = APIRouter(prefix="/v1/memories", tags=["memories"], responses=_ERRORS)

ScopeId = Annotated[str | None, Query(min_length=1, max_length=255)]


@dataclass(frozen=True)
class ScopeQuery:
    """The ``user_id`` / ``agent_id`` / ``run_id`` query parameters every scoped route takes."""

    user_id: ScopeId = None
    agent_id: ScopeId = None
    run_id: ScopeId = None

    @property
    def ids(self) -> tuple[str | None, str | None, str | None]:
        return (self.user_id, self.agent_id, self.run_id)


Scoped = Annotated[ScopeQuery, Depends()]


def _plain(messages: str | ChatMessage | list[ChatMessage | str]) -> Any:
    if isinstance(messages, ChatMessage):
        return messages.model_dump()
    if isinstance(messages, list):
        return [m.model_dump() if isinstance(m, ChatMessage) else m for m in messages]
    return messages


async def _owned_scope(
    state: State,
    caller: Principal,
    memory_id: uuid.UUID,
    ids: tuple[str | None, str | None, str | None],
) -> ScopeIds:
    """The scope a by-id call runs in; for a tenant, exactly the memory's own stored ids.

    A memory of another namespace answers like one that does not exist, so ids cannot be
    probed across tenants. Deleted memories are found through their history.
    """
    scope = caller.scope(state.limits, *ids)
    if caller.is_admin:
        return scope
    stored = await state.admin.memory_owner(memory_id)
    if (
        stored is None
        or not caller.owns(stored)
        or any(value is not None and stored[field] != value for field, value in scope.items())
    ):
        raise MemoryNotFound(f"no memory {memory_id} in this scope")
    return ScopeIds(user_id=stored["user_id"], agent_id=stored["agent_id"], run_id=stored["run_id"])


async def _check_quota(
    state: State, caller: Principal, messages: str | ChatMessage | list[ChatMessage | str]
) -> None:
    """Messages per call, and a tenant's queued-turn rate and backlog, before any write."""
    server = state.server
    count = len(messages) if isinstance(messages, list) else 1
    if count > server.max_messages_per_add:
        raise UsageError(
            f"{count} messages in one call; the limit is {server.max_messages_per_add}"
            " (MEMHUB_MAX_MESSAGES_PER_ADD)"
        )
    if caller.tenant is None or caller.key_id is None:
        return
    if server.turn_rate_limit > 0:
        wait = state.turns.take(caller.key_id, min(float(count), server.turn_burst))
        check_rate(wait, "queued messages", "MEMHUB_TURN_RATE_LIMIT")
    if server.max_queued_jobs > 0:
        queued = await state.admin.queued_jobs(caller.tenant, server.max_queued_jobs)
        if queued >= server.max_queued_jobs:
            raise HTTPException(
                429,
                f"this tenant has {server.max_queued_jobs} or more adds waiting for the worker"
                " (MEMHUB_MAX_QUEUED_JOBS); retry once they are processed",
                {"Retry-After": str(RETRY_AFTER_SECONDS)},
            )


@router.post("", response_model=AddResponse, response_model_exclude_unset=True)
async def add_memories(
    body: AddRequest,
    caller: Caller,
    state: State,
    response: Response,
    idempotency_key: Annotated[
        str | None,
        Header(
            alias="Idempotency-Key",
            min_length=1,
            max_length=255,
            description="Retrying with the same key returns the first answer, writes nothing.",
        ),
    ] = None,
) -> dict[str, Any]:
    """Store messages; with ``wait`` answer once their memories are searchable."""
    scope = caller.scope(state.limits, body.user_id, body.agent_id, body.run_id)
    await _check_quota(state, caller, body.messages)
    # This caller's own queued turns, for its token (not the shared memory object's list).
    with caller_writes(QueuedTurns()) as mine:
        added = await state.memory.add(
            _plain(body.messages),
            **scope,
            metadata=body.metadata,
            infer=body.infer,
            timestamp=body.timestamp,
            wait=body.wait,
            idempotency_key=idempotency_key,
            expiration_date=body.expiration_date,
        )
    answer = {**added, "results": [caller.present(item) for item in added["results"]]}
    turn_ids = [turn for _, turns in mine.items() for turn in turns]
    if turn_ids:
        answer["causal_token"] = encode_token((body.user_id, body.agent_id, body.run_id), turn_ids)
        response.headers[CAUSAL_HEADER] = answer["causal_token"]
    return answer


@router.post("/search", response_model=MemoryList, response_model_exclude_unset=True)
async def search_memories(body: SearchRequest, caller: Caller, state: State) -> dict[str, Any]:
    """Memories relevant to ``query``, best first, each with a ``score`` in [0, 1]."""
    caller.check_filters(body.filters)
    # Waits only for the turns the caller's tokens name: never for other callers' adds.
    with caller_writes(tokens_writes(body.causal_tokens or [], caller, state.limits)):
        found = await state.memory.search(
            body.query,
            **caller.scope(state.limits, body.user_id, body.agent_id, body.run_id),
            limit=body.limit,
            filters=body.filters,
            threshold=body.threshold,
            include_superseded=body.include_superseded,
            as_of=body.as_of,
            max_tokens=body.max_tokens,
            excerpt_tokens=body.excerpt_tokens,
            rerank=body.rerank,
            min_score_ratio=body.min_score_ratio,
        )
    return {"results": [caller.present(item) for item in found["results"]]}


@router.get("", response_model=MemoryPage, response_model_exclude_unset=True)
async def list_memories(
    caller: Caller,
    state: State,
    query: Scoped,
    limit: Annotated[int, Query(ge=1, description="At most MEMHUB_MAX_PAGE_SIZE.")] = 100,
    include_superseded: bool = False,
    cursor: Annotated[
        str | None,
        Query(max_length=200, description="``next_cursor`` of the previous page."),
    ] = None,
) -> dict[str, Any]:
    """The scope's memories, newest first (one of user_id, agent_id, run_id is required).

    A full page carries ``next_cursor``; pass it as ``cursor`` for the memories after it.
    """
    found = await state.memory.get_all(
        **caller.scope(state.limits, *query.ids),
        limit=limit,
        include_superseded=include_superseded,
        cursor=cursor or "",
    )
    page: dict[str, Any] = {"results": [caller.present(item) for item in found["results"]]}
    if found["next_cursor"] is not None:
        page["next_cursor"] = found["next_cursor"]
    return page


@router.delete("", response_model=DeleteAllResponse)
async def delete_all_memories(
    caller: Caller,
    state: State,
    query: Scoped,
) -> dict[str, Any]:
    """Delete everything of a scope: memories, history, queued jobs and turns."""
    return await state.memory.delete_all(**caller.scope(state.limits, *query.ids))


@router.get("/retired", response_model=RetiredList, response_model_exclude_unset=True)
async def retired_memories(
    caller: Caller,
    state: State,
    query: Scoped,
    limit: Annotated[int, Query(ge=1, description="At most MEMHUB_MAX_PAGE_SIZE.")] = 100,
) -> dict[str, Any]:
    """The scope's retired memories (what a model removed), most recently retired first."""
    found = await state.memory.retired(**caller.scope(state.limits, *query.ids), limit=limit)
    return {"results": [caller.present(item) for item in found["results"]]}


@router.get("/changes", response_model=ChangeList, response_model_exclude_unset=True)
async def model_changes(
    caller: Caller,
    state: State,
    query: Scoped,
    limit: Annotated[int, Query(ge=1, description="At most MEMHUB_MAX_PAGE_SIZE.")] = 100,
    cursor: Annotated[
        str | None,
        Query(max_length=200, description="``next_cursor`` of the previous page."),
    ] = None,
) -> dict[str, Any]:
    """Every change a model made to the scope's memories (retire, supersede, reword), newest
    first, with who, why, when, the turns cited and the text before and after."""
    before = None if cursor is None else before_change(cursor)
    scope = caller.scope(state.limits, *query.ids)
    found = await state.memory.model_changes(**scope, limit=limit, before=before)
    page: dict[str, Any] = {"results": found["results"]}
    if len(found["results"]) == limit:
        page["next_cursor"] = change_cursor(found["results"][-1]["id"])
    return page


@router.post(
    "/changes/{change_id}/undo", response_model=MemoryOut, response_model_exclude_unset=True
)
async def undo_model_change(
    change_id: Annotated[int, Path(ge=1)],
    caller: Caller,
    state: State,
    query: Scoped,
) -> Any:
    """Undo one model change under the same memory id: a retire is restored, a supersession
    reopens the old fact (retiring its successor), a rewording gets its earlier text back.

    422 without a scope id; 404 for an unknown change or another scope's; 409
    (``NotRestorable``) when it is undone already, not a model's change, the memory was
    erased, or it changed again since.
    """
    if not any(query.ids):
        raise UsageError("pass user_id, agent_id or run_id: whose change to undo")
    scope = caller.scope(state.limits, *query.ids)
    return caller.present(await state.memory.undo_change(change_id, **scope))


@router.get("/{memory_id}", response_model=MemoryOut, response_model_exclude_unset=True)
async def get_memory(
    memory_id: uuid.UUID,
    caller: Caller,
    state: State,
    query: Scoped,
) -> Any:
    """One memory by id; optional scope ids narrow the lookup."""
    scope = await _owned_scope(state, caller, memory_id, query.ids)
    item = await state.memory.get(memory_id, **scope)
    if item is None:
        raise MemoryNotFound(f"no memory {memory_id} in this scope")
    return caller.present(item)


@router.put("/{memory_id}", response_model=UpdateResponse, response_model_exclude_unset=True)
async def update_memory(
    memory_id: uuid.UUID,
    body: UpdateRequest,
    caller: Caller,
    state: State,
    query: Scoped,
) -> dict[str, Any]:
    """Correct a memory's text; ``metadata`` replaces the caller's keys (memhub's own are kept)."""
    scope = await _owned_scope(state, caller, memory_id, query.ids)
    updated = await state.memory.update(memory_id, body.text, metadata=body.metadata, **scope)
    return {**updated, "result": caller.present(updated["result"])}


@router.patch("/{memory_id}", response_model=UpdateResponse, response_model_exclude_unset=True)
async def patch_memory(
    memory_id: uuid.UUID,
    body: PatchRequest,
    caller: Caller,
    state: State,
    query: Scoped,
) -> dict[str, Any]:
    """Change a memory's text and/or merge ``metadata`` into its keys (null values are kept)."""
    scope = await _owned_scope(state, caller, memory_id, query.ids)
    updated = await state.memory.update(
        memory_id, body.text, metadata=body.metadata, merge_metadata=True, **scope
    )
    return {**updated, "result": caller.present(updated["result"])}


@router.delete("/{memory_id}", response_model=MessageResponse)
async def delete_memory(
    memory_id: uuid.UUID,
    caller: Caller,
    state: State,
    query: Scoped,
) -> dict[str, str]:
    """Delete one memory; its history keeps a DELETE event with the last text."""
    scope = await _owned_scope(state, caller, memory_id, query.ids)
    return await state.memory.delete(memory_id, **scope)


@router.post("/{memory_id}/restore", response_model=MemoryOut, response_model_exclude_unset=True)
async def restore_memory(
    memory_id: uuid.UUID,
    caller: Caller,
    state: State,
    query: Scoped,
) -> Any:
    """Bring back a retired memory, or a superseded one in place of its successor.

    404 for an unknown id or another scope's; 409 (``NotRestorable``) for an erased memory
    (deleted by the user, or purged) or one that is current.
    """
    scope = await _owned_scope(state, caller, memory_id, query.ids)
    return caller.present(await state.memory.restore(memory_id, **scope))


@router.get("/{memory_id}/history", response_model=list[HistoryOut])
async def memory_history(
    memory_id: uuid.UUID,
    caller: Caller,
    state: State,
    query: Scoped,
) -> Any:
    """Every change of a memory, oldest first."""
    scope = await _owned_scope(state, caller, memory_id, query.ids)
    return await state.memory.history(memory_id, **scope)
