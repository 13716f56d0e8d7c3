"""ARKOS's agent pattern, unchanged, on memhub's ``Memory``: ``add_context`` / ``get_context``.

Run ``.venv/bin/python examples/arkos_agent.py`` (after ``make run`` or ``make test`` made the venv); set ``DB_URL`` for your own PostgreSQL, or leave it
unset for memhub's embedded one.
"""

from __future__ import annotations

from collections.abc import Sequence

from memhub import AIMessage, Memory, Message, SystemMessage, UserMessage


class Agent:
    """The memory half of ARKOS's ``Agent``, as the ARKOS memory module documents it."""

    def __init__(self, memory: Memory) -> None:
        self.memory = memory

    def add_context(self, messages: Sequence[Message]) -> None:
        """Store messages in memory."""
        for message in messages:
            self.memory.add_memory(message)

    def get_context(self, turns: int = 5, include_long_term: bool = True) -> list[Message]:
        """Retrieve context for the LLM."""
        short_term = self.memory.retrieve_short_memory(turns)

        if include_long_term:
            long_term = self.memory.retrieve_long_memory(context=short_term)
            long_term = without_short_term(long_term, short_term)
            if long_term.content.strip():
                return [long_term, *short_term]

        return short_term


def without_short_term(long_term: SystemMessage, short_term: Sequence[Message]) -> SystemMessage:
    """The recalled lines minus the messages already in the context (the question just asked
    is its own best match), so the model does not read them twice."""
    lines = long_term.content.splitlines()[1:]  # after "retrieved memories:"
    said = {f"{m.role}: {m.content}" for m in short_term}
    kept = [line for line in lines if line not in said]
    return SystemMessage(content="retrieved memories:\n" + "\n".join(kept) if kept else "")


def main() -> None:
    with Memory(user_id="alice", session_id=None) as memory:
        agent = Agent(memory)
        agent.add_context([UserMessage(content="I'm allergic to peanuts.")])
        agent.add_context([AIMessage(content="Noted, no peanuts in any recipe.")])
        memory.start_new_session()  # a new conversation: short-term is empty again
        agent.add_context([UserMessage(content="Suggest a snack for my hike.")])
        for message in agent.get_context(turns=5):
            print(f"{message.role}: {message.content}")


if __name__ == "__main__":
    main()
