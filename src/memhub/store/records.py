"""Plain records passed between the store and the engine (no I/O).

The one record that validates is :class:`JobPayload`: a queued job's JSON is read into it once,
when the store hands the job out (:meth:`Job.stored`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from datetime import UTC, date, datetime, timedelta
from typing import Any, Final
from uuid import UUID

from memhub.filters import memory_kind
from memhub.store.ranking import DEFAULT_TEXT_RANKING, TextRanking

__all__ = [
    "DEFAULT_TEXT_RANKING",
    "FORGET_REASON",
    "JOB_DONE",
    "JOB_TURN_IDS",
    "MODEL_BUDGET_WINDOW",
    "MODEL_CHANGE_EVENTS",
    "OWN_METADATA_KEYS",
    "PERSON_ACTORS",
    "TEXT_SCORE_DIGITS",
    "Candidate",
    "DailyUsage",
    "EmbeddedText",
    "EmbeddingSpace",
    "FilledVector",
    "HistoryEvent",
    "IdempotencyKey",
    "ImportBatch",
    "ImportCursor",
    "Job",
    "JobPayload",
    "Lane",
    "Lease",
    "MemoryRecord",
    "ModelBudget",
    "ModelChange",
    "NewJob",
    "NewMemory",
    "NewTurn",
    "Passage",
    "PassageHit",
    "PendingMemory",
    "RawCandidate",
    "RetiredMemory",
    "Scope",
    "ScopeRow",
    "TextHits",
    "TextRanking",
    "TextToEmbed",
    "Turn",
    "UserRow",
    "is_model_actor",
    "round_robin",
    "updated_metadata",
    "usage_summary",
    "utc_wall_time",
]


@dataclass(frozen=True)
class Scope:
    """Whose data: any of user, agent and run; ids that are None do not narrow."""

    user_id: str | None = None
    agent_id: str | None = None
    run_id: str | None = None

    @property
    def owner(self) -> str:
        """Whose queue its jobs are in: ``coalesce(user_id, agent_id, run_id, '')``."""
        for value in (self.user_id, self.agent_id, self.run_id):
            if value is not None:
                return value
        return ""

    def is_empty(self) -> bool:
        return self.user_id is None and self.agent_id is None and self.run_id is None

    def as_dict(self) -> dict[str, str]:
        return {
            k: v
            for k, v in (
                ("user_id", self.user_id),
                ("agent_id", self.agent_id),
                ("run_id", self.run_id),
            )
            if v is not None
        }


@dataclass(frozen=True)
class NewTurn:
    """A conversation message about to be stored in ``conversation_context``."""

    user_id: str
    session_id: str
    role: str
    message: str  # ARKOS's JSON form of the message
    agent_id: str | None = None
    metadata: dict[str, Any] | None = None
    created_at: datetime | None = None  # None: the database's now()
    long_term: bool = True  # False: short-term only (the turn is stored, its job skips it)
    # The memory this turn becomes, written with it (in the job's scope) so its id resolves
    # and its words are found at once; the ingest job fills in its vector under that id.
    memory: PendingMemory | None = None


@dataclass(frozen=True)
class PendingMemory:
    """A turn's memory as ``append_turns`` writes it: its text now, its vector later."""

    id: UUID
    memory: str
    hash: str
    memory_type: str | None = None
    expires_at: datetime | None = None  # add(expiration_date=...), written with the row

    def row(
        self,
        scope: Scope,
        turn_id: int,
        role: str,
        metadata: dict[str, Any] | None,
        said_at: datetime,
    ) -> NewMemory:
        """The row it is, without a vector: said at ``said_at`` by ``role`` in ``turn_id``."""
        return NewMemory(
            id=self.id,
            scope=scope,
            memory=self.memory,
            hash=self.hash,
            embedding=None,
            metadata=dict(metadata or {}),
            memory_type=self.memory_type,
            valid_from=said_at,
            source_turn_ids=(turn_id,),
            created_at=said_at,
            role=role,
            expires_at=self.expires_at,
        )


