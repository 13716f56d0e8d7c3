"""What ``/healthz`` remembers of the server's writes (memhub.server.health), request by
request through the middleware; tests/ops/test_storage_faults.py does it with a real fault."""

from __future__ import annotations

from starlette.types import Message, Receive, Scope, Send

from memhub.server.health import WRITE_FAILURE_SECONDS, WriteHealth, WriteWatch


def _answering(status: int, serving: bool = True) -> WriteWatch:
    health = WriteHealth()

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": status, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    return WriteWatch(app, health, lambda: serving)


async def _call(watch: WriteWatch, method: str, path: str) -> list[Message]:
    sent: list[Message] = []

    async def receive() -> Message:
        return {"type": "http.request", "body": b""}

    async def send(message: Message) -> None:
        sent.append(message)

    await watch({"type": "http", "method": method, "path": path}, receive, send)
    return sent


async def test_a_write_answered_503_degrades_until_a_write_succeeds() -> None:
    failing = _answering(503)
    sent = await _call(failing, "POST", "/v1/memories")
    assert [m["type"] for m in sent] == ["http.response.start", "http.response.body"]
    health = failing.health
    assert health.failed_at is not None and health.degraded(health.failed_at + 1)
    assert not health.degraded(health.failed_at + WRITE_FAILURE_SECONDS)

    working = WriteWatch(
        _answering(200).app, health, lambda: True
    )  # the same server, now writing again
    await _call(working, "GET", "/v1/memories")  # a read says nothing of writes
    assert health.degraded(health.failed_at + 1)
    await _call(working, "DELETE", "/v1/memories/x")
    assert health.failed_at is None and not health.degraded(0.0)


async def test_reads_searches_and_refusals_say_nothing_of_writes() -> None:
    for status, method, path in [
        (503, "GET", "/v1/memories"),
        (503, "POST", "/v1/memories/search"),
        (422, "POST", "/v1/memories"),
        (502, "POST", "/v1/memories"),
    ]:
        watch = _answering(status)
        await _call(watch, method, path)
        assert watch.health.failed_at is None, (status, method, path)


async def test_a_refusal_while_starting_is_no_failed_write() -> None:
    """The 503 of a server still building its model reached no database."""
    starting = _answering(503, serving=False)
    await _call(starting, "POST", "/v1/memories")
    assert starting.health.failed_at is None
