"""LLM consolidation: from queued turns and related facts to one call and its operations.

:meth:`Consolidator.prepare` is the work phase (reads, embeddings, the LLM call; no transaction
open) and :meth:`Consolidator.apply` the apply phase. The plan is checked in between: an id the
model was not shown or an empty fact fails the attempt, and DELETE / SUPERSEDE are refused
unless a user turn shown in that prompt, and about that fact, asked for them (a DELETE: asked
to forget it; :mod:`memhub.engine.consent`), and beyond ``max_removals`` per call. What
stands is still reversible: a DELETE retires the fact and a SUPERSEDE closes it, and
``restore`` brings either back.
"""

from __future__ import annotations

import logging
import uuid
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any, TypeVar
from uuid import UUID

import numpy as np
from pydantic import BaseModel

from memhub.embed.base import Embedder
from memhub.engine import forgetting, gaps, ownership, replacing, retrieve
from memhub.engine.consent import forgotten_words
from memhub.engine.dates import said_at_utc
from memhub.engine.grounding import says_again
from memhub.engine.operations import (
    CHANGES,
    MAX_REMOVALS,
    Plan,
    PlannedOp,
    one_fact_each,
    plan_operations,
    removal_refused,
)
from memhub.engine.prompts import (
    CONSOLIDATION_SYSTEM,
    GAP_SYSTEM,
    ConsolidationReply,
    ExistingFact,
    ForgetReply,
    ProceduralReply,
    PromptTurn,
    ReplacementReply,
    consolidation_messages,
    forget_check_messages,
    procedural_messages,
    prompt_tokens,
    replacement_messages,
    reply_tokens,
    turn_windows,
)
from memhub.engine.text import memory_hash, turn_text
from memhub.errors import ProviderError, ProviderOutputError
from memhub.filters import EPISODE, FACT, KIND, parse_filters
from memhub.llm import LLM
from memhub.llm.base import ChatMessage, UnusableAnswerError, Usage
from memhub.llm.parsing import iter_json_values
from memhub.store.protocol import ConsolidationWrites, JobBatch, Store
from memhub.store.records import (
    MODEL_BUDGET_WINDOW,
    Candidate,
    Job,
    MemoryRecord,
    NewMemory,
    Scope,
    Turn,
)
from memhub.telemetry import (
    operation,
    record_guard,
    record_llm_usage,
    record_refused_operation,
)

__all__ = [
    "CONSOLIDATE_JOB",
    "Consolidator",
    "Plan",
    "fact_scope",
]

log = logging.getLogger("memhub.consolidation")

Reply = TypeVar("Reply", bound=BaseModel)

CONSOLIDATE_JOB = "consolidate"
PROCEDURAL = "procedural_memory"
# The model is shown stored facts only: the episodes (what was said) are never its to change.
_FACTS_ONLY = parse_filters({KIND: FACT})


def _speaker(turn: Turn) -> str:
    # The stored role decides who spoke; caller metadata (a "speaker" name) never does, so an
    # assistant or tool turn cannot pass itself off as the user. The user is shown as "user",
    # not by id: a model shown "h01-7f3a" writes the id into the facts.
    return turn.role


def _usage(model: str, usage: Usage) -> dict[str, int]:
    record_llm_usage(model, usage.prompt_tokens, usage.completion_tokens, usage.calls)
    return {
        "calls": usage.calls,
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
    }


def fact_scope(scope: Scope) -> Scope:
    """Where a job's facts live: the user's (and agent's), across runs and threads."""
    if scope.user_id is None and scope.agent_id is None:
        return scope
    return Scope(user_id=scope.user_id, agent_id=scope.agent_id)