@dataclass(frozen=True)
class Turn:
    """A stored conversation message."""

    id: int
    user_id: str
    session_id: str
    role: str
    message: str
    agent_id: str | None
    metadata: dict[str, Any] | None
    created_at: datetime | None


OWN_METADATA_KEYS = ("role", "session_id", "provenance")
"""Metadata keys memhub (or its agent) wrote itself; updates keep their stored values.

``provenance`` is never taken from an update. ``role`` and ``session_id`` are memhub's only in
memories stored before migration 0011 (since then the role has a column and the metadata is
the caller's alone): there the stored values are kept, elsewhere they are the caller's keys.
"""


def utc_wall_time(at: datetime) -> datetime:
    """``at`` as ``conversation_context.created_at`` keeps it: ARKOS's column is ``TIMESTAMP``
    without time zone, so the UTC wall time (a naive ``at`` is UTC already)."""
    return at.astimezone(UTC).replace(tzinfo=None) if at.tzinfo else at


def updated_metadata(
    old: dict[str, Any], new: dict[str, Any] | None, *, merge: bool, role_column: bool = False
) -> dict[str, Any]:
    """A memory's metadata after an update: ``new`` replaces (or with ``merge`` is merged
    into) the caller's keys; memhub's own keys keep their stored values either way.

    ``role_column``: the memory has its role in the column (stored since migration 0011), so
    only ``provenance`` of its metadata is memhub's.
    """
    if new is None:
        return dict(old)
    keys = ("provenance",) if role_column else OWN_METADATA_KEYS
    own = {key: old[key] for key in keys if key in old}
    kept = {*own, "provenance"}
    base = dict(old) if merge else {}
    return {**base, **{k: v for k, v in new.items() if k not in kept}, **own}


@dataclass(frozen=True)
class IdempotencyKey:
    """A caller's key for one add: a retry with the same key stores nothing again.

    Attributes:
        owner: The scope the key belongs to, as stored (keys of different scopes never meet).
        key: The caller's key.
        fingerprint: A hash of the request; the same key with another request is refused.
    """

    owner: str
    key: str
    fingerprint: str


JOB_TURN_IDS: Final = "turn_ids"
"""The payload key of a job's turns, which the store's SQL writes (appending turns with their
job) and reads (waiting for turns): spelled here only, and a :class:`JobPayload` field."""
JOB_DONE: Final = "done"
"""The payload key of a large job's progress, which the apply's SQL sets (a field too)."""


def _of_type(kind: type, name: str) -> Callable[[str, object], Any]:
    def read(key: str, value: object) -> Any:
        if type(value) is not kind:  # a bool is no integer here, nor an integer a bool
            raise TypeError(f"payload {key} must be {name}")
        return value

    return read


def _int_list(key: str, value: object) -> tuple[int, ...]:
    if not isinstance(value, list) or not all(type(i) is int for i in value):
        raise TypeError(f"payload {key} must be a list of integers")
    return tuple(value)


def _uuid_list(key: str, value: object) -> tuple[UUID, ...]:
    if isinstance(value, list) and all(isinstance(i, str) for i in value):
        with contextlib.suppress(ValueError):
            return tuple(UUID(i) for i in value)
    raise TypeError(f"payload {key} must be a list of UUIDs")


def _timestamp(key: str, value: object) -> datetime:
    if isinstance(value, str):
        with contextlib.suppress(ValueError):
            return datetime.fromisoformat(value)
    raise TypeError(f"payload {key} must be an ISO 8601 timestamp")


def _json(
    read: Callable[[str, object], Any], write: Callable[[Any], Any] = lambda v: v
) -> dict[str, Any]:
    """A field's JSON form: how it is read (raising TypeError) and written; key = its name."""
    return {"json": (read, write)}


