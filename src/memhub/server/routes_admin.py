"""Keys, users, jobs and health: everything of the API that is not a memory call."""

from __future__ import annotations

import dataclasses
import time
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.responses import JSONResponse

from memhub.doors.answers import RETRY_AFTER_SECONDS
from memhub.embed.model_cache import active_builds
from memhub.errors import StatementTimeout, StoreUnavailable, UsageError
from memhub.server.auth import AdminCaller, Caller, State
from memhub.server.models import (
    ErrorBody,
    Health,
    JobStats,
    KeyCreate,
    KeyCreated,
    KeyList,
    KeyOut,
    ParkedJobs,
    RetryRequest,
    RetryResponse,
    ScopeList,
    UserList,
    WhoAmI,
)
from memhub.server.state import STARTING_RETRY_AFTER, ServerState

__all__ = ["health_router", "router"]


_ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorBody} for status in (401, 403, 413, 422, 429, 500, 503)
}
router = APIRouter(prefix="/v1", responses=_ERRORS)
health_router = APIRouter(tags=["health"])


def _check_page(state: State, limit: int, offset: int = 0) -> None:
    """Refuse (422, naming the setting) a page larger or an offset deeper than allowed."""
    if limit > state.limits.max_page_size:
        raise UsageError(
            f"limit must be between 1 and {state.limits.max_page_size}"
            f" (MEMHUB_MAX_PAGE_SIZE), got {limit}"
        )
    # An OFFSET reads and drops every row before it.
    if offset > state.server.max_offset:
        raise UsageError(
            f"offset must be between 0 and {state.server.max_offset} (MEMHUB_MAX_OFFSET),"
            f" got {offset}"
        )


@router.get("/me", response_model=WhoAmI, tags=["keys"])
async def whoami(caller: Caller) -> dict[str, Any]:
    """Who the presented key belongs to."""
    return {"name": caller.name, "tenant": caller.tenant, "is_admin": caller.is_admin}


@router.post("/keys", response_model=KeyCreated, status_code=201, tags=["keys"])
async def create_key(body: KeyCreate, caller: AdminCaller, state: State) -> dict[str, Any]:
    """Create a key; the answer holds its secret, which is never shown again."""
    key, secret = await state.admin.create_key(
        body.name, tenant=body.tenant, is_admin=body.is_admin
    )
    return {**dataclasses.asdict(key), "key": secret}


@router.get("/keys", response_model=KeyList, tags=["keys"])
async def list_keys(
    caller: AdminCaller, state: State, include_revoked: bool = False
) -> dict[str, Any]:
    """Every key (without secrets), oldest first."""
    keys = await state.admin.list_keys(include_revoked=include_revoked)
    return {"results": [dataclasses.asdict(key) for key in keys]}


@router.delete(
    "/keys/{key_id}",
    response_model=KeyOut,
    tags=["keys"],
    responses={404: {"model": ErrorBody}},
)
async def revoke_key(key_id: int, caller: AdminCaller, state: State) -> dict[str, Any]:
    """Revoke a key at once (idempotent); its calls answer 401 from now on."""
    key = await state.admin.revoke_key(key_id)
    state.keys.forget(key_id)
    if key is None:
        raise HTTPException(404, f"no API key {key_id}")
    return dataclasses.asdict(key)


@router.get("/users", response_model=UserList, response_model_exclude_unset=True, tags=["users"])
async def list_users(
    caller: Caller,
    state: State,
    limit: Annotated[int, Query(ge=1)] = 100,
    cursor: Annotated[
        str | None,
        Query(max_length=1500, description="``next_cursor`` of the previous page."),
    ] = None,
    offset: Annotated[int, Query(ge=0, description="Older paging; prefer ``cursor``.")] = 0,
) -> dict[str, Any]:
    """Users having memories or conversation turns, by id (a tenant sees only its own).

    A full page carries ``next_cursor``; pass it as ``cursor`` for the users after it.
    """
    if cursor is not None and offset:
        raise UsageError("pass cursor or offset, not both")
    _check_page(state, limit, offset)
    page = await state.admin.list_users(
        tenant=caller.tenant, limit=limit, cursor=cursor, offset=offset
    )
    shown: dict[str, Any] = {
        "results": [
            {**dataclasses.asdict(row), "user_id": caller.shown_id(row.user_id)}
            for row in page.results
        ]
    }
    if page.next_cursor is not None:
        shown["next_cursor"] = page.next_cursor
    return shown


