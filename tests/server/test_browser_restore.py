"""The web page's "Retired" and "Model changes" lists in headless Chromium against a live
uvicorn: beside the memories of the scope already chosen (no second user field), hidden
until connected, and the memory list refreshed in place after a restore or an undo; the
history and both lists say what happened in words."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx

from memhub import AsyncMemory, MemhubSettings
from tests.server.conftest import ADMIN_KEY, bearer
from tests.server.test_browser import (  # noqa: F401 (fixture)
    CHROMIUM,
    live_server,
    playwright_api,
    pytestmark,
)

expect = playwright_api.expect


@contextlib.asynccontextmanager
async def _page(base: str, width: int = 1280) -> AsyncIterator[Any]:
    """The page in headless Chromium, not connected yet."""
    async with playwright_api.async_playwright() as pw:
        browser = await pw.chromium.launch(
            executable_path=str(CHROMIUM), args=["--headless", "--no-sandbox", "--disable-gpu"]
        )
        try:
            page = await browser.new_page(viewport={"width": width, "height": 900})
            await page.goto(base)
            yield page
        finally:
            await browser.close()


async def _connect_and_pick(page: Any, key: str, scope: str) -> None:
    await page.get_by_label("API key").fill(key)
    await page.get_by_role("button", name="Connect").click()
    await page.locator("#scopes button.scope", has_text=scope).click()
    await expect(page.get_by_role("heading", name=f"Memories of {scope}")).to_be_visible()


def _seed(base: str) -> tuple[str, str]:
    """A tenant key; alice has two memories, the id of "I keep bees." is returned."""
    with httpx.Client(base_url=base, headers=bearer(ADMIN_KEY), timeout=60) as admin:
        key = str(admin.post("/v1/keys", json={"name": "web", "tenant": "acme"}).json()["key"])
    with httpx.Client(base_url=base, headers=bearer(key), timeout=60) as tenant:
        body = {
            "messages": ["I keep bees.", "I live in Oslo."],
            "user_id": "alice",
            "infer": False,
            "wait": True,
        }
        added = tenant.post("/v1/memories", json=body).json()["results"]
    return key, next(str(m["id"]) for m in added if m["memory"] == "I keep bees.")


async def test_retired_memories_sit_beside_the_chosen_users_and_a_restore_lists_it_again(
    live_server: str,  # noqa: F811
    settings: MemhubSettings,
) -> None:
    key, memory_id = await asyncio.to_thread(_seed, live_server)
    async with AsyncMemory(settings=settings) as memory:  # what an agent's forget does
        await memory.retire(memory_id, user_id="acme:alice", actor="agent:support", reason="asked")
    async with _page(live_server) as page:
        # Before connecting there is nothing to list, and no panel asks for a user.
        await expect(page.locator("#revisions")).to_be_hidden()
        await expect(page.get_by_role("heading", name="Retired memories")).to_have_count(0)
        await _connect_and_pick(page, key, "user alice")

        memories = page.locator("#memories li.memory")
        await expect(memories).to_have_count(1)
        retired = page.locator("#retired-list li")
        await expect(retired).to_have_count(1)
        await expect(retired.locator(".text")).to_have_text("I keep bees.")
        await expect(retired.locator(".meta")).to_contain_text(
            "retired by the assistant (support): asked"
        )
        await expect(page.locator("#retired-heading")).to_have_text("Retired memories (1)")
        await expect(page.locator("#revisions input")).to_have_count(0)  # the user is chosen
        changes = page.locator("#changes-list li")
        await expect(changes).to_have_count(1)
        # Beside the memories at 1280 px: its own column to their right, at their height.
        view = await page.locator("#scope-view").bounding_box()
        aside = await page.locator("#revisions").bounding_box()
        assert view is not None and aside is not None
        assert aside["x"] >= view["x"] + view["width"]
        assert abs(aside["y"] - view["y"]) < 5

        await page.evaluate("window.notReloaded = true")
        # From the keyboard: the focus goes to the list's heading as the row goes away.
        await retired.get_by_role("button", name="Restore “I keep bees.”").focus()
        await page.keyboard.press("Enter")
        await expect(page.locator("#retired-status")).to_have_text("Restored: I keep bees.")
        await expect(page.locator("#retired-heading")).to_be_focused()
        await expect(retired).to_have_count(0)
        await expect(memories).to_have_count(2)  # the list beside, refreshed in place
        await expect(page.locator("#memories")).to_contain_text("I keep bees.")
        await expect(changes).to_contain_text("undone")
        await expect(page.locator("#scopes")).to_contain_text("user alice2 memories")
        assert await page.evaluate("window.notReloaded === true")

        bees = memories.filter(has_text="I keep bees.")
        await bees.get_by_role("button", name="History").click()
        events = page.get_by_role("dialog").locator("li strong")
        await expect(events).to_have_text(
            [
                "added by you",
                "retired by the assistant (support): asked",
                "restored by you",
            ]
        )
    async with httpx.AsyncClient(base_url=live_server, headers=bearer(key), timeout=60) as tenant:
        found = await tenant.get(f"/v1/memories/{memory_id}")
        assert found.status_code == 200 and found.json()["memory"] == "I keep bees."


async def test_a_model_change_is_undone_beside_the_memories(
    live_server: str,  # noqa: F811
    settings: MemhubSettings,
) -> None:
    key, memory_id = await asyncio.to_thread(_seed, live_server)
    async with AsyncMemory(settings=settings) as memory:  # what MCP's delete_memory does
        await memory.retire(memory_id, user_id="acme:alice", actor="mcp", reason="forget bees")
    async with _page(live_server) as page:
        await _connect_and_pick(page, key, "user alice")
        row = page.locator("#changes-list li")
        await expect(row).to_have_count(1)
        await expect(row.locator(".meta").first).to_contain_text(
            "retired by an assistant over MCP: forget bees"
        )
        await expect(row.locator(".text").first).to_have_text("before: I keep bees.")
        await expect(page.locator("#memories li.memory")).to_have_count(1)
        await row.get_by_role("button", name="Undo").click()
        await expect(page.locator("#changes-status")).to_have_text("Undone: I keep bees.")
        await expect(row.get_by_role("button", name="Undo")).to_have_count(0)
        await expect(row).to_contain_text("undone")
        await expect(page.locator("#memories li.memory")).to_have_count(2)
        await expect(page.locator("#retired-list li")).to_have_count(0)

        # Every event a memory's history holds, in words (words.js, as the page imports it).
        said = await page.evaluate(
            """async () => {
              const { historyHeadline } = await import("/static/words.js");
              const lines = [
                { event: "ADD", actor: "add" },
                { event: "UPDATE", actor: "user" },
                { event: "UPDATE", actor: "consolidation" },
                { event: "SUPERSEDE", actor: "consolidation", new_memory: "I live in Lyon." },
                { event: "RETIRE", actor: "agent:", metadata: { reason: "asked" } },
                { event: "RESTORE", actor: "user", metadata: { undoes: 7 } },
                { event: "DELETE", actor: "expiry" },
                { event: "PURGE", actor: "retention" },
                { event: "ADD", actor: "import" },
                { event: "ADD", actor: null },
              ];
              return lines.map(historyHeadline);
            }"""
        )
        assert said == [
            "added by you",
            "updated by you",
            "updated by the model",
            "superseded by the model: replaced by “I live in Lyon.”",
            "retired by the assistant: asked",
            "restored by you, undoing a model's change",
            "deleted: its expiration date passed",
            "erased: retired longer than the retention period",
            "added by an import",
            "added by someone unknown",
        ]
    async with httpx.AsyncClient(base_url=live_server, headers=bearer(key), timeout=60) as tenant:
        found = await tenant.get(f"/v1/memories/{memory_id}")
        assert found.status_code == 200 and found.json()["memory"] == "I keep bees."