@dataclass(frozen=True)
class JobPayload:
    """What a queued job says, typed. Written by ``add()``, ARKOS's ``add_turn``, the importer
    and the worker's follow-up; read by the worker and consolidation.

    Its JSON keys are the field names; a field that is None is not in the JSON, so
    ``JobPayload.from_json(j).to_json() == j`` for every payload memhub writes.

    Attributes:
        turn_ids: The job's turns (the store adds them when it stores them with the job).
        infer: Let the LLM extract facts from the turns (None: not said, as in a follow-up).
        event_id: The id ``add()`` returned for the facts to come.
        instructions: The settings' ``custom_instructions`` when the turns were added.
        memory_type: ``add(memory_type=...)`` (``"procedural_memory"``).
        expires_at: ``add(expiration_date=...)``.
        memory_ids: The memory ids ``add()`` returned, paired in order with ``turn_ids``.
        done: How many of ``turn_ids`` a large job has applied (its saved progress).
        extra: Keys this version does not know (a newer one wrote them), carried untouched.
    """

    turn_ids: tuple[int, ...] | None = field(default=None, metadata=_json(_int_list, list))
    infer: bool | None = field(default=None, metadata=_json(_of_type(bool, "true or false")))
    event_id: str | None = field(default=None, metadata=_json(_of_type(str, "a string")))
    instructions: str | None = field(default=None, metadata=_json(_of_type(str, "a string")))
    memory_type: str | None = field(default=None, metadata=_json(_of_type(str, "a string")))
    expires_at: datetime | None = field(
        default=None, metadata=_json(_timestamp, datetime.isoformat)
    )
    memory_ids: tuple[UUID, ...] | None = field(
        default=None, metadata=_json(_uuid_list, lambda ids: [str(i) for i in ids])
    )
    done: int | None = field(default=None, metadata=_json(_of_type(int, "an integer")))
    extra: Mapping[str, Any] = field(default_factory=dict, hash=False)

    @property
    def turns(self) -> tuple[int, ...]:
        """``turn_ids``, empty when there are none."""
        return self.turn_ids or ()

    @property
    def progress(self) -> int:
        """``done``, 0 when nothing is applied yet."""
        return self.done or 0

    def to_json(self) -> dict[str, Any]:
        """The JSON object stored in the queue."""
        out = dict(self.extra)
        for f in _PAYLOAD_FIELDS:
            value = getattr(self, f.name)
            if value is not None:
                out[f.name] = f.metadata["json"][1](value)
        return out

    @classmethod
    def from_json(cls, raw: object) -> JobPayload:
        """Read a stored payload; a key of the wrong type raises :class:`TypeError` naming it.

        A JSON ``null`` reads as absent.
        """
        if not isinstance(raw, Mapping):
            raise TypeError("payload must be a JSON object")
        known = {f.name: f for f in _PAYLOAD_FIELDS}
        values = {
            name: known[name].metadata["json"][0](name, value)
            for name, value in raw.items()
            if name in known and value is not None
        }
        extra = {str(k): v for k, v in raw.items() if k not in known}
        return cls(**values, extra=extra)


_PAYLOAD_FIELDS = tuple(f for f in fields(JobPayload) if "json" in f.metadata)


@dataclass(frozen=True)
class NewJob:
    """Background work queued with the turns it is about; the store adds their ids."""

    kind: str
    scope: Scope
    payload: JobPayload = field(default_factory=JobPayload)


@dataclass(frozen=True)
class Job:
    """A claimed (or listed) job.

    ``payload_error`` says why the stored payload did not read as a :class:`JobPayload` (its
    ``payload`` is then empty): the worker fails such a job like any failed attempt, so it
    is retried with backoff, then parked with that reason.
    """

    id: int
    kind: str
    scope: Scope
    payload: JobPayload
    attempts: int
    created_at: datetime
    status: str = "queued"  # queued | parked
    last_error: str | None = None
    payload_error: str | None = None

    @classmethod
    def stored(
        cls,
        id: int,
        kind: str,
        scope: Scope,
        payload: object,
        attempts: int,
        created_at: datetime,
        status: str = "queued",
        last_error: str | None = None,
    ) -> Job:
        """A job as the queue holds it, its JSON payload read (and validated) once, here."""
        try:
            typed, error = JobPayload.from_json(payload), None
        except TypeError as exc:
            typed, error = JobPayload(), f"job {id}: {exc}"
        return cls(id, kind, scope, typed, attempts, created_at, status, last_error, error)

    @property
    def owner(self) -> str:
        """Whose queue the job is in: ``coalesce(user_id, agent_id, run_id, '')``."""
        return self.scope.owner

    @property
    def work(self) -> int:
        """The turns a claim of it embeds (those not applied yet), at least 1: what a claim's
        ``turns`` budget counts."""
        return max(len(self.payload.turns) - self.payload.progress, 1)


