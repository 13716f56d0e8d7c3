"""The public memory object: ARKOS's API and a Mem0-style API over one async core."""

from memhub.memory.async_memory import AsyncMemory
from memhub.memory.sync_memory import Memory

__all__ = ["AsyncMemory", "Memory"]
