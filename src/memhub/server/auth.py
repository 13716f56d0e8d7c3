"""API-key authentication: ``Authorization: Bearer <key>`` (or Mem0's ``Token <key>``)."""

from __future__ import annotations

import math
from typing import Annotated

from fastapi import Depends, HTTPException, Request

from memhub.doors.access import ENV_ADMIN_KEY
from memhub.memory.admin import ApiKey
from memhub.server.gate import GATED_KEY, LOOKED_UP_KEY, presented_key
from memhub.server.state import ServerState, get_state
from memhub.server.tenancy import Principal

__all__ = ["AdminCaller", "Caller", "State", "authenticate", "check_rate", "require_admin"]

_CHALLENGE = {"WWW-Authenticate": "Bearer"}

LOCAL_ADMIN = Principal(name="local (auth off)", tenant=None)
ENV_ADMIN = Principal(name="admin (MEMHUB_ADMIN_KEY)", tenant=None)


def _presented_key(request: Request) -> str:
    header = request.headers.get("authorization")
    if not header:
        raise HTTPException(401, "missing API key: send 'Authorization: Bearer <key>'", _CHALLENGE)
    key = presented_key(header)
    if key is None:
        raise HTTPException(
            401, "malformed Authorization header: expected 'Bearer <key>'", _CHALLENGE
        )
    return key


def _principal(key: ApiKey) -> Principal:
    return Principal(name=key.name, tenant=key.tenant, key_id=key.id)


async def authenticate(request: Request) -> Principal:
    """The caller of this request; 401 without a valid, unrevoked key."""
    gated = request.scope.get(GATED_KEY)
    if isinstance(gated, ApiKey):  # the tenant gate found it and applied its quotas
        return _principal(gated)
    state = get_state(request)
    if state.server.auth == "off":
        return LOCAL_ADMIN
    key = _presented_key(request)
    if LOOKED_UP_KEY in request.scope:  # the gate looked it up: an admin key or none
        found = request.scope[LOOKED_UP_KEY]
    else:
        found = await state.access.check(key)
    if found is None:
        raise HTTPException(401, "invalid or revoked API key", _CHALLENGE)
    if found is ENV_ADMIN_KEY:
        return ENV_ADMIN
    if found.tenant is not None:
        refused = state.quotas.refusal(found.id)
        if refused is not None:
            raise HTTPException(429, refused[0], {"Retry-After": str(refused[1])})
    return _principal(found)


def check_rate(wait: float, what: str, setting: str) -> None:
    """429 with ``Retry-After`` when a token bucket said to wait ``wait`` seconds."""
    if wait > 0:
        seconds = max(1, math.ceil(wait))
        raise HTTPException(
            429,
            f"too many {what} for this API key ({setting}); retry in {seconds} s",
            {"Retry-After": str(seconds)},
        )


async def require_admin(caller: Annotated[Principal, Depends(authenticate)]) -> Principal:
    """The caller, if it holds an admin key; 403 for tenant keys."""
    if not caller.is_admin:
        raise HTTPException(403, "this route needs an admin key")
    return caller


Caller = Annotated[Principal, Depends(authenticate)]
AdminCaller = Annotated[Principal, Depends(require_admin)]
State = Annotated[ServerState, Depends(get_state)]