@dataclass(frozen=True)
class Passage:
    """One window of a memory too long for the embedder: characters ``[start, end)`` of its
    text and their vector. ``ordinal`` numbers a memory's passages from 0 in text order."""

    ordinal: int
    start: int
    end: int
    embedding: Any  # float32 vector of the store's dimension


@dataclass(frozen=True)
class EmbeddedText:
    """A text's vector and, for a text longer than the embedder's window, its passages
    (``vector`` is then the first passage's)."""

    vector: Any
    passages: tuple[Passage, ...] = ()


@dataclass(frozen=True)
class TextToEmbed:
    """A memory written without a vector (by ``add()``, ARKOS's ``add_turn`` or an import):
    its text, and the hash that text had when read, so a vector is stored only for it."""

    id: UUID
    memory: str
    hash: str


@dataclass(frozen=True)
class FilledVector:
    """The vector (and passages) of a memory written without one, for the text of ``hash``."""

    id: UUID
    hash: str
    embedded: EmbeddedText


@dataclass(frozen=True)
class PassageHit:
    """The passage of a long memory nearest a search's query: what a result returns of it."""

    ordinal: int
    start: int
    end: int


@dataclass(frozen=True)
class NewMemory:
    """A memory about to be inserted."""

    id: UUID
    scope: Scope
    memory: str
    hash: str
    embedding: Any  # float32 vector of the store's dimension
    metadata: dict[str, Any]
    memory_type: str | None = None
    valid_from: datetime | None = None
    source_turn_ids: tuple[int, ...] = ()
    created_at: datetime | None = None
    # Set for a memory made from one turn (its speaker); facts have none. Turn memories are
    # never deduplicated: each turn keeps its own memory, id and metadata.
    role: str | None = None
    expires_at: datetime | None = None  # add(expiration_date=...): not returned from then on
    # A text longer than the embedder's window: its passages (``embedding`` is the first's);
    # stored with the memory's vector, replaced by nothing when its text changes.
    passages: tuple[Passage, ...] = ()


@dataclass(frozen=True)
class MemoryRecord:
    """A stored memory, as read back."""

    id: UUID
    scope: Scope
    memory: str
    hash: str
    metadata: dict[str, Any]
    memory_type: str | None
    valid_from: datetime
    valid_to: datetime | None
    superseded_by: UUID | None
    source_turn_ids: tuple[int, ...]
    created_at: datetime
    updated_at: datetime | None
    role: str | None = None

    @property
    def kind(self) -> str:
        """``"episode"`` (a turn as said: it has a speaker) or ``"fact"`` (memhub.filters)."""
        return memory_kind(self.role)


#: Why consolidation retired a fact, when the caller names no turn.
FORGET_REASON = "the user asked to forget it"


@dataclass(frozen=True)
class RetiredMemory:
    """A memory a model removed: kept, out of every read, until restored or purged."""

    record: MemoryRecord
    retired_at: datetime
    actor: str | None  # who retired it: consolidation, agent, mcp
    reason: str | None
    turn_ids: tuple[int, ...]  # the turns cited for it


#: The decimals a text score keeps before it is compared, in SQL (to pick a statement's best
#: ``k``) and in the engine (to rank): see :func:`memhub.engine.retrieve.rank`.
TEXT_SCORE_DIGITS: Final = 9


