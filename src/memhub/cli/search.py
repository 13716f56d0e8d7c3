"""``memhub search``: asks a running ``memhub serve`` over HTTP, else searches in-process.

Over HTTP a search costs the process start and one request; in-process it also loads the
embedding model, which takes seconds, so the command says so on stderr. Nothing heavy is
imported on the HTTP path (the standard library's HTTP client is enough for one request).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.error
import urllib.request
from typing import Any

from memhub.cli.output import print_items

__all__ = ["DEFAULT_PORT", "run_search", "server_for"]

DEFAULT_PORT = 8765  # memhub serve's default (MEMHUB_PORT)
_PROBE_SECONDS = 0.3  # a local server answers /healthz in milliseconds


def server_for(args: argparse.Namespace) -> tuple[str | None, str | None, str]:
    """The server URL to ask (None: none), the API key, and why (for the stderr note).

    ``--server`` / ``MEMHUB_SERVER_URL`` name one; with only a key given
    (``--api-key`` / ``MEMHUB_API_KEY``), a server on this machine's default port is tried.
    """
    key = args.api_key or os.environ.get("MEMHUB_API_KEY") or None
    url = args.server or os.environ.get("MEMHUB_SERVER_URL") or None
    if url:
        return url.rstrip("/"), key, ""
    if key is None:
        return None, None, "no server given (--server or MEMHUB_SERVER_URL, with an API key)"
    port = os.environ.get("MEMHUB_PORT") or str(DEFAULT_PORT)
    local = f"http://127.0.0.1:{port}"
    try:
        with urllib.request.urlopen(f"{local}/healthz", timeout=_PROBE_SECONDS):
            return local, key, ""
    except (OSError, urllib.error.URLError):
        return None, None, f"no server answers on {local}"


def run_search(args: argparse.Namespace, settings_factory: Any) -> int:
    """``memhub search``: over HTTP when a server is known, else in-process (slower).

    ``settings_factory`` builds the settings, only for the in-process path.
    """
    url, key, why = server_for(args)
    if url is not None:
        return print_items(_over_http(url, key, args), _empty(args))
    print(
        f"memhub search: {why}; searching in this process, which first loads the embedding"
        " model (a few seconds; `memhub serve` keeps it loaded)",
        file=sys.stderr,
    )
    return _in_process(args, settings_factory())


def _empty(args: argparse.Namespace) -> str:
    return f"no memories of user {args.user_id} match {args.query!r}"


def _over_http(url: str, key: str | None, args: argparse.Namespace) -> list[dict[str, Any]]:
    body: dict[str, Any] = {"query": args.query, "user_id": args.user_id, "limit": args.limit}
    if args.as_of:
        body["as_of"] = args.as_of
    if args.max_tokens is not None:
        body["max_tokens"] = args.max_tokens
    if args.excerpt_tokens is not None:
        body["excerpt_tokens"] = args.excerpt_tokens
    if args.min_score_ratio is not None:
        body["min_score_ratio"] = args.min_score_ratio
    if args.rerank is not None:
        body["rerank"] = args.rerank
    request = urllib.request.Request(
        f"{url}/v1/memories/search",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"}
        | ({"Authorization": f"Bearer {key}"} if key else {}),
        method="POST",
    )
    from memhub.errors import StoreUnavailable, UsageError

    try:
        with urllib.request.urlopen(request, timeout=args.timeout) as response:
            found: dict[str, Any] = json.load(response)
    except urllib.error.HTTPError as exc:
        detail = exc.read().decode("utf-8", "replace")[:500]
        error = UsageError if 400 <= exc.code < 500 else StoreUnavailable
        raise error(f"{url} answered {exc.code}: {detail}") from exc
    except (OSError, urllib.error.URLError) as exc:
        raise StoreUnavailable(f"cannot reach {url}: {exc}") from exc
    results: list[dict[str, Any]] = found.get("results", [])
    return results


def _in_process(args: argparse.Namespace, settings: Any) -> int:
    import asyncio

    from memhub.memory import AsyncMemory

    async def search() -> list[Any]:
        quiet = settings.model_copy(update={"worker": "off"})
        async with AsyncMemory(settings=quiet) as memory:
            found = await memory.search(
                args.query,
                user_id=args.user_id,
                limit=args.limit,
                as_of=args.as_of,
                max_tokens=args.max_tokens,
                excerpt_tokens=args.excerpt_tokens,
                rerank=args.rerank,
                min_score_ratio=args.min_score_ratio,
            )
        return list(found["results"])

    return print_items(asyncio.run(search()), _empty(args))
