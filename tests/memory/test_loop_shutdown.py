"""A loop that ends with memhub's engine still open finishes shutting down.

``asyncio.run()`` cancels every task left on its loop and waits for them all. psycopg_pool's
workers swallow a cancellation that lands while they connect, then wait for work forever; the
pool's watchdog closes the pool when it is cancelled, which stops them. Without it this test
hung (seen under load, in tests/memory/test_sharing.py).
"""

from __future__ import annotations

import asyncio

import pytest

from memhub import MemhubSettings
from memhub.memory.services import acquire_services


@pytest.mark.parametrize("attempt", range(3))
def test_cancelling_every_task_of_a_leaked_engine_finishes(
    settings: MemhubSettings, attempt: int
) -> None:
    # A large pool keeps the pool's workers connecting when the cancellation lands.
    settings = settings.model_copy(update={"pool_min_size": 10, "pool_max_size": 10})
    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(acquire_services(settings))  # never released
        tasks = asyncio.all_tasks(loop)
        for task in tasks:
            task.cancel()  # what asyncio.run() does to the tasks left when its main returns
        _, pending = loop.run_until_complete(asyncio.wait(tasks, timeout=15))
        assert not pending, [task.get_name() for task in pending]
    finally:
        loop.close()