@dataclass(frozen=True)
class TextHits:
    """What a search's full-text probe found, handed to its vector step.

    Attributes:
        ids: The best ``k`` memories by full text.
        scores: Their text scores, which the vector step takes as they are (PostgreSQL's BM25:
            each one's full score, every query lexeme; the step scores the others alike).
        lexemes: The query's lexemes (PostgreSQL's: those that match anything in the scope)...
        weights: ...and each one's BM25 weight (its IDF), so that the vector step scores every
            candidate on the same terms (``memory://`` recomputes the weights: no weights).
        avgdl: The average length, in lexemes, of the rare lexemes' matches (PostgreSQL's).
    """

    ids: list[UUID]
    scores: list[float]
    lexemes: list[str] = field(default_factory=list)
    weights: list[float] = field(default_factory=list)
    avgdl: float = 1.0


@dataclass(frozen=True)
class RawCandidate:
    """A memory a back end's search found, with its signals as computed: no ranks.

    :func:`memhub.engine.retrieve.rank` rounds, breaks ties and ranks them, the same way for
    every back end, into :class:`Candidate`.
    """

    record: MemoryRecord
    vector_similarity: float | None  # cosine similarity in [-1, 1], None if not scored
    text_score: float | None  # BM25 (or ts_rank), None if no query word matches
    # The turn said just before this memory's first source turn in the same session.
    previous_turn_id: int | None = None
    # A memory with passages: the one nearest the query (its similarity is vector_similarity).
    passage: PassageHit | None = None


@dataclass(frozen=True)
class Candidate:
    """A ranked search candidate: the signals the engine fuses into one score."""

    record: MemoryRecord
    vector_similarity: float | None  # cosine similarity in [-1, 1], None if not a vector hit
    vector_rank: int | None  # 1-based
    text_score: float | None  # BM25 (or ts_rank), None if no query word matches
    text_rank: int | None
    # The turn said just before this memory's first source turn in the same session (None
    # when it has none): links a memory to its neighbours among the candidates.
    previous_turn_id: int | None = None
    passage: PassageHit | None = None  # a long memory's passage nearest the query


#: The history events that change what is known: a model's are listed and undone in one step.
MODEL_CHANGE_EVENTS = ("RETIRE", "SUPERSEDE", "UPDATE")
#: Actors that are people or memhub's own retention, not a model: their changes are not listed.
PERSON_ACTORS = ("user", "retention")


#: The window of ``MEMHUB_MODEL_CHANGES_PER_DAY`` and ``MEMHUB_MODEL_CHANGES_PER_RUN``.
MODEL_BUDGET_WINDOW = timedelta(days=1)


@dataclass(frozen=True)
class ModelBudget:
    """How many memories of one user models may change: ``limit`` since ``since``. The store
    counts and changes in one transaction (see ``retire_memory``)."""

    limit: int
    since: datetime

    @classmethod
    def of_the_last_day(cls, limit: int) -> ModelBudget:
        """``limit`` changes in the rolling 24 hours before now (``MODEL_BUDGET_WINDOW``)."""
        return cls(limit, datetime.now(UTC) - MODEL_BUDGET_WINDOW)

    def refusal(self, spent: int) -> str:
        return (
            f"not changed: models already changed {spent} memories of this user in the last 24"
            f" hours (MEMHUB_MODEL_CHANGES_PER_DAY={self.limit}); the user can still do it"
        )


def is_model_actor(actor: str | None) -> bool:
    """Whether ``actor`` (a history event's) is a model: consolidation, an agent, MCP, LangGraph."""
    return actor is not None and actor not in PERSON_ACTORS


@dataclass(frozen=True)
class ModelChange:
    """One change a model made to one memory: its history event, and whether it was undone.

    ``id`` is the event's id, what ``undo_model_change`` takes; ``before`` and ``after`` are
    the memory's text before and after (``after`` is None for a retire).
    """

    id: int
    memory_id: UUID
    event: str  # RETIRE, SUPERSEDE or UPDATE
    before: str | None
    after: str | None
    actor: str | None
    reason: str | None
    turn_ids: tuple[int, ...]
    created_at: datetime
    undone: bool
    successor_id: UUID | None = None  # a SUPERSEDE's new fact


@dataclass(frozen=True)
class HistoryEvent:
    """One change to one memory."""

    id: int
    memory_id: UUID
    event: str
    old_memory: str | None
    new_memory: str | None
    actor: str | None
    turn_ids: tuple[int, ...]
    metadata: dict[str, Any]
    created_at: datetime


