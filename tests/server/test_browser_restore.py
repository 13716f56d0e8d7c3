"""The web page's "Retired memories" panel in headless Chromium against a live uvicorn."""

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
async def _connected(base: str, key: str) -> AsyncIterator[Any]:
    """The page in headless Chromium, connected with ``key``."""
    async with playwright_api.async_playwright() as pw:
        browser = await pw.chromium.launch(
            executable_path=str(CHROMIUM), args=["--headless", "--no-sandbox", "--disable-gpu"]
        )
        try:
            page = await browser.new_page()
            await page.goto(base)
            await page.get_by_label("API key").fill(key)
            await page.get_by_role("button", name="Connect").click()
            yield page
        finally:
            await browser.close()


def _seed(base: str) -> tuple[str, str]:
    with httpx.Client(base_url=base, headers=bearer(ADMIN_KEY), timeout=60) as admin:
        key = str(admin.post("/v1/keys", json={"name": "web", "tenant": "acme"}).json()["key"])
    with httpx.Client(base_url=base, headers=bearer(key), timeout=60) as tenant:
        body = {"messages": "I keep bees.", "user_id": "alice", "infer": False, "wait": True}
        memory_id = str(tenant.post("/v1/memories", json=body).json()["results"][0]["id"])
    return key, memory_id


async def test_the_page_lists_retired_memories_and_restores_one(
    live_server: str,  # noqa: F811
    settings: MemhubSettings,
) -> None:
    key, memory_id = await asyncio.to_thread(_seed, live_server)
    async with AsyncMemory(settings=settings) as memory:  # what an agent's forget does
        await memory.retire(memory_id, user_id="acme:alice", actor="agent:support", reason="asked")
    async with _connected(live_server, key) as page:
        await page.get_by_text("Retired memories (restore what a model removed)").click()
        await page.get_by_label("User", exact=True).fill("alice")
        await page.get_by_role("button", name="Show retired").click()
        row = page.locator("#retired-list li")
        await expect(row).to_have_count(1)
        await expect(row.locator(".text")).to_have_text("I keep bees.")
        await expect(row.locator(".meta")).to_contain_text("by agent:support — asked")
        await row.get_by_role("button", name="Restore").click()
        await expect(page.locator("#retired-status")).to_have_text("Restored: I keep bees.")
        await expect(row).to_have_count(0)
    async with httpx.AsyncClient(base_url=live_server, headers=bearer(key), timeout=60) as tenant:
        found = await tenant.get(f"/v1/memories/{memory_id}")
        assert found.status_code == 200 and found.json()["memory"] == "I keep bees."


async def test_the_page_lists_model_changes_and_undoes_one(
    live_server: str,  # noqa: F811
    settings: MemhubSettings,
) -> None:
    key, memory_id = await asyncio.to_thread(_seed, live_server)
    async with AsyncMemory(settings=settings) as memory:  # what MCP's delete_memory does
        await memory.retire(memory_id, user_id="acme:alice", actor="mcp", reason="forget bees")
    async with _connected(live_server, key) as page:
        await page.get_by_text("Model changes (undo what a model changed)").click()
        await page.get_by_label("User id", exact=True).fill("alice")
        await page.get_by_role("button", name="Show changes").click()
        row = page.locator("#changes-list li")
        await expect(row).to_have_count(1)
        await expect(row.locator(".meta").first).to_contain_text("RETIRE")
        await expect(row.locator(".meta").first).to_contain_text("by mcp — forget bees")
        await expect(row.locator(".text").first).to_have_text("before: I keep bees.")
        await row.get_by_role("button", name="Undo").click()
        await expect(page.locator("#changes-status")).to_have_text("Undone: I keep bees.")
        await expect(row.get_by_role("button", name="Undo")).to_have_count(0)
        await expect(row).to_contain_text("undone")
    async with httpx.AsyncClient(base_url=live_server, headers=bearer(key), timeout=60) as tenant:
        found = await tenant.get(f"/v1/memories/{memory_id}")
        assert found.status_code == 200 and found.json()["memory"] == "I keep bees."
