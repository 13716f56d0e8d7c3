"""Request and response bodies of the REST API (they make the OpenAPI spec)."""

from __future__ import annotations

from datetime import date, datetime
from typing import Annotated, Any, Literal

from pydantic import (
    AliasChoices,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    Strict,
    field_validator,
)

__all__ = [
    "AddRequest",
    "AddResponse",
    "ChatMessage",
    "DailyUsageOut",
    "DeleteAllResponse",
    "ErrorBody",
    "Health",
    "HistoryOut",
    "JobStats",
    "KeyCreate",
    "KeyCreated",
    "KeyList",
    "KeyOut",
    "LaneStats",
    "MemoryList",
    "MemoryOut",
    "MemoryPage",
    "MessageResponse",
    "ParkedJob",
    "ParkedJobs",
    "PatchRequest",
    "PendingOut",
    "RetryRequest",
    "RetryResponse",
    "SearchRequest",
    "UpdateRequest",
    "UpdateResponse",
    "UserList",
    "UserOut",
    "WhoAmI",
]


def _iso_8601(value: object) -> object:
    """Let only text (or a Python date) through: pydantic reads a number as Unix seconds."""
    if isinstance(value, date):
        return value
    if not isinstance(value, str):
        raise ValueError("expected an ISO 8601 string, not a number or a boolean")
    try:
        float(value)
    except ValueError:
        return value
    raise ValueError("expected an ISO 8601 string, not a number in a string")


# What the OpenAPI schema says (a date-time or date string) and nothing else: lax pydantic
# would also take 0, 1.5 or "1700000000" as moments of 1970 or 2023.
IsoDateTime = Annotated[datetime, BeforeValidator(_iso_8601)]
IsoDate = Annotated[date | datetime, BeforeValidator(_iso_8601)]
StrictInt = Annotated[int, Strict()]
StrictFloat = Annotated[float, Strict()]  # an integer is a number too; true and "0.5" are not


def _id() -> Any:
    return Field(default=None, min_length=1, max_length=255)


class _Strict(BaseModel):
    # Unknown fields are refused so a typo ("user": "alice") fails loudly instead of
    # silently writing to the wrong scope.
    model_config = ConfigDict(extra="forbid")


class ChatMessage(BaseModel):
    """One chat message, as OpenAI and Mem0 shape it."""

    model_config = ConfigDict(extra="allow")

    role: str = Field(default="user", examples=["user"])
    content: str = Field(examples=["I moved to Paris last month."])


class _Scoped(_Strict):
    user_id: str | None = _id()
    agent_id: str | None = _id()
    run_id: str | None = _id()
    # Sent by Mem0's MemoryClient; accepted and ignored.
    version: str | None = Field(default=None, description="Ignored (Mem0 client compatibility).")
    output_format: str | None = Field(
        default=None, description="Ignored (Mem0 client compatibility)."
    )


class AddRequest(_Scoped):
    """``POST /v1/memories``: store messages and queue them for long-term memory."""

    messages: str | ChatMessage | list[ChatMessage | str]
    metadata: dict[str, Any] | None = None
    infer: bool = Field(default=True, strict=True)
    timestamp: IsoDateTime | StrictFloat | None = Field(
        default=None,
        description="When the messages were said (ISO 8601 or Unix seconds), years 1 to 9999.",
    )
    wait: bool = Field(
        default=False,
        strict=True,
        description="Answer once the memories are searchable, or after the server's "
        "MEMHUB_WAIT_TIMEOUT (30 s by default) with status PENDING and what is searchable.",
    )
    expiration_date: IsoDate | None = Field(
        default=None,
        description="Mem0's: the memories' last day (YYYY-MM-DD, UTC) or the instant they "
        "expire; after it they are not returned, and are purged later.",
    )

    @field_validator("timestamp", mode="before")
    @classmethod
    def _timestamp_not_boolean(cls, value: object) -> object:
        # JSON true would otherwise pass as the number 1 (one second after the epoch).
        if isinstance(value, bool):
            raise ValueError("a timestamp is an ISO 8601 string or a number, not a boolean")
        return value


