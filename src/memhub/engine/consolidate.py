"""LLM consolidation: from queued turns and related facts to one call and its operations.

The plan is checked before anything is applied: an id the model was not shown, an unknown
operation or an empty fact fails the batch (it is retried, then parked with the raw output),
so a confused model can never touch a memory it was not asked about.
"""

from __future__ import annotations

import logging
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np

from memhub.embed.base import Embedder
from memhub.engine.prompts import (
    ConsolidationReply,
    ExistingFact,
    ProceduralReply,
    PromptTurn,
    consolidation_messages,
    procedural_messages,
)
from memhub.engine.text import memory_hash
from memhub.errors import ProviderOutputError
from memhub.filters import parse_filters
from memhub.llm import LLM
from memhub.llm.base import Usage
from memhub.messages import deserialize
from memhub.store.protocol import JobBatch
from memhub.store.records import Job, MemoryRecord, NewMemory, Scope, Turn
from memhub.telemetry import operation, record_llm_usage

__all__ = ["CONSOLIDATE_JOB", "TURN_MEMORY", "Consolidator", "PlannedOp", "plan_operations"]

log = logging.getLogger("memhub.consolidation")

CONSOLIDATE_JOB = "consolidate"
TURN_MEMORY = "turn"  # memory_type of a raw turn waiting for consolidation
PROCEDURAL = "procedural_memory"
_NOT_RAW = parse_filters({"memory_type": {"ne": TURN_MEMORY}})


@dataclass(frozen=True)
class PlannedOp:
    """A checked operation, with real ids and the turns it came from."""

    kind: str
    target: MemoryRecord | None
    text: str | None
    turns: tuple[Turn, ...]

    @property
    def said_at(self) -> datetime:
        """The conversation's own time: the latest turn the operation cites."""
        return max(_aware(t.created_at) for t in self.turns)


def _aware(ts: datetime | None) -> datetime:
    # conversation_context keeps UTC wall time without a zone
    if ts is None:
        return datetime.now(UTC)
    return ts if ts.tzinfo else ts.replace(tzinfo=UTC)


def _speaker(turn: Turn) -> str:
    name = (turn.metadata or {}).get("speaker") or (turn.metadata or {}).get("name")
    if isinstance(name, str) and name.strip():
        return name
    return {"user": turn.user_id or "user", "assistant": "assistant"}.get(turn.role, turn.role)


def plan_operations(
    reply: ConsolidationReply, facts: Sequence[MemoryRecord], turns: Sequence[Turn]
) -> list[PlannedOp]:
    """Map the model's local numbers back to memories and turns, refusing what does not fit."""
    planned: list[PlannedOp] = []
    touched: set[int] = set()
    for op in reply.operations:
        if op.op == "NONE":
            continue
        cited = tuple(turns[n - 1] for n in op.turns if 1 <= n <= len(turns)) or tuple(turns)
        target = None
        if op.op in ("UPDATE", "SUPERSEDE", "DELETE"):
            number = _fact_number(op.id, len(facts))
            if number in touched:
                raise ProviderOutputError(f"fact {number} has more than one operation")
            touched.add(number)
            target = facts[number - 1]
        text = (op.text or "").strip()
        if op.op != "DELETE" and not text:
            raise ProviderOutputError(f"{op.op} operation with an empty fact")
        if op.op == "DELETE" and not any(t.role == "user" for t in cited):
            # Only a person can ask to forget; a tool result or an assistant turn that reads
            # like an instruction is data, whatever the model made of it.
            log.warning("DELETE of %s refused: no user turn asked for it", target and target.id)
            continue
        planned.append(PlannedOp(kind=op.op, target=target, text=text or None, turns=cited))
    return planned


def _fact_number(raw: str | None, shown: int) -> int:
    try:
        number = int(str(raw).strip().strip("[]#"))
    except ValueError:
        raise ProviderOutputError(
            f"operation refers to fact {raw!r}, which is not a number"
        ) from None
    if not 1 <= number <= shown:
        raise ProviderOutputError(f"operation refers to fact {number}, which was not shown")
    return number


def _usage(model: str, usage: Usage) -> dict[str, int]:
    record_llm_usage(model, usage.prompt_tokens, usage.completion_tokens, usage.calls)
    return {
        "calls": usage.calls,
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
    }


