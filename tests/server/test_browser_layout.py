"""The web page as a person sees it, in headless Chromium against a live uvicorn: a timeline
that stays readable with one memory from another year, and on a phone (390 px) the memories
before the scope list. Positions are measured in the DOM (bounding boxes), not read from
screenshots; the screenshots at 1280 and 390 px are saved for a person to look at."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from tests.server.conftest import ADMIN_KEY, bearer
from tests.server.test_browser import (  # noqa: F401 (fixture)
    CHROMIUM,
    live_server,
    playwright_api,
    pytestmark,
)

expect = playwright_api.expect
RECENT = ["I started learning Czech.", "I moved to Brno.", "I adopted a cat named Pivo."]
OUTLIER = "I graduated from the conservatory."


def _seed(base: str) -> str:
    """A tenant key; alice said three things on the last three days and one 400 days ago,
    and a few other users have memories (a scope list as long as a small team's)."""
    with httpx.Client(base_url=base, headers=bearer(ADMIN_KEY), timeout=60) as admin:
        key = str(admin.post("/v1/keys", json={"name": "web", "tenant": "acme"}).json()["key"])
    now = datetime.now(UTC)
    said = [(OUTLIER, now - timedelta(days=400))]
    said += [(text, now - timedelta(days=3 - n)) for n, text in enumerate(RECENT)]
    with httpx.Client(base_url=base, headers=bearer(key), timeout=60) as tenant:
        for text, when in said:
            body = {
                "messages": text,
                "user_id": "alice",
                "timestamp": when.isoformat(),
                "infer": False,
                "wait": True,
            }
            assert tenant.post("/v1/memories", json=body).status_code == 200
        for n in range(12):
            body = {
                "messages": f"Note {n}.",
                "user_id": f"user{n:02}",
                "infer": False,
                "wait": True,
            }
            assert tenant.post("/v1/memories", json=body).status_code == 200
    return key


@contextlib.asynccontextmanager
async def _chromium() -> AsyncIterator[Any]:
    async with playwright_api.async_playwright() as pw:
        browser = await pw.chromium.launch(
            executable_path=str(CHROMIUM), args=["--headless", "--no-sandbox", "--disable-gpu"]
        )
        try:
            yield browser
        finally:
            await browser.close()


async def _open(browser: Any, base: str, key: str, width: int) -> Any:
    page = await browser.new_page(viewport={"width": width, "height": 844})
    await page.goto(base)
    await page.get_by_label("API key").fill(key)
    await page.get_by_role("button", name="Connect").click()
    await page.locator("#scopes button.scope", has_text="user alice").click()
    await expect(page.locator("#memories li.memory")).to_have_count(4)
    return page


async def _box(locator: Any) -> dict[str, float]:
    box = await locator.bounding_box()
    assert box is not None
    return dict(box)


def _looks_like_png(path: Path) -> bool:
    return path.stat().st_size > 10_000 and path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


async def test_the_timeline_keeps_recent_facts_apart_beside_one_from_another_year(
    live_server: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    """On a linear axis over 400 days the three recent facts, a day apart, start 1.4 px from
    each other on the 545 px track (measured with the gap left unshortened); shortening the
    year-long gap keeps them a fifth of the track apart or more."""
    key = await asyncio.to_thread(_seed, live_server)
    async with _chromium() as browser:
        page = await _open(browser, live_server, key, 1280)
        await page.get_by_role("button", name="Timeline").click()
        rows = page.locator("#timeline-rows li.fact")
        await expect(rows).to_have_count(4)
        await expect(rows.first.locator(".label")).to_have_text(OUTLIER)
        track = await _box(rows.first.locator(".track"))
        starts = [(await _box(rows.nth(n).locator(".bar")))["x"] for n in range(4)]
        apart = [later - earlier for earlier, later in itertools.pairwise(starts[1:])]
        assert min(apart) >= 0.2 * track["width"], (starts, track)
        # the year between is the hatched break, and the caption says so
        gap = await _box(rows.first.locator(".gap"))
        assert starts[0] < gap["x"] < starts[1]
        await expect(page.locator("#timeline-axis")).to_contain_text("hatched: 1 year")
        shot = tmp_path / "timeline-1280.png"
        await page.screenshot(path=str(shot), full_page=True)
        assert _looks_like_png(shot)


async def test_on_a_phone_the_memories_come_before_the_scope_list(
    live_server: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    key = await asyncio.to_thread(_seed, live_server)
    async with _chromium() as browser:
        phone = await _open(browser, live_server, key, 390)
        # picked from the list below: the keyboard (and the view) go up to the memories
        await expect(phone.locator("#memories-heading")).to_be_focused()
        first = await _box(phone.locator("#memories li.memory").first)
        retired = await _box(phone.locator("#revisions"))
        scopes = await _box(phone.locator("#scopes"))
        assert first["y"] + first["height"] <= retired["y"] <= scopes["y"]
        top = first["y"] + await phone.evaluate("window.scrollY")  # in the page, not the view
        assert top + first["height"] < 844  # the whole first memory is on the first screen
        overflow = "document.documentElement.scrollWidth > window.innerWidth"
        assert not await phone.evaluate(overflow)
        # The scope list is one button away, and the keyboard lands on it.
        await phone.get_by_role("button", name="Scopes", exact=True).click()
        await expect(phone.locator("#scopes-heading")).to_be_focused()
        await phone.get_by_role("button", name="Timeline").click()
        await expect(phone.locator("#timeline-rows li.fact")).to_have_count(4)
        assert not await phone.evaluate(overflow)
        shot = tmp_path / "page-390.png"
        await phone.screenshot(path=str(shot), full_page=True)
        assert _looks_like_png(shot)

        desktop = await _open(browser, live_server, key, 1280)
        await expect(desktop.get_by_role("button", name="Scopes", exact=True)).to_be_hidden()
        nav = await _box(desktop.locator("#scope-nav"))
        memories = await _box(desktop.locator("#memories"))
        assert nav["x"] + nav["width"] <= memories["x"]  # side by side when there is room
        shot = tmp_path / "page-1280.png"
        await desktop.screenshot(path=str(shot), full_page=True)
        assert _looks_like_png(shot)
