"""The web page in headless Chromium against a live uvicorn: key, users, search, edit, delete."""

from __future__ import annotations

import asyncio
import os
import re
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
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
    """A tenant key whose user alice has three memories and bob one."""
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
            "bob": ["Bob plays the cello."],
        }.items():
            response = tenant.post(
                "/v1/memories",
                json={"messages": texts, "user_id": user, "infer": False, "wait": True},
            )
            assert response.status_code == 200, response.text
    return key


async def test_browse_search_edit_delete_and_history(live_server: str) -> None:
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
            page = await browser.new_page(viewport={"width": 1100, "height": 800})
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

            await page.get_by_label("API key").fill(key)
            await page.get_by_role("button", name="Connect").click()
            await expect(page.locator("#whoami")).to_have_text(
                "Connected as “acme web” (tenant acme)."
            )
            await expect(page.get_by_role("alert")).to_be_hidden()

            users = page.locator("#users button.user")
            await expect(users).to_have_count(2)
            await page.get_by_role("button", name=re.compile(r"^alice")).click()
            await expect(page.get_by_role("heading", name="Memories of alice")).to_be_visible()
            memories = page.locator("#memories li.memory")
            await expect(memories).to_have_count(3)

            await page.get_by_label("Search memories").fill("Where does my sister live?")
            await page.get_by_role("button", name="Search", exact=True).click()
            first = memories.first
            await expect(first.locator(".text")).to_have_text("My sister Anna lives in Vienna.")
            await expect(first.locator(".meta")).to_contain_text("score 0.")

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
            await expect(events.nth(1)).to_contain_text("UPDATE by user")
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
            assert [e for e in console_errors if "401" not in e] == []
        finally:
            await browser.close()

    async with httpx.AsyncClient(base_url=live_server, headers=bearer(key)) as tenant:
        listed = await tenant.get("/v1/memories", params={"user_id": "alice"})
    stored = listed.json()["results"]
    assert sorted(m["memory"] for m in stored) == [
        "I love hiking in the Alps every summer.",
        "My sister Anna lives in Graz.",
    ]
