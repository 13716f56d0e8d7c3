"""The web page in headless Chromium against a live uvicorn: key, scopes of every kind (user,
agent, run, combinations), the ranked search list, add, edit, delete, pages of memories,
metadata, and /docs served without any CDN; screenshots at desktop (1280 px) and phone (390
px) widths go to MEMHUB_SCREENSHOT_DIR."""

from __future__ import annotations

import asyncio
import os
import re
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import psycopg
import pytest
from pydantic import SecretStr

from memhub import MemhubSettings
from memhub.server import ServerSettings, create_app
from tests.server.conftest import ADMIN_KEY, bearer

CHROMIUM = Path("/usr/bin/chromium")
SCREENSHOT_DIR = Path(os.environ.get("MEMHUB_SCREENSHOT_DIR", "/tmp"))

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(), reason=f"{CHROMIUM} is missing (apt-get install -y chromium)"
)
playwright_api = pytest.importorskip(
    "playwright.async_api", reason="playwright is not installed (pip install playwright)"
)
expect = playwright_api.expect


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def live_server(settings: MemhubSettings) -> Iterator[str]:
    """uvicorn serving the app on 127.0.0.1 in a thread (its own event loop)."""
    import uvicorn

    port = free_port()
    app = create_app(settings, server=ServerSettings(admin_key=SecretStr(ADMIN_KEY)))
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, name="memhub-uvicorn", daemon=True)
    thread.start()
    for _ in range(300):
        if server.started:
            break
        if not thread.is_alive():
            pytest.fail("uvicorn did not start")
        threading.Event().wait(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)


def seed(base: str) -> str:
    """A tenant key: user alice with three memories, bob with 60, agent support-bot with two
    of its own (no user: LangGraph's default, Mem0's agent memories), and ada's run r1."""
    with httpx.Client(base_url=base, headers=bearer(ADMIN_KEY), timeout=60) as admin:
        created = admin.post("/v1/keys", json={"name": "acme web", "tenant": "acme"})
        key = str(created.json()["key"])
    with httpx.Client(base_url=base, headers=bearer(key), timeout=60) as tenant:
        for user, texts in {
            "alice": [
                "I love hiking in the Alps every summer.",
                "My sister Anna lives in Vienna.",
                "I am allergic to peanuts.",
            ],
            "bob": ["Bob plays the cello.", *(f"Bob's note number {n}." for n in range(59))],
        }.items():
            response = tenant.post(
                "/v1/memories",
                json={
                    "messages": texts,
                    "user_id": user,
                    "infer": False,
                    "wait": True,
                    "metadata": {"source": "chat"},
                },
            )
            assert response.status_code == 200, response.text
        for scope, texts in (
            ({"agent_id": "support-bot"}, ["Escalate refunds over 100 EUR.", "Greet in German."]),
            ({"user_id": "ada", "run_id": "r1"}, ["Ada asked about the train to Porto."]),
        ):
            body = {"messages": texts, **scope, "infer": False, "wait": True}
            response = tenant.post("/v1/memories", json=body)
            assert response.status_code == 200, response.text
    return key


def supersede(database_url: str, key: str, base: str) -> None:
    """Alice moves: "Paris" is superseded by "Lyon", as consolidation would record it."""
    with httpx.Client(base_url=base, headers=bearer(key), timeout=60) as tenant:
        for text in ("I live in Paris.", "I live in Lyon."):
            body = {"messages": text, "user_id": "alice", "infer": False, "wait": True}
            assert tenant.post("/v1/memories", json=body).status_code == 200
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(
            "UPDATE memories SET valid_to = now(),"
            " superseded_by = (SELECT id FROM memories WHERE memory = 'I live in Lyon.')"
            " WHERE memory = 'I live in Paris.'"
        )


def park_job(database_url: str) -> None:
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO memory_jobs (kind, user_id, payload, status, attempts, last_error)"
            " VALUES ('ingest', 'acme:zed', '{\"turn_ids\": []}', 'parked', 5,"
            " 'ProviderHTTPError: the LLM said 500')"
        )
        conn.execute(
            "INSERT INTO memory_llm_usage (model, calls, prompt_tokens, completion_tokens,"
            " turns, jobs) VALUES ('m', 3, 1200, 300, 6, 2)"
        )


