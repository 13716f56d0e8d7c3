"""Causal tokens: read-your-writes per caller on a server that serves many callers.

``POST /v1/memories`` answers with a token naming the turns that add queued, in the scope ids
the caller passed; a search given the token waits (up to ``MEMHUB_SEARCH_WAIT_TIMEOUT``) for
those turns' vectors only. A search without one waits for nobody's work. The token is not
signed: it holds nothing but the caller's own scope ids and turn ids, and a search maps those
ids into the caller's own namespace again and waits only for jobs of that scope, so an edited
token can at most make a caller wait for its own data.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Sequence

from memhub.errors import UsageError
from memhub.memory.inputs import Limits
from memhub.memory.writes import QueuedTurns
from memhub.server.tenancy import Principal

__all__ = ["CAUSAL_HEADER", "MAX_TOKEN_TURNS", "encode_token", "tokens_writes"]

#: The response header that carries an add's token (the body's ``causal_token`` too).
CAUSAL_HEADER = "Memhub-Causal-Token"
#: Turn ids one token may name (an add queues at most MEMHUB_MAX_MESSAGES_PER_ADD).
MAX_TOKEN_TURNS = 1000
_PREFIX = "c1."
_BIGINT = 2**63 - 1


def encode_token(ids: tuple[str | None, str | None, str | None], turn_ids: Sequence[int]) -> str:
    """The token of an add: the scope ids as the caller passed them, and its turn ids."""
    raw = json.dumps({"s": list(ids), "t": list(turn_ids)}, separators=(",", ":"))
    return _PREFIX + base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def _decode(token: str) -> tuple[tuple[str | None, str | None, str | None], list[int]]:
    bad = UsageError("causal_tokens: not a token this server issued (pass an add's token as is)")
    if not token.startswith(_PREFIX):
        raise bad
    body = token.removeprefix(_PREFIX)
    try:
        data = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    except (binascii.Error, ValueError):
        raise bad from None
    if not isinstance(data, dict) or set(data) != {"s", "t"}:
        raise bad
    ids, turns = data["s"], data["t"]
    if not isinstance(ids, list) or len(ids) != 3:
        raise bad
    if not all(i is None or isinstance(i, str) for i in ids) or ids == [None, None, None]:
        raise bad
    if not isinstance(turns, list) or not 0 < len(turns) <= MAX_TOKEN_TURNS:
        raise bad
    if not all(type(t) is int and 0 < t <= _BIGINT for t in turns):
        raise bad
    return (ids[0], ids[1], ids[2]), turns


def tokens_writes(tokens: Sequence[str], caller: Principal, limits: Limits) -> QueuedTurns:
    """The writes ``tokens`` name, in the caller's own namespace: what its search waits for.

    Raises:
        UsageError: A token is not one this server issued, or its ids are not valid ids
            (422, as any invalid argument).
    """
    writes = QueuedTurns(scopes=len(tokens) or 1, per_scope=MAX_TOKEN_TURNS * len(tokens))
    for token in tokens:
        ids, turns = _decode(token)
        writes.note_ids(turns, **caller.scope(limits, *ids))
    return writes
