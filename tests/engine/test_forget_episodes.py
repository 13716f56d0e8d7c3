"""A granted request to forget takes the episodes that said the thing along with the fact, so
search no longer finds it; each is retired (listed, restorable), not erased. The DELETE comes
from memhub.testing's scripted OpenAI-compatible server: the decision is the model's, and what
is tested is what memhub does with it."""

from __future__ import annotations

import uuid
from typing import Any

import numpy as np

from memhub import AsyncMemory, MemhubSettings
from memhub.store.records import NewMemory, Scope
from memhub.testing import ScriptedOpenAIServer
from tests.engine.test_model_safety import _settle, fact_number, obeying, ops


async def test_a_granted_forget_retires_the_episodes_that_state_it(
    llm_settings: MemhubSettings, llm: ScriptedOpenAIServer
) -> None:
    fact, request = "Ada lives in Paris.", "Please forget that I live in Paris."

    def forget(req: dict[str, Any]) -> str:
        return ops({"op": "DELETE", "id": fact_number(req, fact), "turns": [1]})

    llm.default = obeying({request: forget})
    async with AsyncMemory(settings=llm_settings) as memory:
        said = await memory.add(
            [{"role": "user", "content": "I live in Paris, near the river."}],
            user_id="ep",
            infer=False,
            wait=True,
        )
        episode_id = said["results"][0]["id"]
        services = await memory._services()
        episode = await services.store.get_memory(None, uuid.UUID(episode_id))
        assert episode is not None and episode.role == "user"
        (vector,) = await services.embedder.embed([fact])
        learned = NewMemory(  # the fact consolidation learned from that turn
            id=uuid.uuid4(),
            scope=Scope(user_id="ep"),
            memory=fact,
            hash=fact,
            embedding=np.asarray(vector, np.float32),
            metadata={},
            source_turn_ids=episode.source_turn_ids,
        )
        async with services.store.apply_jobs([], "t", {}) as batch:
            await batch.insert_memories([learned], "consolidation")

        await memory.add(request, user_id="ep")
        await _settle(memory, "ep")
        hits = (await memory.search("where does Ada live? Paris", user_id="ep"))["results"]
        assert [h["memory"] for h in hits if "Paris" in h["memory"]] == []
        changes = (await memory.model_changes(user_id="ep"))["results"]
        by_memory = {c["memory_id"]: c for c in changes}
        assert {str(learned.id), episode_id} <= set(by_memory)
        assert by_memory[episode_id]["reason"] == by_memory[str(learned.id)]["reason"]
        assert all(c["actor"] == "consolidation" for c in changes)

        back = await memory.undo_change(by_memory[episode_id]["id"], user_id="ep")
        assert (back["id"], back["memory"]) == (episode_id, "I live in Paris, near the river.")