@dataclass(frozen=True)
class Lane:
    """Which job kinds a claim takes: ``kinds``, or every kind but them when ``exclude``.

    An ordered lane keeps every owner's jobs in order on its own, so a slow lane (LLM calls)
    never holds back a fast one; an unordered one lets concurrent batches share an owner.
    An excluding lane also takes kinds nobody handles, so such jobs are parked with an error
    rather than left queued forever.
    """

    kinds: tuple[str, ...]
    exclude: bool = False
    ordered: bool = True  # False: jobs of one owner may be processed concurrently
    # An owner's jobs wait while the owner has queued jobs of other lanes created before the
    # first of them became ready (consolidation waits for its window's turns to be ingested).
    after_other_lanes: bool = False

    def admits(self, kind: str) -> bool:
        return (kind in self.kinds) != self.exclude

    @property
    def name(self) -> str:
        return ("!" if self.exclude else "") + ",".join(sorted(self.kinds))


@dataclass(frozen=True)
class Lease:
    """Who claims jobs and on what terms.

    Attributes:
        owner: This worker's id, written on every job it leases.
        seconds: How long a lease lasts unless extended; an expired lease is claimed again.
        max_attempts: Claims a job gets; one found expired after that many is parked.
    """

    owner: str
    seconds: float
    max_attempts: int


def usage_summary(calls: int, prompt: int, completion: int, turns: int) -> dict[str, float]:
    """Consolidation's LLM cost, in total and per processed turn (what `jobs stats` prints)."""
    per_turn = max(turns, 1)
    return {
        "llm_calls": calls,
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "turns": turns,
        "calls_per_turn": calls / per_turn,
        "tokens_per_turn": (prompt + completion) / per_turn,
    }


# -- operator views (OpsStore) -------------------------------------------------------------


@dataclass(frozen=True)
class UserRow:
    """A user with current memories or conversation turns, and how many of each."""

    user_id: str
    memories: int
    turns: int
    last_activity: datetime | None


@dataclass(frozen=True)
class ScopeRow:
    """A scope (its user, agent and run ids; any may be None) with current memories."""

    user_id: str | None
    agent_id: str | None
    run_id: str | None
    memories: int
    last_activity: datetime | None


@dataclass(frozen=True)
class DailyUsage:
    """Consolidation's LLM calls and tokens of one UTC day."""

    day: date
    calls: int
    prompt_tokens: int
    completion_tokens: int


# -- bulk work (BulkStore) -----------------------------------------------------------------


@dataclass(frozen=True)
class ImportCursor:
    """How far the input ``source`` got: ``position`` items done (committed or skipped),
    whose content hashes to ``digest``."""

    source: str
    path: str
    position: int
    digest: str = ""
    finished: bool = False


@dataclass(frozen=True)
class ImportBatch:
    """Rows one transaction writes: turns under reserved ids, memories, jobs, the cursor."""

    turns: Sequence[tuple[int, NewTurn]]
    memories: Sequence[NewMemory]
    jobs: Sequence[NewJob]
    cursor: ImportCursor | None


@dataclass(frozen=True)
class EmbeddingSpace:
    """The embedding model and dimension a database records (None: not recorded yet)."""

    model: str | None
    dimension: int | None


def round_robin(queues: Sequence[Sequence[Job]], limit: int, turns: int | None = None) -> list[Job]:
    """Each owner's first job, then each one's second, ...: a share of ``limit`` each.

    With ``turns``, the pick also stops once its jobs carry that many turns to embed (the
    first job is always taken): a claim is then about one chunk of work whatever the jobs'
    sizes, so an owner whose job is queued meanwhile waits for that much, not for a batch of
    another owner's 256-turn import jobs.
    """
    picked: list[Job] = []
    work = 0
    for depth in range(limit):
        for jobs in queues:
            if depth >= len(jobs) or len(picked) >= limit:
                continue
            if turns is not None and picked and work >= turns:
                return picked
            picked.append(jobs[depth])
            work += jobs[depth].work
    return picked