class Consolidator:
    """Runs one owner's consolidation jobs through one LLM call, inside their batch."""

    def __init__(self, llm: LLM, embedder: Embedder, related_k: int = 20) -> None:
        self.llm = llm
        self.embedder = embedder
        self.related_k = related_k

    async def run(self, batch: JobBatch, jobs: Sequence[Job]) -> None:
        """Consolidate ``jobs`` (one owner, in order); everything lands in the batch."""
        scope = jobs[0].scope
        turn_ids = [t for job in jobs for t in job.payload.get("turn_ids", [])]
        turns = [t for t in await batch.turns(turn_ids) if _content(t).strip()]
        if turns:
            with operation("consolidate", {"memhub.turns": len(turns)}):
                if jobs[0].payload.get("memory_type") == PROCEDURAL:
                    await self._procedural(batch, scope, turns, jobs)
                else:
                    await self._facts(batch, scope, turns, jobs)
        await batch.retire_turn_memories(scope, turn_ids)
        await batch.complete([job.id for job in jobs])

    async def _facts(
        self, batch: JobBatch, scope: Scope, turns: list[Turn], jobs: Sequence[Job]
    ) -> None:
        text = "\n".join(_content(t) for t in turns)
        vectors = await self.embedder.embed([text])
        candidates = await batch.related(scope, text, vectors[0], self.related_k, _NOT_RAW)
        facts = [c.record for c in candidates][: self.related_k]
        instructions = jobs[0].payload.get("instructions")
        messages = consolidation_messages(
            [ExistingFact(n, f.memory, f.valid_from) for n, f in enumerate(facts, start=1)],
            [
                PromptTurn(n, _speaker(t), _aware(t.created_at), _content(t))
                for n, t in enumerate(turns, start=1)
            ],
            instructions if isinstance(instructions, str) else None,
        )
        result = await self.llm.generate_structured(messages, ConsolidationReply)
        try:
            planned = plan_operations(result.value, facts, turns)
        except ProviderOutputError as exc:
            raise ProviderOutputError(str(exc), raw=result.raw) from exc
        counts = Counter(op.kind for op in planned)
        await self._apply(batch, scope, planned)
        await batch.record_usage(
            scope,
            self.llm.model_name,
            _usage(self.llm.model_name, result.usage),
            len(turns),
            len(jobs),
            dict(counts),
        )

    async def _apply(self, batch: JobBatch, scope: Scope, planned: Sequence[PlannedOp]) -> None:
        texts = [op.text for op in planned if op.text]
        vectors = iter(await self.embedder.embed(texts)) if texts else iter(())
        for op in planned:
            turn_ids = [t.id for t in op.turns]
            if op.kind == "DELETE":
                assert op.target is not None
                await batch.forget(scope, op.target.id, turn_ids)
                continue
            assert op.text is not None
            vector = next(vectors)
            if op.kind == "UPDATE":
                assert op.target is not None
                await batch.refine(
                    scope, op.target.id, op.text, memory_hash(op.text), vector, turn_ids
                )
                continue
            new = self._fact(scope, op, vector)
            if op.kind == "SUPERSEDE":
                assert op.target is not None
                await batch.supersede(scope, op.target.id, new, op.said_at)
            else:
                await batch.insert_memories([new], actor="consolidation")

    @staticmethod
    def _fact(
        scope: Scope, op: PlannedOp, vector: Any, memory_type: str | None = None
    ) -> NewMemory:
        assert op.text is not None
        metadata: dict[str, Any] = {"source_turn_ids": [t.id for t in op.turns]}
        if op.target is not None:
            metadata["supersedes"] = str(op.target.id)
        return NewMemory(
            id=uuid.uuid4(),
            scope=scope,
            memory=op.text,
            hash=memory_hash(op.text),
            embedding=np.asarray(vector, dtype=np.float32),
            metadata=metadata,
            memory_type=memory_type,
            valid_from=op.said_at,
            source_turn_ids=tuple(t.id for t in op.turns),
            created_at=op.said_at,
        )

    async def _procedural(
        self, batch: JobBatch, scope: Scope, turns: list[Turn], jobs: Sequence[Job]
    ) -> None:
        messages = procedural_messages(
            [
                PromptTurn(n, _speaker(t), _aware(t.created_at), _content(t))
                for n, t in enumerate(turns, start=1)
            ]
        )
        result = await self.llm.generate_structured(messages, ProceduralReply)
        summary = result.value.summary.strip()
        if not summary:
            raise ProviderOutputError("empty procedural summary", raw=result.raw)
        op = PlannedOp(kind="ADD", target=None, text=summary, turns=tuple(turns))
        (vector,) = await self.embedder.embed([summary])
        await batch.insert_memories(
            [self._fact(scope, op, vector, PROCEDURAL)], actor="consolidation"
        )
        await batch.record_usage(
            scope,
            self.llm.model_name,
            _usage(self.llm.model_name, result.usage),
            len(turns),
            len(jobs),
            {"ADD": 1},
        )


def _content(turn: Turn) -> str:
    return deserialize(turn.message, turn.role).content
