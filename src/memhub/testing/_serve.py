"""Run :class:`ScriptedOpenAIServer` from the command line: a stand-in LLM for a first try.

``python -m memhub.testing.openai_server --port 8911 --script replies.json`` (or
``memhub fake-llm ...``) answers ``/v1/chat/completions`` with the script's replies in order,
then echoes the last user message; ``/v1/embeddings`` with deterministic vectors.
"""

from __future__ import annotations

import argparse
import json
import signal
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from memhub.testing.openai_server import Reply, ScriptedOpenAIServer

__all__ = ["add_arguments", "echo", "load_script", "main", "serve"]

DEFAULT_PORT = 8911


class ScriptError(ValueError):
    """The script file is not what ``--script`` takes."""


def echo(request: dict[str, Any]) -> str:
    """The reply once the script is used up: says what it is and repeats the user."""
    said = [m.get("content") for m in request.get("messages", []) if m.get("role") == "user"]
    last = said[-1] if said and isinstance(said[-1], str) else ""
    return f"(memhub fake LLM, no model behind it) You said: {last}"


def _reply(item: object, where: str) -> Reply:
    if isinstance(item, str):
        return item
    if isinstance(item, Mapping) and ("content" in item or "tool_calls" in item):
        return dict(item)
    raise ScriptError(f"{where}: a reply is a string or an object with content / tool_calls")


def load_script(path: Path) -> tuple[list[Reply], Reply | None]:
    """Replies and the default reply from a JSON file.

    The file holds a list of replies, or ``{"replies": [...], "default": ...}``. A reply is
    the assistant's text, or a message object (``content``, ``tool_calls``).
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ScriptError(f"cannot read {path}: {exc}") from exc
    default: Reply | None = None
    if isinstance(data, Mapping):
        if "default" in data:
            default = _reply(data["default"], f"{path}: default")
        data = data.get("replies", [])
    if not isinstance(data, Sequence) or isinstance(data, str):
        raise ScriptError(f"{path}: expected a list of replies or {{'replies': [...]}}")
    return [_reply(item, f"{path}: reply {n}") for n, item in enumerate(data, 1)], default


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``python -m memhub.testing.openai_server`` and ``memhub fake-llm``."""
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help="port on 127.0.0.1")
    parser.add_argument("--script", type=Path, help="JSON file of replies (default: echo)")
    parser.add_argument("--model", default="scripted-model", help="model name it reports")


def serve(args: argparse.Namespace) -> int:
    """Serve until interrupted (Ctrl-C or SIGTERM); returns the exit status."""
    try:
        replies, default = load_script(args.script) if args.script else ([], None)
    except ScriptError as exc:
        print(f"error: {exc}")
        return 2
    server = ScriptedOpenAIServer(
        *replies, default=default or echo, model=args.model, port=args.port
    )
    try:
        server.start()
    except OSError as exc:
        print(f"error: cannot listen on 127.0.0.1:{args.port}: {exc}")
        return 1
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    print(
        f"memhub fake LLM (scripted, OpenAI-compatible) on {server.base_url}: "
        f"{len(replies)} scripted replies, then {'the default' if default else 'echo'}",
        flush=True,
    )
    try:
        done.wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m memhub.testing.openai_server``."""
    parser = argparse.ArgumentParser(
        prog="python -m memhub.testing.openai_server",
        description="A scripted OpenAI-compatible server: try memhub's agents without an LLM.",
    )
    add_arguments(parser)
    return serve(parser.parse_args(argv))