@router.get("/scopes", response_model=ScopeList, tags=["users"])
async def list_scopes(
    caller: Caller,
    state: State,
    limit: Annotated[int, Query(ge=1, le=1000)] = 200,
) -> dict[str, Any]:
    """Scopes having memories: users, agents, runs and their combinations (the web page's list).

    Each is one exact combination of ids (an agent's own memories are the scope with only
    its ``agent_id``); a tenant sees only its own.
    """
    scopes = await state.admin.list_scopes(tenant=caller.tenant, limit=limit)
    return {"results": [caller.present(dataclasses.asdict(row)) for row in scopes]}


@router.get("/jobs/stats", response_model=JobStats, tags=["jobs"])
async def job_stats(caller: AdminCaller, state: State) -> dict[str, Any]:
    """Queued and parked background jobs (in total, per worker lane and per kind), LLM use."""
    stats = await state.admin.job_stats(days=14)
    return {
        "queued": stats.queued,
        "parked": stats.parked,
        "llm": stats.llm,
        "by_lane": stats.by_lane,
        "by_kind": stats.by_kind,
        "llm_per_day": [
            {**dataclasses.asdict(d), "day": d.day.isoformat()} for d in stats.llm_per_day
        ],
    }


@router.get("/jobs/parked", response_model=ParkedJobs, tags=["jobs"])
async def parked_jobs(
    caller: AdminCaller, state: State, limit: Annotated[int, Query(ge=1)] = 100
) -> dict[str, Any]:
    """Jobs that failed every attempt, oldest first, with their last error."""
    _check_page(state, limit)
    jobs = await state.admin.parked_jobs(limit)
    return {
        "results": [
            {
                "id": job.id,
                "kind": job.kind,
                "user_id": job.scope.user_id,
                "agent_id": job.scope.agent_id,
                "run_id": job.scope.run_id,
                "attempts": job.attempts,
                "last_error": job.last_error,
                "created_at": job.created_at,
            }
            for job in jobs
        ]
    }


@router.post("/jobs/retry", response_model=RetryResponse, tags=["jobs"])
async def retry_jobs(body: RetryRequest, caller: AdminCaller, state: State) -> dict[str, int]:
    """Queue parked jobs again (all when ``ids`` is null); workers take them on their next poll."""
    return {"requeued": await state.admin.retry_parked(body.ids)}


@health_router.get(
    "/healthz",
    response_model=Health,
    response_model_exclude_none=True,
    responses={503: {"model": Health}},
)
async def healthz(request: Request) -> Any:
    """200 when the database answers and the server's writes work, else 503 (no key needed).

    ``degraded`` (503): the database answers, but the server's latest write failed with 503
    less than a minute ago and none has succeeded since (a full disk, a permission changed).
    While the server starts (its first start builds the embedding model) it answers at once:
    503 ``{"status": "starting", "model": {"step", "done", "of"}}``, or ``"failed"``.
    """
    state = getattr(request.app.state, "memhub", None)
    if not isinstance(state, ServerState):
        return _starting(request)
    try:
        await state.admin.ping()
    except (StoreUnavailable, StatementTimeout):
        return _unhealthy("unavailable", "unreachable")
    if state.writes.degraded(time.monotonic()):
        return _unhealthy("degraded", "writes failing")
    return {"status": "ok", "database": "ok"}


def _unhealthy(status: str, database: str) -> JSONResponse:
    return JSONResponse(
        {"status": status, "database": database},
        503,
        headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
    )


def _starting(request: Request) -> JSONResponse:
    failed = getattr(request.app.state, "memhub_failed", None)
    if failed is not None:  # the reason is in the server's log, not here
        return JSONResponse({"status": "failed", "database": "unknown"}, 503)
    if getattr(request.app.state, "memhub_starting", None) is None:
        raise RuntimeError("the memhub app is not started: run it under its lifespan")
    body: dict[str, Any] = {"status": "starting", "database": "unknown"}
    builds = active_builds()
    if builds:
        body["model"] = builds[0]
    return JSONResponse(body, 503, headers={"Retry-After": str(STARTING_RETRY_AFTER)})