async def test_browse_search_edit_delete_and_history(
    live_server: str, settings: MemhubSettings
) -> None:
    key = await asyncio.to_thread(seed, live_server)
    async with playwright_api.async_playwright() as pw:
        browser = await pw.chromium.launch(
            executable_path=str(CHROMIUM),
            args=[
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
            ],
        )
        try:
            page = await browser.new_page(viewport={"width": 1280, "height": 800})
            console_errors: list[str] = []
            page.on(
                "console", lambda m: console_errors.append(m.text) if m.type == "error" else None
            )
            await page.goto(live_server)

            # A wrong key shows a clear error and keeps the workspace hidden.
            await page.get_by_label("API key").fill("mhk_wrong")
            await page.get_by_role("button", name="Connect").click()
            await expect(page.get_by_role("alert")).to_have_text("401: invalid or revoked API key")
            await expect(page.locator("#workspace")).to_be_hidden()
            await expect(page.get_by_label("API key")).to_have_value("mhk_wrong")  # kept
            await expect(page.locator("#key-help")).to_contain_text("POST /v1/keys")

            await page.get_by_label("API key").fill(key)
            await page.get_by_role("button", name="Connect").click()
            await expect(page.locator("#whoami")).to_have_text(
                "Connected as “acme web” (tenant acme)."
            )
            await expect(page.get_by_role("alert")).to_be_hidden()

            scopes = page.locator("#scopes button.scope")
            await expect(scopes).to_have_count(4)
            await expect(scopes).to_have_text(
                [
                    re.compile(r"^user ada · run r11 memory$"),
                    re.compile(r"^user alice3 memories$"),
                    re.compile(r"^user bob60 memories$"),
                    re.compile(r"^agent support-bot2 memories$"),  # not a nameless user
                ]
            )
            users = page.locator("#scopes button.scope", has_text="user alice")
            await page.get_by_role("button", name=re.compile(r"^user alice")).click()
            await expect(page.get_by_role("heading", name="Memories of user alice")).to_be_visible()
            memories = page.locator("#memories li.memory")
            await expect(memories).to_have_count(3)
            await expect(memories.first.locator(".metadata")).to_have_text("source: chat")

            # The ranked list as ranked: every result, numbered, best first; nothing folded.
            await page.get_by_label("Search memories").fill("Where does my sister live?")
            await page.get_by_role("button", name="Search", exact=True).click()
            first = memories.first
            await expect(first.locator(".text")).to_have_text("My sister Anna lives in Vienna.")
            # a fused score in [0, 1], three decimals (the best is 1.000 when the neighbour
            # signals' sums were scaled back into [0, 1]: docs/retrieval.md)
            await expect(first.locator(".meta")).to_contain_text(re.compile(r"#1score [01]\.\d{3}"))
            # what was said, by whom (an episode); an extracted fact says "fact"
            await expect(first.locator(".meta")).to_contain_text("said by user")
            await expect(memories).to_have_count(3)
            await expect(memories.nth(2).locator(".rank")).to_have_text("#3")
            await expect(page.locator("#memories-status")).to_have_text(
                "3 matches for “Where does my sister live?”, best first."
            )
            scores = [
                float(re.search(r"score (\d\.\d+)", t).group(1))  # type: ignore[union-attr]
                for t in await memories.locator(".meta").all_text_contents()
            ]
            assert scores == sorted(scores, reverse=True)

            await first.get_by_role("button", name="Edit").click()
            await first.get_by_label("Corrected text").fill("My sister Anna lives in Graz.")
            await first.get_by_role("button", name="Save").click()
            await expect(page.locator("#memories .text").first).to_have_text(
                "My sister Anna lives in Graz."
            )

            await memories.first.get_by_role("button", name="History").click()
            dialog = page.get_by_role("dialog")
            await expect(dialog).to_be_visible()
            events = dialog.locator("li")
            await expect(events).to_have_count(2)
            await expect(events.nth(0)).to_contain_text("added by you")
            await expect(events.nth(1)).to_contain_text("updated by you")
            await expect(events.nth(1)).to_contain_text(
                "My sister Anna lives in Vienna. → My sister Anna lives in Graz."
            )
            await page.screenshot(path=str(SCREENSHOT_DIR / "memhub-history.png"))
            await dialog.get_by_role("button", name="Close").click()
            await expect(dialog).to_be_hidden()

            await page.get_by_role("button", name="Show all").click()
            await expect(memories).to_have_count(3)
            peanuts = memories.filter(has_text="peanuts")
            page.once("dialog", lambda d: asyncio.ensure_future(d.accept()))
            await peanuts.get_by_role("button", name="Delete").click()
            await expect(memories).to_have_count(2)
            await expect(page.locator("#memories")).not_to_contain_text("peanuts")
            await expect(page.locator("#memories-status")).to_have_text("2 memories in total.")
            await expect(users.first).to_contain_text("2 memories")
            await page.screenshot(path=str(SCREENSHOT_DIR / "memhub-page.png"), full_page=True)

            # An agent's own scope: browsed, searched, added to, corrected and deleted.
            await page.get_by_role("button", name=re.compile(r"^agent support-bot")).click()
            heading = page.get_by_role("heading", name="Memories of agent support-bot")
            await expect(heading).to_be_visible()
            await expect(memories).to_have_count(2)
            await page.get_by_label("Add a memory").fill("Refunds go to the finance team.")
            await page.get_by_role("button", name="Add", exact=True).click()
            await expect(memories).to_have_count(3)
            await expect(page.locator("#scopes")).to_contain_text("support-bot3 memories")
            await page.get_by_label("Search memories").fill("who handles refunds?")
            await page.get_by_role("button", name="Search", exact=True).click()
            # the ranked list is in (the three listed before it would pass a count at once)
            await expect(page.locator("#memories-status")).to_have_text(
                "3 matches for “who handles refunds?”, best first."
            )
            await expect(memories.first.locator(".text")).to_contain_text("Refunds")
            greet = memories.filter(has_text="Greet in German.")
            await greet.get_by_role("button", name="Edit").click()
            await greet.get_by_label("Corrected text").fill("Greet in English.")
            await greet.get_by_role("button", name="Save").click()
            await expect(page.locator("#memories")).to_contain_text("Greet in English.")
            page.once("dialog", lambda d: asyncio.ensure_future(d.accept()))
            await (
                memories.filter(has_text="Greet in English.")
                .get_by_role("button", name="Delete")
                .click()
            )
            await expect(memories).to_have_count(2)
            # A run scope, and "Open a scope" by kind and id; "Delete all" empties it.
            await page.get_by_role("button", name=re.compile(r"^user ada · run r1")).click()
            await expect(memories).to_have_count(1)
            await page.get_by_label("Scope kind").select_option("run")
            await page.get_by_label("Scope id").fill("r1")
            await page.get_by_role("button", name="Open", exact=True).click()
            await expect(page.get_by_role("heading", name="Memories of run r1")).to_be_visible()
            await expect(memories).to_have_text([re.compile("train to Porto")])
            page.once("dialog", lambda d: asyncio.ensure_future(d.accept()))
            await page.get_by_role("button", name="Delete all").click()
            await expect(memories).to_have_count(0)
            await expect(scopes).to_have_count(3)
            await page.screenshot(path=str(SCREENSHOT_DIR / "memhub-agent.png"), full_page=True)

            # Pages: bob has 60 memories; the first 50, then the rest with "Load more".
            await page.get_by_role("button", name=re.compile(r"^user bob")).click()
            await expect(memories).to_have_count(50)
            await expect(page.locator("#memories-status")).to_have_text(
                "50 memories shown; more follow."
            )
            await page.get_by_role("button", name="Load more").click()
            await expect(memories).to_have_count(60)
            await expect(page.locator("#memories-status")).to_have_text("60 memories in total.")
            await expect(page.get_by_role("button", name="Load more")).to_be_hidden()
            assert len(set(await memories.locator(".text").all_text_contents())) == 60

            # Timeline: every fact over its validity; the superseded one closed, naming Lyon.
            assert settings.database_url is not None
            await asyncio.to_thread(supersede, settings.database_url, key, live_server)
            await page.get_by_role("button", name=re.compile(r"^user alice")).click()
            await page.get_by_role("button", name="Timeline").click()
            rows = page.locator("#timeline-rows li.fact")
            await expect(rows).to_have_count(4)
            closed = page.locator("#timeline-rows li.fact.closed")
            await expect(closed).to_have_count(1)
            await expect(closed.locator(".label")).to_have_text("I live in Paris.")
            await expect(closed.locator(".when")).to_contain_text("→ “I live in Lyon.”")
            await page.screenshot(path=str(SCREENSHOT_DIR / "memhub-timeline.png"), full_page=True)

            phone = await browser.new_page(viewport={"width": 390, "height": 844})
            await phone.goto(live_server)
            await phone.get_by_label("API key").fill(key)
            await phone.get_by_role("button", name="Connect").click()
            await phone.get_by_role("button", name=re.compile(r"^agent support-bot")).click()
            await expect(phone.locator("#memories li.memory")).to_have_count(2)
            await phone.get_by_label("Search memories").fill("refunds")
            await phone.get_by_role("button", name="Search", exact=True).click()
            await expect(phone.locator("#memories .rank").first).to_have_text("#1")
            overflow = "document.documentElement.scrollWidth > window.innerWidth"
            assert not await phone.evaluate(overflow)
            await phone.screenshot(path=str(SCREENSHOT_DIR / "memhub-phone-agent.png"))
            await phone.get_by_role("button", name=re.compile(r"^user alice")).click()
            await expect(phone.locator("#memories li.memory")).to_have_count(3)
            await phone.get_by_role("button", name="Timeline").click()
            await expect(phone.locator("#timeline-rows li.fact")).to_have_count(4)
            assert not await phone.evaluate(overflow)
            await phone.screenshot(path=str(SCREENSHOT_DIR / "memhub-phone.png"), full_page=True)

            # Operations panel (admin key): queue per lane and per kind, LLM use per day, a
            # parked job with its error, retried with one click; desktop and phone widths.
            assert settings.database_url is not None
            await asyncio.to_thread(park_job, settings.database_url)
            ops = await browser.new_page(viewport={"width": 1280, "height": 900})
            await ops.goto(live_server)
            await ops.get_by_label("API key").fill(ADMIN_KEY)
            await ops.get_by_role("button", name="Connect").click()
            panel = ops.locator("#operations")
            await expect(panel).to_be_visible()
            lanes = ops.locator("#queue-lanes tr")
            await expect(lanes).to_have_count(2)  # the worker's two lanes, even when idle
            await expect(lanes.nth(0)).to_contain_text("ingest (embedding)")
            await expect(lanes.nth(1)).to_contain_text("consolidate (LLM)")
            await expect(ops.locator("#queue-kinds")).to_contain_text("ingest")
            await expect(ops.locator("#llm-days tr")).to_have_count(1)
            parked = ops.locator("#parked li")
            await expect(parked).to_have_count(1)
            await expect(parked).to_contain_text("the LLM said 500")
            await ops.screenshot(path=str(SCREENSHOT_DIR / "memhub-operations.png"), full_page=True)
            await ops.set_viewport_size({"width": 390, "height": 844})
            assert not await ops.evaluate(overflow)
            await ops.screenshot(
                path=str(SCREENSHOT_DIR / "memhub-operations-phone.png"), full_page=True
            )
            await ops.set_viewport_size({"width": 1280, "height": 900})
            await parked.get_by_role("button", name="Retry").click()
            await expect(parked).to_have_count(0)
            await expect(ops.locator("#no-parked")).to_be_visible()
            await expect(page.locator("#operations")).to_be_hidden()  # the tenant sees none

            # /docs: Swagger UI from the installed package, no request leaves the server.
            foreign: list[str] = []
            docs = await browser.new_page(viewport={"width": 1100, "height": 800})
            docs.on(
                "request",
                lambda r: None if r.url.startswith(live_server) else foreign.append(r.url),
            )
            await docs.goto(f"{live_server}/docs")
            await expect(docs.locator(".swagger-ui .info .title")).to_contain_text("memhub")
            await docs.screenshot(path=str(SCREENSHOT_DIR / "memhub-docs.png"))
            assert foreign == []
            assert [e for e in console_errors if "401" not in e] == []
        finally:
            await browser.close()

    async with httpx.AsyncClient(base_url=live_server, headers=bearer(key)) as tenant:
        listed = await tenant.get("/v1/memories", params={"user_id": "alice"})
    stored = listed.json()["results"]
    assert sorted(m["memory"] for m in stored) == [
        "I live in Lyon.",
        "I love hiking in the Alps every summer.",
        "My sister Anna lives in Graz.",
    ]