class Consolidator:
    """Runs one owner's consolidation jobs through one LLM call: work, then apply."""

    def __init__(
        self,
        llm: LLM,
        embedder: Embedder,
        related_k: int = 20,
        max_removals: int = MAX_REMOVALS,
        context_tokens: int = 4096,
        check_replacements: bool = True,
        changes_per_day: int | None = None,
        changes_per_run: int | None = None,
        fill_gaps: bool = True,
    ) -> None:
        self.llm = llm
        self.embedder = embedder
        self.related_k = related_k
        self.max_removals = max_removals
        self.context_tokens = context_tokens
        self.check_replacements = check_replacements
        self.changes_per_day = changes_per_day  # None: no budget over time
        self.changes_per_run = changes_per_run  # None: no budget per conversation
        self.fill_gaps = fill_gaps  # the second, short question (engine/gaps.py)

    async def prepare(self, store: Store, jobs: Sequence[Job]) -> Plan:
        """The work phase: read, embed and ask the model; nothing is held open meanwhile."""
        scope = fact_scope(jobs[0].scope)
        turn_ids = [t for job in jobs for t in job.payload.turns]
        runs = {
            t: job.scope.run_id
            for job in jobs
            if job.scope.run_id is not None
            for t in job.payload.turns
        }
        plan = Plan(jobs=jobs, scope=scope, turn_ids=turn_ids, runs=runs)
        turns = [t for t in await store.turns_by_ids(turn_ids) if turn_text(t).strip()]
        if not turns:
            return plan
        plan.turns = len(turns)
        plan.episodes = await _episodes(store, jobs)
        with operation("consolidate", {"memhub.turns": len(turns)}):
            if jobs[0].payload.memory_type == PROCEDURAL:
                await self._procedural(plan, turns)
            else:
                await self._facts(store, plan, turns)
        return plan

    async def _related(
        self, store: Store, scope: Scope, turns: Sequence[Turn]
    ) -> list[MemoryRecord]:
        # One lookup per turn: a single embedding of all turns joined would be truncated by
        # the embedder (MiniLM reads 256 tokens), hiding facts related to the later turns.
        texts = [turn_text(t)[:2000] for t in turns]
        vectors = await self.embedder.embed(texts)
        each = max(3, -(-self.related_k // len(turns)))
        lists = [
            await retrieve.candidates(store, scope, text, vector, each, _FACTS_ONLY, False)
            for text, vector in zip(texts, vectors, strict=True)
        ]
        ranked = [sorted(c, key=replacing.best_rank) for c in lists]
        # Every turn's closest fact is shown, whatever the others found; then the rest round
        # robin (each turn's second, then third, ...) up to related_k.
        facts: dict[UUID, MemoryRecord] = {c[0].record.id: c[0].record for c in ranked if c}
        for rank in range(1, max((len(r) for r in ranked), default=0)):
            for candidates in ranked:
                if rank < len(candidates) and len(facts) < self.related_k:
                    record = candidates[rank].record
                    facts.setdefault(record.id, record)
        return list(facts.values())

    async def _facts(self, store: Store, plan: Plan, turns: list[Turn]) -> None:
        facts = await self._related(store, plan.scope, turns)
        custom = plan.jobs[0].payload.instructions
        shown = [ExistingFact(n, f.memory, f.valid_from) for n, f in enumerate(facts, start=1)]
        room = self._room_for_turns(shown, custom)
        while room < self._prompt_budget // 4 and shown:
            # facts crowd out the turns: show fewer (the closest come first)
            shown = shown[: len(shown) // 2]
            room = self._room_for_turns(shown, custom)
        facts = facts[: len(shown)]
        plan.read_set = {f.id: f.hash for f in facts}
        said_texts = [turn_text(t) for t in turns]
        # a turn put into English is shown with its English reading beside it
        in_english = [
            forgetting.needs_english(t, x) for t, x in zip(turns, said_texts, strict=True)
        ]
        windows = turn_windows(said_texts, room, in_english)
        if len(windows) > 1:
            log.info("%d turns do not fit one prompt: %d calls", len(turns), len(windows))
        usage = Usage()
        touched: set[UUID] = set()
        for window in windows:
            asking = [turns[i] for i, _ in window]
            said = {turns[i].id: text for i, text in window}
            # the request rules read a turn in a language they do not know in English
            spent, read = await forgetting.read_in_english(self.llm, asking, said)
            usage += spent
            plan.english.update((i, english) for i, english in read.items() if english != said[i])
            spent, ops = await self._window(plan, shown, facts, turns, window, custom, read)
            usage += spent
            # a request in this window takes back what an earlier window's turns said
            plan.ops = self._not_asked_away(plan, plan.ops, asking, read, facts)
            for op in ops:
                if op.target is not None and op.target.id in touched:
                    self._refuse(plan, "REFUSED_INVALID")  # changed by an earlier window
                    continue
                if op.target is not None:
                    touched.add(op.target.id)
                plan.ops.append(op)
        texts_to_embed = [op.text for op in plan.ops if op.text]
        plan.vectors = list(await self.embedder.embed(texts_to_embed)) if texts_to_embed else []
        if self.check_replacements and facts:
            usage += await self._replacements(store, plan, facts, touched)
        # after the replacements, which add SUPERSEDEs of their own
        self._not_written_again(plan)
        usage += await self._drawn_beside(plan, facts, turns)
        for reason, count in plan.refused.items():
            for _ in range(count):
                record_refused_operation(self.llm.model_name, reason)
        plan.usage = _usage(self.llm.model_name, usage)

    async def _replacements(
        self, store: Store, plan: Plan, facts: Sequence[MemoryRecord], touched: set[UUID]
    ) -> Usage:
        """ADDs that replace the closest stored fact become SUPERSEDEs, guarded as any is.

        Small models ADD "lives in Berlin" beside "lives in Paris" (issue 25's quality table)
        but judge one pair of facts better: each ADD's closest fact shown in the prompt, among
        those the SUPERSEDE guard would let a yes replace (the guard reads only the turns and
        the two facts, so it is asked first and a useless call saved) and close to the ADD by
        the embedder (``REPLACES_AT_LEAST``; a fact found by its words alone is not) and about
        the same named person (``grounding.named_subject``), is put to the model as one
        yes-or-no question. A yes is then held to the guard and cap; a mistake that passes is
        a closed fact, which ``restore`` reopens. An unusable answer leaves the ADD as it was.
        A fact the rules pass over as of another kind, beside a change the person says, is
        asked by its own question instead (``replacing.Pick.by_answer``).
        """
        shown = {f.id for f in facts}
        removals = sum(op.kind in CHANGES for op in plan.ops)
        usage = Usage()
        for i, op, vector in plan.with_vectors():
            if op.kind != "ADD" or op.text is None:
                continue
            found = await retrieve.candidates(
                store, plan.scope, op.text, vector, 5, _FACTS_ONLY, False
            )
            pick = replacing.replaceable(found, op.text, op.turns, shown, touched, plan.english)
            if pick is None:
                continue
            closest = pick.candidate.record
            if pick.by_answer:
                answered = await replacing.answered_otherwise(self.llm, closest.memory, op.text)
                spent, ends = answered.usage, answered.another_value
            else:
                spent, ends = await self._replaces(pick.candidate, op.text)
            usage += spent
            if not ends:  # unusable, failed or no: the ADD stands
                continue
            cap_spent = removals >= self.max_removals
            superseding = replace(
                op, kind="SUPERSEDE", target=closest, paired=True, answered=pick.by_answer
            )
            if removal_refused(superseding, op.turns, cap_spent, plan.english):
                continue
            plan.ops[i] = superseding
            touched.add(closest.id)
            removals += 1
        return usage

    async def _replaces(self, candidate: Candidate, new: str) -> tuple[Usage, bool]:
        """The model's yes or no: does ``new`` replace the candidate's fact?"""
        closest = candidate.record
        messages = replacement_messages(closest.memory, new)
        # the pair and its cosine in the log: a person reviewing a run sees what a yes closed
        about = f"{new} (for {closest.memory!r}, cosine {candidate.vector_similarity:.3f})"
        spent, answer = await self._asked(messages, ReplacementReply, "replacement", about)
        return spent, answer is not None and answer.replaces

    async def _drawn_beside(
        self,
        plan: Plan,
        facts: Sequence[MemoryRecord],
        turns: Sequence[Turn],
    ) -> Usage:
        """The other facts drawn from the turns of a fact a request retired, each put to the
        model's question (``forgetting.drawn_beside``), with what the cap of removals leaves
        once every change the person stated is planned: they are the model's guesses of what
        a request meant. Asked in the window, their yeses spent the cap a replacement stated
        in the same call needed, and the old fact stayed current (heldout19's z05, read). A
        new fact of this job that says a fact so retired again is refused."""
        # each turn as the request rules read it: in English where it was put into English
        read = {t.id: plan.english.get(t.id) or turn_text(t) for t in turns}
        beside = forgetting.drawn_beside(plan.ops, read, facts)
        if not beside:
            return Usage()
        ops = list(plan.ops)
        usage = await self._with_meant_requests(ops, facts, turns, beside)
        retired = [op.target.memory for op in ops[len(plan.ops) :] if op.target is not None]
        # DELETEs hold no text: appended after the ops, the vectors stay aligned with them
        plan.ops = ops

        def said_again(op: PlannedOp) -> bool:
            if op.kind != "DELETE" and op.text and says_again(op.text, retired):
                self._refuse_asked_away(plan, op)
                return True
            return False

        plan.drop(said_again)
        return usage

    def _not_written_again(self, plan: Plan) -> None:
        """``plan`` without the ADDs that write again, word for word, a fact one of its
        SUPERSEDEs closes: the 1.5B wrote "The user's wife Sari is a bidan at the puskesmas."
        in a later window after the yes that closed it (heldout13's v06, read after its blind
        runs), and the closed fact was current again. Refused, logged and counted."""
        closed = {op.target.hash for op in plan.ops if op.kind == "SUPERSEDE" and op.target}

        def written_again(op: PlannedOp) -> bool:
            if op.kind == "ADD" and op.text and memory_hash(op.text) in closed:
                log.warning("ADD refused: %r is a fact this job changed", op.text)
                self._refuse(plan, "REFUSED_ALREADY_CHANGED")
                return True
            return False

        plan.drop(written_again)

    def _messages(
        self,
        shown: Sequence[ExistingFact],
        turns: Sequence[Turn],
        window: Sequence[tuple[int, str]],
        custom: str | None,
        read: Mapping[int, str],
    ) -> list[ChatMessage]:
        """One window's consolidation prompt: a user turn ``read`` in English (a language the
        rules do not read) with that English beside what was said, where it fits."""
        prompt_turns = [
            PromptTurn(
                n,
                _speaker(turns[i]),
                said_at_utc(turns[i].created_at),
                text,
                english=read[turns[i].id] if read.get(turns[i].id, text) != text else None,
            )
            for n, (i, text) in enumerate(window, start=1)
        ]
        messages = consolidation_messages(shown, prompt_turns, custom)
        if prompt_tokens(messages, ConsolidationReply) <= self._prompt_budget:
            return messages
        # the English readings came out longer than the room the windows left them
        log.info("the turns' English readings do not fit the prompt; shown as said")
        return consolidation_messages(
            shown, [replace(t, english=None) for t in prompt_turns], custom
        )

    async def _window(
        self,
        plan: Plan,
        shown: Sequence[ExistingFact],
        facts: Sequence[MemoryRecord],
        turns: Sequence[Turn],
        window: Sequence[tuple[int, str]],
        custom: str | None,
        read: Mapping[int, str],
    ) -> tuple[Usage, list[PlannedOp]]:
        """One call over one window of turns: what it cost and the grounded operations.
        ``read``: the turns as the request rules read them (forgetting.read_in_english)."""
        shown_turns = [turns[i] for i, _ in window]
        texts = {turns[i].id: text for i, text in window}
        messages = self._messages(shown, turns, window, custom, read)
        try:
            result = await self.llm.generate_structured(messages, ConsolidationReply)
        except UnusableAnswerError as exc:
            if not _holds_json(exc.raw):
                raise
            # valid JSON that means nothing usable: refused, not retried (it would say the
            # same again) and not parked; the episodes stay searchable
            log.warning("consolidation answer refused: %s", exc)
            self._refuse(plan, "REFUSED_UNPARSABLE")
            return exc.usage, []
        translated, meant = await self._meant(shown_turns, read, facts)
        try:
            ops = plan_operations(
                result.value,
                facts,
                shown_turns,
                self.max_removals,
                plan.refused,
                meant,
                plan.english,
            )
        except ProviderOutputError as exc:
            raise ProviderOutputError(str(exc), raw=result.raw) from exc
        ops = self._with_requests(plan, ops, facts, shown_turns, read)
        to_ask = [*meant, *forgetting.tied_by_a_word(shown_turns, read, facts)]
        checked = await self._with_meant_requests(ops, facts, shown_turns, to_ask)
        ops = self._grounded(plan, ops, shown_turns, texts, custom, [f.memory for f in facts])
        spent, filled = await self._filled(plan, ops, facts, shown_turns, texts, custom, read)
        spent += checked + translated
        ops += filled
        return result.usage + spent, self._not_asked_away(plan, ops, shown_turns, read, facts)

    def _not_asked_away(
        self,
        plan: Plan,
        ops: list[PlannedOp],
        turns: Sequence[Turn],
        texts: Mapping[int, str],
        facts: Sequence[MemoryRecord],
    ) -> list[PlannedOp]:
        """``ops`` without the new facts a user turn of ``turns`` asks to forget
        (``forgetting.asked_away``), each refused and logged."""
        away = forgetting.asked_away(turns, texts, facts, ops)
        for index in sorted(away):
            self._refuse_asked_away(plan, ops[index])
        return [op for i, op in enumerate(ops) if i not in away]

    def _refuse_asked_away(self, plan: Plan, op: PlannedOp) -> None:
        """Log and count ``op`` refused: its new fact is one a user turn asked to forget."""
        log.warning("%s refused: %r was asked to be forgotten", op.kind, op.text)
        self._refuse(plan, "REFUSED_ASKED_TO_FORGET")

    async def _meant(
        self, turns: Sequence[Turn], texts: Mapping[int, str], facts: Sequence[MemoryRecord]
    ) -> tuple[Usage, list[forgetting.Ask]]:
        """The facts each request naming no fact by a word may mean (engine/forgetting.meant),
        those in another language read in English first, and what that cost. No such
        request: nothing embedded nor asked."""
        asks = forgetting.requests_naming_no_fact(turns, texts, facts)
        usage, english = await forgetting.in_english(self.llm, [r for _, r in asks])
        return usage, await forgetting.meant(self.embedder, asks, texts, facts, english)

    def _with_requests(
        self,
        plan: Plan,
        ops: list[PlannedOp],
        facts: Sequence[MemoryRecord],
        turns: Sequence[Turn],
        texts: Mapping[int, str],
    ) -> list[PlannedOp]:
        """``ops`` with every shown fact a user turn clearly asks to forget retired, whether or
        not the model proposed the DELETE (engine/forgetting.py), under the same guard and cap;
        a new fact that only says a fact so retired again is refused (REFUSED_ASKED_TO_FORGET).
        """
        planned = {op.target.id for op in ops if op.target is not None}
        removals = sum(op.kind in CHANGES for op in ops)
        by_id = {f.id: f for f in facts}
        for fact_id, asking in forgetting.asked_to_forget(turns, texts, facts).items():
            if fact_id in planned:
                continue
            cited = tuple(t for t in turns if t.id in asking)
            delete = PlannedOp("DELETE", by_id[fact_id], None, cited, asking, unproposed=True)
            if removal_refused(delete, cited, removals >= self.max_removals):
                continue
            removals += 1
            ops.append(delete)
        return ops

    async def _asked(
        self, messages: list[ChatMessage], reply: type[Reply], check: str, about: str
    ) -> tuple[Usage, Reply | None]:
        """One yes-or-no question's cost and answer (None: unusable or failed, logged)."""
        try:
            answer = await self.llm.generate_structured(messages, reply)
        except ProviderError as exc:
            log.info("%s check of %r skipped: %s", check, about, exc)
            return (exc.usage if isinstance(exc, UnusableAnswerError) else Usage()), None
        log.info("%s check of %r: %s", check, about, answer.value)
        return answer.usage, answer.value

    async def _with_meant_requests(
        self,
        ops: list[PlannedOp],
        facts: Sequence[MemoryRecord],
        turns: Sequence[Turn],
        to_ask: Sequence[forgetting.Ask],
    ) -> Usage:
        """A request to forget naming no shown fact by a word ("the medication thing from
        before") or several by one word each ("my weight and the gym times" beside "weighs 84
        kg", "aims to weigh 78 kg" and "goes to the gym"; one word alone held by a few facts
        names them clearly, ``consent.facts_clearly_asked``) that the model answered with no
        DELETE. Each fact of
        ``to_ask`` (those the embedder finds closest, asked closest first until a yes; or
        those the word names, each asked) is put to the model as one yes-or-no question
        about the request's own words, and a yes retires it (appended to ``ops``) as a DELETE
        read from the request, under the same guard and cap, within the user's budget,
        listed for review and restorable. Neither the embedder's pick nor the words nor the
        model's yes alone retires anything."""
        usage = Usage()
        by_id = {f.id: f for f in facts}
        planned = {op.target.id for op in ops if op.target is not None}
        for ask in to_ask:
            for fact_id, request in ask.candidates:
                if fact_id in planned:
                    if ask.until_a_yes:
                        break  # the model's own DELETE, or an earlier yes, answered it
                    continue
                fact = by_id[fact_id]
                messages = forget_check_messages(request, fact.memory)
                spent, answer = await self._asked(messages, ForgetReply, "forget", fact.memory)
                usage += spent
                if answer is None or not answer.forget:  # unusable, failed or no
                    continue
                cited = tuple(t for t in turns if t.id == ask.turn_id)
                delete = PlannedOp("DELETE", fact, None, cited, (ask.turn_id,), unproposed=True)
                removals = sum(op.kind in CHANGES for op in ops)
                if not removal_refused(delete, cited, removals >= self.max_removals):
                    ops.append(delete)
                    planned.add(fact_id)
                if ask.until_a_yes:
                    break
        return usage

    async def _filled(
        self,
        plan: Plan,
        ops: Sequence[PlannedOp],
        facts: Sequence[MemoryRecord],
        turns: Sequence[Turn],
        texts: dict[int, str],
        custom: str | None,
        read: Mapping[int, str],
    ) -> tuple[Usage, list[PlannedOp]]:
        """For each user turn with a statement no grounded fact of ``ops`` citing it covers,
        the facts of one short question about it (engine/gaps.py), grounded exactly as an
        ADD is (against the question's own instructions); one that holds nothing a fact
        already written or shown does not, or nothing of the uncovered clauses, is dropped,
        logged and counted (REFUSED_ALREADY_KNOWN). ``read``: the turns as the request rules
        read them, for what their requests name."""
        usage, added = Usage(), list[PlannedOp]()
        if not self.fill_gaps:
            return usage, added
        names = {t.user_id for t in turns if t.user_id}
        known = [f.memory for f in facts]
        written = known + [op.text for op in ops if op.text]
        # the window's system turns may forbid storing something: the question is told so
        policy = [f"A system turn says: {texts[t.id]}" for t in turns if t.role == "system"]
        rules = "\n".join(r for r in (custom, *policy) if r) or None
        forgotten = forgotten_words(read[t.id] for t in turns if t.role == "user")
        before: str | None = None
        for number, turn in enumerate(turns, start=1):
            if turn.role != "user":
                continue
            cite = [o for o in (*ops, *added) if any(t.id == turn.id for t in o.turns)]
            citing = [o.text for o in cite if o.text]
            gap = gaps.uncovered(texts[turn.id], citing, names, forgotten)
            if gap.sentences:
                english = plan.english.get(turn.id)
                if english:  # the model answers in English: its words count too
                    gap = gap.read_also_as(gaps.uncovered(english, citing, names, forgotten))
                shown = " ".join(gap.sentences)
                said = PromptTurn(number, "user", said_at_utc(turn.created_at), shown)
                spent, answers = await gaps.ask(self.llm, said, before, rules)
                usage += spent
                fresh = [PlannedOp("ADD", None, a, (turn,)) for a in answers]
                for op in self._grounded(plan, fresh, turns, texts, custom, known, GAP_SYSTEM):
                    text = op.text or ""
                    why = gap.refusal(text, names, said.said_at.date())
                    if why or says_again(text, written, names):
                        log.info("the question's fact %r refused: %s", text, why or "already known")
                        self._refuse(plan, "REFUSED_ALREADY_KNOWN")
                        continue
                    added.append(op)
                    written.append(text)
            before = texts[turn.id]
        return usage, added

    @property
    def _prompt_budget(self) -> int:
        return self.context_tokens - reply_tokens(self.context_tokens)

    def _room_for_turns(self, shown: Sequence[ExistingFact], custom: str | None) -> int:
        frame = consolidation_messages(shown, [], custom)
        return self._prompt_budget - prompt_tokens(frame, ConsolidationReply)

    def _refuse(self, plan: Plan, reason: str) -> None:
        plan.refused[reason] += 1

    def _grounded(
        self,
        plan: Plan,
        ops: Sequence[PlannedOp],
        shown: Sequence[Turn],
        texts: dict[int, str],
        custom: str | None,
        known: Sequence[str],
        instructions: str = CONSOLIDATION_SYSTEM,
    ) -> list[PlannedOp]:
        """The operations whose fact the person's own turns say; the rest refused, counted.

        A fact must share content words with the user turns it cites and must not copy the
        prompt's instructions (and their examples), a system turn or an assistant turn more
        than it says what the user said, and must not restate a user turn shown (in the
        speaker's voice, or nearly all its words the turn's, in order: REFUSED_COPY_OF_TURN;
        beside the turn it adds nothing) (engine/grounding.py). Small models cite the wrong
        turn: a fact the cited turns do not carry is checked against every user turn shown
        and cites those that carry it. What the user said in the window and the ``known``
        facts shown beside it are theirs: no word of those counts as the model's invention.
        A user turn put into English (``plan.english``: a language the rules do not read) may
        carry a fact its own words do not (ownership.ground).
        """
        people = [t for t in shown if t.role == "user"]
        sources = ownership.Sources(
            instructions=(("instructions", f"{instructions}\n{custom or ''}"),),
            speakers=tuple(
                (f"{t.role} turn {t.id}", texts[t.id]) for t in shown if t.role != "user"
            ),
            user_said=(*(texts[t.id] for t in people), *known),
            names=frozenset(t.user_id for t in shown if t.user_id),
        )
        kept: list[PlannedOp] = []
        for op in one_fact_each(ops):
            grounded, reason = ownership.ground(op, people, texts, sources, plan.english)
            if grounded is not None:
                kept.append(grounded)
                continue
            log.warning(
                "%s refused (%s): %r is not the user's own fact",
                op.kind,
                reason.removeprefix("REFUSED_").lower(),
                op.text,
            )
            self._refuse(plan, reason)
        return kept

    async def _procedural(self, plan: Plan, turns: list[Turn]) -> None:
        messages = procedural_messages(
            [
                PromptTurn(n, _speaker(t), said_at_utc(t.created_at), turn_text(t))
                for n, t in enumerate(turns, start=1)
            ]
        )
        result = await self.llm.generate_structured(messages, ProceduralReply)
        plan.usage = _usage(self.llm.model_name, result.usage)
        summary = result.value.summary.strip()
        if not summary:
            raise ProviderOutputError("empty procedural summary", raw=result.raw)
        plan.ops = [PlannedOp(kind="ADD", target=None, text=summary, turns=tuple(turns))]
        plan.vectors = list(await self.embedder.embed([summary]))
        plan.memory_type = PROCEDURAL

    async def apply(self, batch: JobBatch, plan: Plan) -> None:
        """The apply phase: write the plan's operations, usage and job completion."""
        for _, op, vector in plan.with_vectors():
            await self._apply_op(batch, plan, op, vector)
        if plan.usage is not None:
            await batch.record_usage(
                plan.scope,
                self.llm.model_name,
                plan.usage,
                plan.turns,
                len(plan.jobs),
                dict(Counter(op.kind for op in plan.ops) + plan.refused),
            )
        # The turns' episodes stay whatever the model answered: facts are added beside them.
        await batch.complete([job.id for job in plan.jobs])

    async def _apply_op(
        self, batch: ConsolidationWrites, plan: Plan, op: PlannedOp, vector: Any
    ) -> None:
        turn_ids = [t.id for t in op.turns]
        if op.kind in CHANGES and not await self._within_budget(batch, plan, op):
            return
        if op.kind == "DELETE":
            assert op.target is not None
            cited = ", ".join(str(t.id) for t in op.turns if t.role == "user")
            reason = f"the user asked to forget it (turn {cited})"
            if op.unproposed:
                reason += "; read from the request, the model proposed no DELETE"
            await batch.forget(plan.scope, op.target.id, turn_ids, reason)
            # What was said stays as episodes: those of the fact's own turns, and the request
            # itself, say it too, so they go with it (restorable alike) or search finds it.
            stated = [*op.target.source_turn_ids, *op.asked]
            await batch.retire_episodes(plan.scope, stated, reason, op.target.id)
            return
        assert op.text is not None
        if op.kind == "UPDATE":
            assert op.target is not None
            await batch.refine(
                plan.scope, op.target.id, op.text, memory_hash(op.text), vector, turn_ids
            )
            return
        new = _fact(plan, op, vector)
        if op.kind == "SUPERSEDE":
            assert op.target is not None
            await batch.supersede(plan.scope, op.target.id, new, op.said_at)
        else:
            await batch.insert_memories([new], actor="consolidation")

    async def _within_budget(self, batch: ConsolidationWrites, plan: Plan, op: PlannedOp) -> bool:
        """Whether the user's budgets of model changes have room for ``op``: per 24 hours, and
        per conversation (the cited turns' session) in 24 hours.

        Counted from the history inside the apply's transaction, so they hold across calls and
        processes; an operation beyond either is refused, logged and counted, and changes
        nothing.
        """
        user_id = plan.scope.user_id
        if user_id is None:
            return True
        budgets: list[tuple[str | None, int | None, str]] = [
            (None, self.changes_per_day, "MEMHUB_MODEL_CHANGES_PER_DAY")
        ]
        sessions = sorted({t.session_id for t in op.turns})
        budgets += [(s, self.changes_per_run, "MEMHUB_MODEL_CHANGES_PER_RUN") for s in sessions]
        since = datetime.now(UTC) - MODEL_BUDGET_WINDOW
        for session, limit, setting in budgets:
            if limit is None:
                continue
            if session not in plan.changes_left:
                spent = await batch.count_model_changes(user_id, since, session)
                plan.changes_left[session] = limit - spent
            if plan.changes_left[session] <= 0:
                assert op.target is not None
                log.warning(
                    "%s of %s refused: the budget of model changes for user %s is spent (%s=%d)",
                    op.kind,
                    op.target.id,
                    user_id,
                    setting,
                    limit,
                )
                record_guard(f"consolidation.{op.kind.lower()}", "over_budget")
                plan.refused["REFUSED_OVER_BUDGET"] += 1
                return False
        for session, limit, _ in budgets:
            if limit is not None:
                plan.changes_left[session] -= 1
        return True


async def _episodes(store: Store, jobs: Sequence[Job]) -> dict[int, UUID]:
    """Each turn's episode (its memory as said), so the facts drawn from it can name it."""
    found: dict[int, UUID] = {}
    for scope in {job.scope for job in jobs}:
        turn_ids = [t for job in jobs if job.scope == scope for t in job.payload.turns]
        for record in await store.memories_for_turns(scope, turn_ids):
            if record.kind == EPISODE and len(record.source_turn_ids) == 1:
                found[record.source_turn_ids[0]] = record.id
    return found


def _holds_json(text: str | None) -> bool:
    return text is not None and next(iter_json_values(text), None) is not None


def _fact(plan: Plan, op: PlannedOp, vector: Any) -> NewMemory:
    assert op.text is not None
    metadata: dict[str, Any] = {"source_turn_ids": [t.id for t in op.turns]}
    episodes = [str(plan.episodes[t.id]) for t in op.turns if t.id in plan.episodes]
    if episodes:  # the episodes it was drawn from, which stay beside it
        metadata["episode_ids"] = episodes
    runs = sorted({plan.runs[t.id] for t in op.turns if t.id in plan.runs})
    if runs:  # the facts are the user's; the threads they were learned in stay on record
        metadata["run_ids"] = runs
    if op.target is not None:
        metadata["supersedes"] = str(op.target.id)
    return NewMemory(
        id=uuid.uuid4(),
        scope=plan.scope,
        memory=op.text,
        hash=memory_hash(op.text),
        embedding=np.asarray(vector, dtype=np.float32),
        metadata=metadata,
        memory_type=plan.memory_type,
        valid_from=op.said_at,
        source_turn_ids=tuple(t.id for t in op.turns),
        created_at=op.said_at,
    )
