"""The ONNX graphs memhub writes for BERT and MPNet weights, without torch.

The models are tiny and random (tests/tiny_models.py's tokenizer and configs, weights drawn
here), loaded through the same path a user's sentence-transformers directory takes: a
directory holding only ``model.safetensors`` is turned into ``onnx/model.onnx`` on first use.
Agreement with transformers' own torch models (cosine 1.00000 on all-mpnet-base-v2 and
all-MiniLM-L6-v2) needs torch, which the suite does not install: it is measured, in
docs/embedders.md. These tests check what a wrong graph would break: padding, positions,
the relative position bias, and the file format.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest

from memhub.embed import create_embedder
from memhub.embed.graph import can_build, read_safetensors
from memhub.errors import ConfigurationError
from tests.tiny_models import build_encoder

HIDDEN, HEADS, LAYERS, INNER = 16, 2, 2, 32


def _write_safetensors(path: Path, tensors: dict[str, np.ndarray]) -> None:
    header: dict[str, object] = {}
    blobs, offset = [], 0
    for name, value in tensors.items():
        raw = np.ascontiguousarray(value).tobytes()
        dtype = {np.dtype(np.float32): "F32", np.dtype(np.float16): "F16"}[value.dtype]
        header[name] = {
            "dtype": dtype,
            "shape": list(value.shape),
            "data_offsets": [offset, offset + len(raw)],
        }
        blobs.append(raw)
        offset += len(raw)
    encoded = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(encoded)) + encoded + b"".join(blobs))


def _weights(kind: str, vocab: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)

    def normal(*shape: int) -> np.ndarray:
        return (rng.normal(size=shape) * 0.5).astype(np.float32)

    w = {
        "embeddings.word_embeddings.weight": normal(vocab, HIDDEN),
        "embeddings.position_embeddings.weight": normal(40, HIDDEN),
        "embeddings.LayerNorm.weight": 1 + normal(HIDDEN) * 0.1,
        "embeddings.LayerNorm.bias": normal(HIDDEN) * 0.1,
    }
    attention = (
        ("attn.q", "attn.k", "attn.v", "attn.o")
        if kind == "mpnet"
        else ("self.query", "self.key", "self.value", "output.dense")
    )
    norm = "LayerNorm" if kind == "mpnet" else "output.LayerNorm"
    for n in range(LAYERS):
        layer = f"encoder.layer.{n}"
        for part in attention:
            w[f"{layer}.attention.{part}.weight"] = normal(HIDDEN, HIDDEN)
            w[f"{layer}.attention.{part}.bias"] = normal(HIDDEN)
        w[f"{layer}.attention.{norm}.weight"] = 1 + normal(HIDDEN) * 0.1
        w[f"{layer}.attention.{norm}.bias"] = normal(HIDDEN) * 0.1
        w[f"{layer}.intermediate.dense.weight"] = normal(INNER, HIDDEN)
        w[f"{layer}.intermediate.dense.bias"] = normal(INNER)
        w[f"{layer}.output.dense.weight"] = normal(HIDDEN, INNER)
        w[f"{layer}.output.dense.bias"] = normal(HIDDEN)
        w[f"{layer}.output.LayerNorm.weight"] = 1 + normal(HIDDEN) * 0.1
        w[f"{layer}.output.LayerNorm.bias"] = normal(HIDDEN) * 0.1
    if kind == "mpnet":
        w["encoder.relative_attention_bias.weight"] = normal(32, HEADS) * 4
    else:
        w["embeddings.token_type_embeddings.weight"] = normal(2, HIDDEN)
    return w


def _model_dir(root: Path, kind: str, seed: int = 3, **changes: object) -> Path:
    spec = build_encoder(root, dimension=HIDDEN, max_seq_length=32)
    (root / "model.onnx").unlink()  # only weights: memhub writes the graph
    config = {
        "model_type": kind,
        "hidden_size": HIDDEN,
        "num_attention_heads": HEADS,
        "num_hidden_layers": LAYERS,
        "intermediate_size": INNER,
        "hidden_act": "gelu",
        "max_position_embeddings": 40,
        "pad_token_id": 0,
        "layer_norm_eps": 1e-5,
        **changes,
    }
    (root / "config.json").write_text(json.dumps(config))
    _write_safetensors(root / "model.safetensors", _weights(kind, len(spec["vocab"]), seed))
    return root


def _embed(root: Path, texts: list[str]) -> np.ndarray:
    embedder = create_embedder("local", model=str(root))
    return embedder.embed_sync(texts)  # type: ignore[attr-defined, no-any-return]


@pytest.mark.parametrize("kind", ["bert", "mpnet"])
def test_the_graph_is_written_once_and_ignores_padding(tmp_path: Path, kind: str) -> None:
    root = _model_dir(tmp_path / kind, kind)
    alone = _embed(root, ["my sister lives in paris"])[0]
    batched = _embed(root, ["my sister lives in paris", "i like jazz and hiking and cats and dogs"])

    assert (root / "onnx" / "model.onnx").is_file()
    # Padded to the longer text, the short one's vector must not move: masks and, for MPNet,
    # positions counted from the tokens (not the padding) are right.
    np.testing.assert_allclose(batched[0], alone, atol=1e-5)
    assert not np.allclose(batched[1], alone, atol=1e-2)


@pytest.mark.parametrize("kind", ["bert", "mpnet"])
def test_word_order_changes_the_vector(tmp_path: Path, kind: str) -> None:
    root = _model_dir(tmp_path / kind, kind)
    forward, backward = _embed(root, ["cats like dogs", "dogs like cats"])

    assert float(forward @ backward) < 0.9999  # positions reach the output


def test_mpnet_relative_position_bias_is_used(tmp_path: Path) -> None:
    first = _embed(_model_dir(tmp_path / "a", "mpnet"), ["where does my sister live"])[0]
    root = _model_dir(tmp_path / "b", "mpnet")
    weights = read_safetensors(root / "model.safetensors")
    weights = {
        **weights,
        "encoder.relative_attention_bias.weight": np.zeros((32, HEADS), np.float32),
    }
    _write_safetensors(root / "model.safetensors", weights)
    second = _embed(root, ["where does my sister live"])[0]

    assert not np.allclose(first, second, atol=1e-3)


def test_safetensors_round_trip_and_half_precision(tmp_path: Path) -> None:
    path = tmp_path / "t.safetensors"
    _write_safetensors(
        path,
        {
            "a": np.arange(6, dtype=np.float32).reshape(2, 3),
            "b": np.array([0.5, 2.0], dtype=np.float16),
        },
    )
    read = read_safetensors(path)

    np.testing.assert_array_equal(read["a"], np.arange(6).reshape(2, 3))
    assert read["b"].dtype == np.float32 and read["b"].tolist() == [0.5, 2.0]
    (tmp_path / "bad.safetensors").write_bytes(b"\x05\x00")
    with pytest.raises(ConfigurationError, match="not a readable safetensors"):
        read_safetensors(tmp_path / "bad.safetensors")


def test_other_architectures_are_left_to_the_torch_export() -> None:
    assert can_build({"model_type": "bert", "hidden_act": "gelu"})
    assert not can_build({"model_type": "bert", "hidden_act": "relu"})
    assert not can_build({"model_type": "roberta"})


def test_a_missing_tensor_names_it(tmp_path: Path) -> None:
    root = _model_dir(tmp_path / "m", "mpnet")
    weights = read_safetensors(root / "model.safetensors")
    del weights["encoder.layer.1.output.dense.weight"]
    _write_safetensors(root / "model.safetensors", weights)

    with pytest.raises(ConfigurationError, match=r"encoder\.layer\.1\.output\.dense\.weight"):
        _embed(root, ["x"])


@pytest.mark.parametrize("kind", ["bert", "mpnet"])
def test_an_int8_text_has_one_vector_whatever_its_batch(
    tmp_path: Path, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memhub.embed.export import quantize_int8
    from memhub.embed.onnx_encoder import OnnxEncoder

    root = _model_dir(tmp_path / kind, kind)
    _embed(root, ["x"])  # writes onnx/model.onnx
    int8 = quantize_int8(root / "onnx" / "model.onnx", root / "onnx" / "model_qint8.onnx")
    embedder = create_embedder("local", model=str(int8))
    text = "my sister lives in paris"
    alone = embedder.embed_sync([text])[0]  # type: ignore[attr-defined]
    runs: list[int] = []
    run = OnnxEncoder._run
    monkeypatch.setattr(OnnxEncoder, "_run", lambda s, rt, b: runs.append(len(b)) or run(s, rt, b))
    # Same-length companions share its run unpadded; a longer one pads it. Neither may move
    # a single bit of its vector: each token row is quantised with a scale of its own.
    for companions in (
        ["cats like dogs and jazz", "i like hiking the city"],
        ["i like jazz and hiking cats"],
    ):
        batched = embedder.embed_sync([text, *companions])[0]  # type: ignore[attr-defined]
        np.testing.assert_array_equal(batched, alone)
    assert runs == [3, 2]  # batched again, not one text per run


def test_an_old_dynamic_int8_graph_still_runs_one_text_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A model built by an earlier memhub (onnxruntime's dynamic quantisation, one
    activation scale per run) is still run one text per run, so its vectors stay
    independent of their batch."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    from memhub.embed.onnx_encoder import OnnxEncoder

    root = _model_dir(tmp_path / "q", "bert")
    _embed(root, ["x"])
    int8 = root / "onnx" / "model_qint8.onnx"
    quantize_dynamic(root / "onnx" / "model.onnx", int8, weight_type=QuantType.QInt8)
    embedder = create_embedder("local", model=str(int8))
    text = "my sister lives in paris"
    alone = embedder.embed_sync([text])[0]  # type: ignore[attr-defined]
    runs: list[int] = []
    run = OnnxEncoder._run
    monkeypatch.setattr(OnnxEncoder, "_run", lambda s, rt, b: runs.append(len(b)) or run(s, rt, b))
    batched = embedder.embed_sync([text, "cats like dogs and jazz"])[0]  # type: ignore[attr-defined]

    np.testing.assert_array_equal(batched, alone)
    assert runs == [1, 1]
