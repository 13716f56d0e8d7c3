"""What a real model adds to memory: each stored fact judged as a person would (issue 35).

Labelled conversations (``bench/llm_set/dev.json``, tuned on; ``bench/llm_set/heldout.json``,
run only to report) are added session by session, each at its own date, through the public
API (``AsyncMemory.add(messages, user_id=..., timestamp=..., wait=True)``) against an
OpenAI-compatible server. Then every current memory is sorted:

- an **episode** (it has a ``role``, ``kind == "episode"`` or ``memory_type == "turn"``): what
  was said, kept as it was; counted, never judged as a fact;
- every other memory is a **stored fact**, judged into exactly one category, first that fits:
  ``raw_turn`` (a user turn's words, nothing else), ``assistant_text`` (an assistant or system
  turn's words, or a word only they said), ``copy_of_turn`` (still in the speaker's voice:
  first or second person, a speaker prefix, or nearly all its words a user turn's in order
  without naming the user in the third person),
  ``forgotten`` (says what the user asked to forget), ``stale`` (says what a later turn
  changed), ``wrong`` when it only reports a topic ("The user is talking about ..."),
  ``supported`` (matches a labelled fact), else ``wrong``.

A conversation's ``facts`` are what must be found; its ``also`` labels are the other things
its user states about themselves or someone they know, which a person accepts as stored
facts (a fact matching one is ``supported``) but recall does not ask for. A fact that says a
change's news is not ``stale`` for naming the old state beside it ("The user and the user's
girlfriend Noor got engaged").

A label is mechanical and strict: ``about`` is who the fact is about (``"user"``: the fact
says "user"; a name: the fact names that person), ``all`` the patterns it must hold (each a
case-insensitive regular expression matched at a word's start, so ``allerg`` matches
"allergic"; ``a|b`` takes either), ``not`` patterns it must not hold. Precision is supported
facts over stored facts; recall is labelled facts matched by a supported fact (found *as a
fact*, not as a copy or an episode). A change is right when its new label is matched by a
supported fact and no stored fact says the old one; a request to forget is honoured when no
stored fact says it (episodes still saying it are counted beside).

Run a server first (``python tools/llm_tier.py serve --model 1.5b``), then
``python -m bench.llm_quality --url http://127.0.0.1:PORT/v1 --set dev --out dev.json``.
``--system mem0`` runs Mem0 2.2.x on the same conversations, judge and server instead (from
``.venv-bench``; see ``bench/llm_quality_mem0.py``). Quality is reported, not asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import platform
import re
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

SETS = {
    "dev": Path(__file__).parent / "llm_set" / "dev.json",
    "heldout": Path(__file__).parent / "llm_set" / "heldout.json",
    "heldout2": Path(__file__).parent / "llm_set" / "heldout2.json",
    "heldout3": Path(__file__).parent / "llm_set" / "heldout3.json",
    "heldout4": Path(__file__).parent / "llm_set" / "heldout4.json",
    "heldout5": Path(__file__).parent / "llm_set" / "heldout5.json",
    "heldout6": Path(__file__).parent / "llm_set" / "heldout6.json",
    "heldout7": Path(__file__).parent / "llm_set" / "heldout7.json",
    "heldout8": Path(__file__).parent / "llm_set" / "heldout8.json",
    "heldout9": Path(__file__).parent / "llm_set" / "heldout9.json",
    "heldout10": Path(__file__).parent / "llm_set" / "heldout10.json",
    "heldout11": Path(__file__).parent / "llm_set" / "heldout11.json",
    "heldout12": Path(__file__).parent / "llm_set" / "heldout12.json",
    "heldout13": Path(__file__).parent / "llm_set" / "heldout13.json",
    "heldout14": Path(__file__).parent / "llm_set" / "heldout14.json",
    "heldout15": Path(__file__).parent / "llm_set" / "heldout15.json",
    "heldout16": Path(__file__).parent / "llm_set" / "heldout16.json",
    "heldout17": Path(__file__).parent / "llm_set" / "heldout17.json",
    "heldout18": Path(__file__).parent / "llm_set" / "heldout18.json",
    "heldout19": Path(__file__).parent / "llm_set" / "heldout19.json",
    "heldout20": Path(__file__).parent / "llm_set" / "heldout20.json",
}
CATEGORIES = (
    "supported",
    "copy_of_turn",
    "raw_turn",
    "assistant_text",
    "stale",
    "forgotten",
    "wrong",
)
_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)
# The speaker's own voice: a fact still holding these is the turn, not the system's words.
_VOICE = frozenset(["i", "me", "my", "mine", "myself", "we", "our", "ours", "you", "your", "yours"])
_PREFIX = re.compile(r"^\s*([\w.@-]+)\s*:\s")
_COPY_SHARE = 0.85  # a fact with this share of its words a turn's, in order, copies it
# A report of what the conversation was about ("The user is talking about two greyhounds",
# Mem0's "User asked about the capital of Mongolia"): it names a topic, not something true of
# the person. "User mentioned knitting Pepper a jumper" says what they do, and is judged so.
_REPORT = re.compile(
    r"\W*(?:the\s+)?user\s+(?:is\s+|was\s+)?(?:(?:talking|talked|talks|asking|asked|asks"
    r"|inquired|inquires)\s+about|wants?\s+to\s+know|wanted\s+to\s+know|greeted|said hello)\b",
    re.IGNORECASE,
)


@dataclass
class Score:
    """Counts over the conversations run."""

    conversations: int = 0
    turns: int = 0
    episodes: int = 0
    categories: Counter[str] = field(default_factory=Counter)
    to_keep: int = 0
    kept: int = 0
    changes: int = 0
    changes_right: int = 0
    forgets: int = 0
    forgets_honoured: int = 0
    forgotten_in_episodes: int = 0
    seconds: float = 0.0
    calls: float = 0.0
    prompt_tokens: float = 0.0
    completion_tokens: float = 0.0

    def row(self) -> dict[str, Any]:
        def ratio(a: float, b: float) -> float | None:
            return round(a / b, 2) if b else None

        stored = sum(self.categories.values())
        return {
            "conversations": self.conversations,
            "stored_facts": stored,
            "precision": ratio(self.categories["supported"], stored),
            "fact_recall": ratio(self.kept, self.to_keep),
            "changes_right": f"{self.changes_right}/{self.changes}",
            "forgets_honoured": f"{self.forgets_honoured}/{self.forgets}",
            "forgotten_still_in_episodes": self.forgotten_in_episodes,
            "episodes": self.episodes,
            "categories": {c: self.categories[c] for c in CATEGORIES},
            "calls_per_turn": ratio(self.calls, self.turns),
            "prompt_tokens_per_turn": ratio(self.prompt_tokens, self.turns),
            "completion_tokens_per_turn": ratio(self.completion_tokens, self.turns),
            "seconds_per_turn": ratio(self.seconds, self.turns),
        }


def totals(score: Score) -> dict[str, Any]:
    # asdict() would rebuild the Counter from its items (counting them), so copy it by hand
    return {f.name: getattr(score, f.name) for f in fields(score)} | {
        "categories": dict(score.categories)
    }


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.casefold())


def _has(text: str, pattern: str) -> bool:
    return re.search(rf"(?<!\w)(?:{pattern})", text, re.IGNORECASE) is not None


def says(label: dict[str, Any], text: str, subject: bool = True) -> bool:
    """Does ``text`` say what ``label`` labels (about its subject, unless ``subject`` is
    False: whoever it names, a stale or forgotten fact is still there)?"""
    if subject and not _has(text, r"user\b" if label["about"] == "user" else label["about"]):
        return False
    if not all(_has(text, p) for p in label["all"]):
        return False
    return not any(_has(text, p) for p in label.get("not", ()))


def _in_order_share(fact: list[str], turn: list[str]) -> float:
    """The share of ``fact``'s words that are ``turn``'s words in the same order (LCS)."""
    if not fact:
        return 0.0
    previous = [0] * (len(turn) + 1)
    for word in fact:
        current = [0]
        for j, other in enumerate(turn):
            current.append(previous[j] + 1 if word == other else max(previous[j + 1], current[j]))
        previous = current
    return previous[-1] / len(fact)


# The strict reading (``--strict-copies``): a fact that is its turn with only the subject
# swapped ("The user's friend Tom lives in Oslo" from "My friend Tom lives in Oslo") is a copy.
_SUBJECT_WORDS = frozenset(("the", "user", "s"))


def _restates_strictly(fact: list[str], turn: list[str]) -> bool:
    drop = _SUBJECT_WORDS | _VOICE
    kept = [w for w in fact if w not in drop]
    return len(kept) >= 3 and _in_order_share(kept, [w for w in turn if w not in drop]) >= (
        _COPY_SHARE
    )


def _restates(fact: list[str], turn: list[str]) -> bool:
    """Is ``fact`` the turn's words with nothing of the system's own? Nearly all its words are
    the turn's in order, and it does not name the user where the turn did not: "The user's
    friend Jonas is a pilot" and Mem0's "User's friend Jonas is a pilot" are both the turn
    rewritten in the third person (a fact); "Jonas is a pilot", cut from "My friend Jonas is
    a pilot", is a copy. The subject is judged by the word "user" alone, so no article or
    possessive form can tip a fact across the 85 % line."""
    if "user" in fact and "user" not in turn:
        return False
    return _in_order_share(fact, turn) >= _COPY_SHARE


def _turns(conv: dict[str, Any], user: bool) -> list[str]:
    return [
        m["content"]
        for session in conv["sessions"]
        for m in session["messages"]
        if (m["role"] == "user") == user
    ]


def judge(text: str, conv: dict[str, Any], user_id: str, strict: bool = False) -> str:
    """The category of one stored fact (see the module's docstring)."""
    words = tokens(text)
    prefix = _PREFIX.match(text)
    body = tokens(text[prefix.end() :]) if prefix else words
    said = [tokens(t) for t in _turns(conv, user=True)]
    others = [tokens(t) for t in _turns(conv, user=False)]
    if any(body == turn for turn in said):
        return "raw_turn"
    if any(_in_order_share(body, turn) >= _COPY_SHARE for turn in others) or any(
        _has(text, w) for w in conv.get("assistant_words", ())
    ):
        return "assistant_text"
    speaker = prefix is not None and prefix.group(1).casefold() in {user_id.casefold(), "user"}
    if speaker or _VOICE & set(words):
        return "copy_of_turn"
    restated = _restates_strictly if strict else _restates
    if len(words) >= 3 and any(restated(words, turn) for turn in said):
        return "copy_of_turn"
    if any(says(label, text, subject=False) for label in conv["forgotten"]):
        return "forgotten"
    if any(_stale(change, text) for change in conv["changes"]):
        return "stale"
    if _REPORT.match(text):
        return "wrong"  # what happened in the chat, not a fact about the person
    if any(says(label, text) for label in (*conv["facts"], *conv.get("also", ()))):
        return "supported"
    return "wrong"


def _stale(change: dict[str, Any], text: str) -> bool:
    """Does ``text`` still say what ``change`` replaced, and not the news? "The user and the
    user's girlfriend Noor got engaged" says the engagement: it is not the old fact left."""
    return says(change["old"], text, subject=False) and not says(change["new"], text)


def score_one(
    conv: dict[str, Any],
    facts: Sequence[str],
    episodes: Sequence[str],
    user: str,
    score: Score,
    strict: bool = False,
) -> dict[str, Any]:
    """Judge what is current after ``conv`` and add it to ``score``."""
    verdicts = [judge(f, conv, user, strict) for f in facts]
    supported = [f for f, v in zip(facts, verdicts, strict=True) if v == "supported"]
    score.conversations += 1
    score.episodes += len(episodes)
    score.categories.update(verdicts)
    score.to_keep += len(conv["facts"])
    score.kept += sum(any(says(label, f) for f in supported) for label in conv["facts"])
    changes = []
    for change in conv["changes"]:
        new_there = any(says(change["new"], f) for f in supported)
        old_gone = not any(_stale(change, f) for f in facts)
        changes.append(new_there and old_gone)
    forgets = [not any(says(lb, f, subject=False) for f in facts) for lb in conv["forgotten"]]
    score.changes += len(changes)
    score.changes_right += sum(changes)
    score.forgets += len(forgets)
    score.forgets_honoured += sum(forgets)
    score.forgotten_in_episodes += sum(
        any(says(lb, e, subject=False) for e in episodes) for lb in conv["forgotten"]
    )
    return {"verdicts": verdicts, "changes_right": changes, "forgets_honoured": forgets}


def is_episode(result: dict[str, Any]) -> bool:
    """What was said, kept as it was (a role, kind "episode" or memory_type "turn")."""
    return (
        "role" in result or result.get("kind") == "episode" or result.get("memory_type") == "turn"
    )


async def run_one(memory: Any, conv: dict[str, Any], user: str, score: Score) -> dict[str, Any]:
    started = time.monotonic()
    for session in conv["sessions"]:
        await memory.add(session["messages"], user_id=user, timestamp=session["date"], wait=True)
        score.turns += len(session["messages"])
    score.seconds += time.monotonic() - started
    results = (await memory.get_all(user_id=user))["results"]
    facts = [r["memory"] for r in results if not is_episode(r)]
    episodes = [r["memory"] for r in results if is_episode(r)]
    judged = score_one(conv, facts, episodes, user, score)
    return {"id": conv["id"], "user": user, "facts": facts, "episodes": episodes} | judged


def load(args: argparse.Namespace) -> list[dict[str, Any]]:
    conversations: list[dict[str, Any]] = json.loads(SETS[args.set].read_text())["conversations"]
    if args.only:
        conversations = [c for c in conversations if c["id"] in args.only.split(",")]
    return conversations


def run(args: argparse.Namespace) -> dict[str, Any]:
    """One run of ``args.system`` over the set, as the saved JSON's dict."""
    conversations = load(args)
    if args.system == "mem0":
        from bench import llm_quality_mem0

        ran = llm_quality_mem0.run(args, conversations)
    else:
        ran = asyncio.run(run_memhub(args, conversations))
    score: Score = ran["score"]
    return {
        "label": args.label or args.system,
        "system": args.system,
        "set": args.set,
        "machine": f"{platform.processor() or platform.machine()}, {args.machine}",
        "failed_llm_calls": ran.get("failed_llm_calls", 0),
        "result": score.row(),
        "totals": totals(score),
        "conversations": ran["details"],
    }


async def run_memhub(
    args: argparse.Namespace, conversations: list[dict[str, Any]]
) -> dict[str, Any]:
    from memhub import AsyncMemory, MemhubSettings

    score = Score()
    details = []
    with tempfile.TemporaryDirectory() as data_dir:
        settings = MemhubSettings(
            database_url="memory://",
            data_dir=Path(data_dir),
            llm_provider="llamacpp",
            llm_base_url=args.url,
            llm_model=args.model,
            llm_timeout=600.0,
            llm_context_tokens=args.context,
            consolidation_delay=0.0,
            wait_timeout=900.0,
            job_max_attempts=2,
            job_retry_base_seconds=0.1,
            llm_fill_gaps=args.fill_gaps,
        )
        async with AsyncMemory(settings=settings) as memory:
            for conv in conversations:
                details.append(await run_one(memory, conv, f"u-{conv['id']}", score))
                print(conv["id"], details[-1]["facts"], details[-1]["verdicts"], flush=True)
            services = await memory._services()
            usage = await services.store.usage_stats()
    score.calls = usage.get("llm_calls", 0.0)
    score.prompt_tokens = usage.get("prompt_tokens", 0.0)
    score.completion_tokens = usage.get("completion_tokens", 0.0)
    return {"score": score, "details": details}


def rescore(path: Path, strict: bool = False) -> dict[str, Any]:
    """Judge the memories a saved run left again (after a change to the labels or judge);
    ``strict``: a fact that is its turn with only the subject swapped is a copy."""
    saved = json.loads(path.read_text())
    by_id = {c["id"]: c for c in json.loads(SETS[saved["set"]].read_text())["conversations"]}
    counted = saved["totals"]  # what the run measured; the judging is done again
    score = Score(
        turns=counted["turns"],
        seconds=counted["seconds"],
        calls=counted["calls"],
        prompt_tokens=counted["prompt_tokens"],
        completion_tokens=counted["completion_tokens"],
    )
    for detail in saved["conversations"]:
        conv = by_id[detail["id"]]
        facts, episodes = detail["facts"], detail["episodes"]
        detail |= score_one(conv, facts, episodes, detail["user"], score, strict)
    return saved | {"result": score.row(), "totals": totals(score)}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--url", help="the server's /v1 URL")
    parser.add_argument("--set", choices=sorted(SETS), default="dev")
    parser.add_argument("--only", default="", help="comma-separated conversation ids")
    parser.add_argument("--system", choices=("memhub", "mem0"), default="memhub")
    parser.add_argument("--model", default="local", help="model name sent to the server")
    parser.add_argument("--temperature", type=float, default=0.0, help="Mem0's (memhub's is 0)")
    parser.add_argument("--label", default="", help="name in the table (default: --system)")
    parser.add_argument("--context", type=int, default=4096)
    parser.add_argument(
        "--fill-gaps",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="memhub's second question about uncovered statements (MEMHUB_LLM_FILL_GAPS)",
    )
    parser.add_argument(
        "--log",
        choices=("WARNING", "INFO"),
        default="WARNING",
        help="consolidation's log level: INFO says why each fact was refused or each change asked",
    )
    parser.add_argument("--machine", default="", help="CPU and load, for the table")
    parser.add_argument("--out", type=Path, help="write the JSON result here")
    parser.add_argument("--rescore", type=Path, help="judge a saved result again, no model")
    parser.add_argument(
        "--strict-copies",
        action="store_true",
        help="with --rescore: a fact that is its turn with only the subject swapped is a copy",
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(name)s %(levelname)s %(message)s")
    logging.getLogger("memhub.consolidation").setLevel(args.log)
    if not args.rescore and not args.url:
        parser.error("--url is required unless --rescore")
    result = rescore(args.rescore, args.strict_copies) if args.rescore else run(args)
    print(json.dumps(result["result"], indent=1))
    if args.out:
        args.out.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