class SearchRequest(_Scoped):
    """``POST /v1/memories/search``."""

    query: str = Field(min_length=1)
    limit: int = Field(
        default=100,
        ge=1,
        strict=True,
        validation_alias=AliasChoices("limit", "top_k"),
        description="At most MEMHUB_MAX_SEARCH_RESULTS.",
    )
    filters: dict[str, Any] | None = None
    threshold: StrictFloat | None = Field(default=None, ge=0.0, le=1.0)
    include_superseded: bool = Field(default=False, strict=True)
    as_of: IsoDateTime | None = Field(
        default=None, description="Only what was true at this moment (ISO 8601; naive is UTC)."
    )
    max_tokens: int | None = Field(
        default=None,
        ge=1,
        strict=True,
        description="Cap on the results' total length, estimated at four characters a token.",
    )
    excerpt_tokens: int | None = Field(
        default=None,
        ge=0,
        strict=True,
        description="The longest text one result returns (estimated tokens): a longer memory "
        "returns its sentences sharing most of the query's words, `passage` saying where "
        "(null: MEMHUB_SEARCH_EXCERPT_TOKENS; 0: whole).",
    )
    rerank: bool | None = Field(
        default=None,
        strict=True,
        description="Rerank with the server's MEMHUB_RERANKER (true without one: 422); "
        "null: rerank when one is set.",
    )
    min_score_ratio: StrictFloat | None = Field(
        default=None,
        ge=0.0,
        le=1.0,
        description="Leave out results scoring below this share of the best one "
        "(null: MEMHUB_SEARCH_MIN_SCORE_RATIO; a threshold replaces it).",
    )
    causal_tokens: list[Annotated[str, Field(min_length=1, max_length=16_384)]] | None = Field(
        default=None,
        max_length=16,
        description="Read your own writes: `causal_token`s of this caller's adds; the search "
        "waits (up to MEMHUB_SEARCH_WAIT_TIMEOUT) until their memories are searchable by "
        "meaning. Without tokens a search waits for nobody's work. A token that is not one "
        "the server issued: 422.",
    )


class UpdateRequest(_Strict):
    """``PUT /v1/memories/{id}``: the corrected text (``text`` as in Mem0, or ``data``)."""

    text: str = Field(min_length=1, validation_alias=AliasChoices("text", "data"))
    metadata: dict[str, Any] | None = None


class PatchRequest(_Strict):
    """``PATCH /v1/memories/{id}``: a new text, metadata merged into the stored keys, or both."""

    text: str | None = Field(
        default=None, min_length=1, validation_alias=AliasChoices("text", "data")
    )
    metadata: dict[str, Any] | None = None


class PassageOut(BaseModel):
    """The part of a long memory a search result returns (``memory`` holds it)."""

    start: int = Field(description="Its first character in the whole text.")
    end: int = Field(description="One past its last character.")
    length: int = Field(description="The whole text's length; GET /memories/{id} returns it.")


class MemoryOut(BaseModel):
    """One memory, Mem0-shaped, plus its validity interval and what it is (``kind``)."""

    id: str
    memory: str
    kind: Literal["episode", "fact"] | None = Field(
        default=None,
        description="episode: a turn as it was said (it has a role); fact: what an LLM"
        " extracted from turns (metadata.source_turn_ids names them).",
    )
    hash: str
    metadata: dict[str, Any]
    created_at: str
    updated_at: str | None
    valid_from: str
    valid_to: str | None
    score: float | None = None
    user_id: str | None = None
    agent_id: str | None = None
    run_id: str | None = None
    memory_type: str | None = None
    superseded_by: str | None = None
    role: str | None = None
    event: str | None = None
    passage: PassageOut | None = Field(
        default=None,
        description="Search only, for a memory longer than the embedder's window: memory is"
        " the passage nearest the query; this says where it is in the whole text.",
    )


class MemoryList(BaseModel):
    results: list[MemoryOut]


class RetiredOut(MemoryOut):
    """A memory a model removed: kept until restored, purged or erased."""

    retired_at: str
    retired_by: str | None = None
    reason: str | None = None
    turn_ids: list[int] = Field(default_factory=list)


class RetiredList(BaseModel):
    results: list[RetiredOut]


class ChangeOut(BaseModel):
    """One change a model made to a memory (``AsyncMemory.model_changes``)."""

    id: int = Field(description="The change's id: what POST .../changes/{id}/undo takes.")
    memory_id: str
    event: str = Field(description="RETIRE, SUPERSEDE or UPDATE (a rewording).")
    before: str | None = None
    after: str | None = None
    actor: str | None = Field(default=None, description="consolidation, agent:<name>, mcp...")
    reason: str | None = None
    turn_ids: list[int] = Field(default_factory=list, description="The turns it cites.")
    created_at: str
    undone: bool
    successor_id: str | None = Field(default=None, description="A SUPERSEDE's new fact.")


class ChangeList(BaseModel):
    """A page of model changes, newest first; pass ``next_cursor`` as ``cursor`` for more."""

    results: list[ChangeOut]
    next_cursor: str | None = Field(
        default=None, description="Present when more changes may follow this page."
    )


class MemoryPage(MemoryList):
    """A page of ``GET /v1/memories``; pass ``next_cursor`` back as ``cursor`` for the next."""

    next_cursor: str | None = Field(
        default=None, description="Present when more memories follow this page."
    )


class PendingOut(BaseModel):
    """What ``add`` queued: a memory whose id is assigned (one per message, no LLM), or, when
    an LLM will extract facts, the queued work (``message``, ``event_id``), as in Mem0."""

    id: str | None = None
    memory: str | None = None
    event: str | None = None
    role: str | None = None
    status: str
    message: str | None = None
    event_id: str | None = None


