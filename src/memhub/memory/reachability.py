"""Says once, when services open, which configured model server nothing answers at.

An unreachable vLLM or embedding server does not fail the call that opened memhub (the
jobs that need it retry, then park), so without this line nothing would say so until work
piles up. The check is a TCP connect in the background, bounded by a short timeout: it never
delays a call, and each URL is checked once per process.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import threading
from dataclasses import dataclass
from urllib.parse import urlsplit

from memhub.config import MemhubSettings
from memhub.embed import Embedder
from memhub.llm import LLM

__all__ = ["PROBE_TIMEOUT", "Endpoint", "endpoints", "start_probe", "warn_unreachable"]

log = logging.getLogger("memhub")

#: Seconds one connect may take: a server on the same network answers in milliseconds.
PROBE_TIMEOUT = 2.0

# URLs this process has checked (or is checking): a second Memory, or a second event loop,
# on the same server logs nothing more.
_checked: set[str] = set()


@dataclass(frozen=True)
class Endpoint:
    """A model server the settings point at, and the setting that points there."""

    what: str  # "LLM" or "embedder"
    url: str
    setting: str  # the MemhubSettings field and its environment variable
    consequence: str  # what fails while it cannot be reached


def endpoints(settings: MemhubSettings, llm: LLM | None, embedder: Embedder) -> list[Endpoint]:
    """The HTTP servers ``llm`` and ``embedder`` talk to (in-process models have none)."""
    found = [
        _endpoint(
            llm,
            "LLM",
            "llm_base_url (MEMHUB_LLM_BASE_URL)",
            "consolidation jobs retry, then park, until it answers",
        ),
        _endpoint(
            embedder,
            "embedder",
            "embedder_base_url (MEMHUB_EMBEDDER_BASE_URL)",
            "embedding (the worker's, and a search's query) fails until it answers",
        ),
    ]
    return [one for one in found if one is not None]


def _endpoint(model: object, what: str, setting: str, consequence: str) -> Endpoint | None:
    """``model``'s server, if it talks to one (a non-empty string ``base_url``)."""
    url = getattr(model, "base_url", None)
    if isinstance(url, str) and url:
        return Endpoint(what, url, setting, consequence)
    return None


async def can_connect(url: str, within: float = PROBE_TIMEOUT) -> bool:
    """Whether a TCP connection to ``url``'s host and port opens within ``within`` s."""
    parts = urlsplit(url)
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
        async with asyncio.timeout(within):
            # each address in turn, as a client would: localhost may be ::1 then 127.0.0.1
            for address in await _addresses(parts.hostname or "", port):
                with contextlib.suppress(OSError):
                    _, writer = await asyncio.open_connection(address, port)
                    writer.close()
                    with contextlib.suppress(OSError):
                        await writer.wait_closed()
                    return True
    except (OSError, TimeoutError, ValueError):
        pass
    return False


async def _addresses(host: str, port: int) -> list[str]:
    """``host``'s addresses, looked up on a daemon thread of its own: a lookup that hangs
    (a slow resolver) must not hold the loop's executor, which ``asyncio.run`` waits for at
    exit, nor anything else past the check's timeout."""
    loop = asyncio.get_running_loop()
    found: asyncio.Future[list[str]] = loop.create_future()

    def settle(addresses: list[str], error: OSError | None) -> None:
        if found.done():  # the check timed out meanwhile
            return
        if error is not None:
            found.set_exception(error)
        else:
            found.set_result(addresses)

    def look_up() -> None:
        addresses: list[str] = []
        error: OSError | None = None
        try:
            for *_, sockaddr in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM):
                if str(sockaddr[0]) not in addresses:
                    addresses.append(str(sockaddr[0]))
        except OSError as exc:
            error = exc
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
            loop.call_soon_threadsafe(settle, addresses, error)

    threading.Thread(target=look_up, name="memhub-reachability", daemon=True).start()
    return await found


async def warn_unreachable(found: list[Endpoint], within: float = PROBE_TIMEOUT) -> list[Endpoint]:
    """Log one WARNING for each endpoint not checked before that cannot be reached.

    Returns the endpoints warned about (none for URLs this process already checked).
    """
    fresh = [one for one in found if one.url not in _checked]
    _checked.update(one.url for one in fresh)
    answered = await asyncio.gather(*(can_connect(one.url, within) for one in fresh))
    unreachable = [one for one, ok in zip(fresh, answered, strict=True) if not ok]
    for one in unreachable:
        log.warning(
            "memhub: the %s at %s cannot be reached (refused, or no connection within %.0f s;"
            " set by %s): %s",
            one.what,
            one.url,
            within,
            one.setting,
            one.consequence,
        )
    return unreachable


def start_probe(found: list[Endpoint]) -> asyncio.Task[list[Endpoint]] | None:
    """Check ``found`` in the background of the running loop; None if there is nothing new."""
    if not any(one.url not in _checked for one in found):
        return None
    return asyncio.get_running_loop().create_task(
        warn_unreachable(found), name="memhub-reachability"
    )