class AddResponse(BaseModel):
    results: list[MemoryOut | PendingOut]
    status: str | None = Field(default=None, description="PENDING (queued) or DONE (wait=True).")
    queued_turn_ids: list[int] | None = None
    timed_out: bool | None = Field(
        default=None, description="With wait: the deadline passed first; results so far."
    )
    causal_token: str | None = Field(
        default=None,
        description="Pass it back in a search's `causal_tokens` to have that search wait for "
        "these memories' vectors (also in the Memhub-Causal-Token header). Opaque.",
    )


class UpdateResponse(BaseModel):
    message: str
    result: MemoryOut


class MessageResponse(BaseModel):
    message: str


class DeleteAllResponse(MessageResponse):
    deleted: int


class HistoryOut(BaseModel):
    id: str
    memory_id: str
    event: str
    old_memory: str | None
    new_memory: str | None
    actor: str | None
    turn_ids: list[int]
    created_at: str
    is_deleted: bool
    metadata: dict[str, Any] = Field(
        description="What the event linked: superseded_by (SUPERSEDE), previous_version"
        " (a consolidation UPDATE: the earlier wording, restorable), retired (RESTORE);"
        " a RETIRE's reason."
    )


class UserOut(BaseModel):
    user_id: str
    memories: int = Field(description="Current (not superseded) memories.")
    turns: int = Field(description="Stored conversation turns.")
    last_activity: datetime | None


class UserList(BaseModel):
    """A page of ``GET /v1/users``; pass ``next_cursor`` back as ``cursor`` for the next."""

    results: list[UserOut]
    next_cursor: str | None = Field(
        default=None, description="Present when more users may follow this page."
    )


class ScopeOut(BaseModel):
    user_id: str | None
    agent_id: str | None
    run_id: str | None
    memories: int = Field(description="Current memories of exactly this scope.")
    last_activity: datetime | None


class ScopeList(BaseModel):
    """``GET /v1/scopes``: every scope with memories (user, agent, run, combinations)."""

    results: list[ScopeOut]


class DailyUsageOut(BaseModel):
    day: str
    calls: int
    prompt_tokens: int
    completion_tokens: int


class LaneStats(BaseModel):
    """One worker lane: the job kinds it claims and its queue."""

    kinds: list[str] = Field(description="Job kinds queued now that this lane claims.")
    queued: int
    running: int = Field(description="Queued jobs a worker holds a lease on.")
    parked: int
    oldest_queued_seconds: int = Field(description="How long the oldest queued job waited.")


class JobStats(BaseModel):
    queued: int
    parked: int
    llm: dict[str, float]
    by_lane: dict[str, LaneStats] = Field(
        default_factory=dict,
        description="Per worker lane: 'ingest' (embeds turns: every kind but consolidate) and"
        " 'consolidate' (extracts facts with the LLM).",
    )
    by_kind: dict[str, dict[str, int]] = Field(
        default_factory=dict,
        description="Queued, running and parked jobs and the oldest queued job's wait in"
        " seconds, per job kind.",
    )
    llm_per_day: list[DailyUsageOut] = Field(
        default_factory=list, description="LLM calls and tokens per UTC day, last 14 days."
    )


class ParkedJob(BaseModel):
    id: int
    kind: str
    user_id: str | None
    agent_id: str | None
    run_id: str | None
    attempts: int
    last_error: str | None
    created_at: datetime


class ParkedJobs(BaseModel):
    results: list[ParkedJob]


class RetryRequest(_Strict):
    """``POST /v1/jobs/retry``: parked jobs to queue again (``ids`` null: all of them)."""

    ids: list[StrictInt] | None = Field(default=None, max_length=1000)


class RetryResponse(BaseModel):
    requeued: int


class KeyCreate(_Strict):
    """``POST /v1/keys``: a tenant key (``tenant``) or an admin key (``is_admin``)."""

    name: str = Field(min_length=1, max_length=200)
    tenant: str | None = Field(
        default=None,
        pattern=r"^[a-z0-9][a-z0-9_-]{0,62}$",
        description="Lowercase letters, digits, '-' and '_'; its ids never meet another's.",
    )
    is_admin: bool = Field(default=False, strict=True)


class KeyOut(BaseModel):
    id: int
    name: str
    prefix: str = Field(description="The key's first characters, to tell keys apart.")
    tenant: str | None
    is_admin: bool
    created_at: datetime
    revoked_at: datetime | None
    last_used_at: datetime | None


class KeyCreated(KeyOut):
    key: str = Field(description="The secret; shown only in this answer, store it now.")


class KeyList(BaseModel):
    results: list[KeyOut]


class WhoAmI(BaseModel):
    """``GET /v1/me``: who the key belongs to."""

    name: str
    tenant: str | None
    is_admin: bool


class Health(BaseModel):
    status: str  # ok | unavailable | starting | failed
    database: str
    #: While starting: the embedding model's build, {"name", "step", "done", "of"}.
    model: dict[str, Any] | None = None


class ErrorBody(BaseModel):
    error: str
    type: str
    details: list[dict[str, Any]] | None = None
