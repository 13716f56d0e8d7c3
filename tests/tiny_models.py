"""Tiny transformer-shaped models that tests build themselves, in the layouts memhub loads.

No trained model small enough for the suite ships in a package, so these are random but
real: an ONNX graph run by onnxruntime, a ``tokenizer.json`` read by ``tokenizers``, and the
sentence-transformers / cross-encoder config files, so the loading and scoring code that
users' models go through runs unchanged. ``reference_*`` compute in numpy what the model
must return.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

WORDS = [
    "i",
    "like",
    "jazz",
    "and",
    "hiking",
    "cats",
    "dogs",
    "the",
    "a",
    "my",
    "sister",
    "lives",
    "in",
    "paris",
    "berlin",
    "what",
    "does",
    "where",
    "who",
    "music",
    "city",
    "pet",
    "friend",
    "works",
    "as",
    "nurse",
    "teacher",
]
SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"]


def write_tokenizer(path: Path) -> dict[str, int]:
    """A lower-casing word-level tokenizer adding [CLS] ... [SEP] (pairs: [SEP] between)."""
    from tokenizers import Tokenizer, normalizers, pre_tokenizers, processors
    from tokenizers.models import WordLevel

    vocab = {token: i for i, token in enumerate([*SPECIAL, *WORDS])}
    tokenizer = Tokenizer(WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.Lowercase()
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])],
    )
    tokenizer.save(str(path))
    return vocab


def _graph(table: np.ndarray, weight: np.ndarray, head: np.ndarray | None) -> Any:
    """hidden = tanh(E[ids] @ W) * mask; with a head: logits = mean of hidden @ head."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    nodes = [
        helper.make_node("Gather", ["table", "input_ids"], ["embedded"]),
        helper.make_node("MatMul", ["embedded", "weight"], ["projected"]),
        helper.make_node("Tanh", ["projected"], ["activated"]),
        helper.make_node("Cast", ["attention_mask"], ["mask_f"], to=TensorProto.FLOAT),
        helper.make_node("Unsqueeze", ["mask_f", "last_axis"], ["mask_3d"]),
        helper.make_node("Mul", ["activated", "mask_3d"], ["last_hidden_state"]),
    ]
    initializers = [
        numpy_helper.from_array(table.astype(np.float32), "table"),
        numpy_helper.from_array(weight.astype(np.float32), "weight"),
        numpy_helper.from_array(np.array([2], dtype=np.int64), "last_axis"),
    ]
    inputs = [
        helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "sequence"]),
        helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "sequence"]),
    ]
    if head is None:
        outputs = [
            helper.make_tensor_value_info(
                "last_hidden_state", TensorProto.FLOAT, ["batch", "sequence", weight.shape[1]]
            )
        ]
    else:
        inputs.append(
            helper.make_tensor_value_info(
                "token_type_ids", TensorProto.INT64, ["batch", "sequence"]
            )
        )
        nodes += [
            helper.make_node(
                "ReduceSum", ["last_hidden_state", "seq_axis"], ["summed"], keepdims=0
            ),
            helper.make_node("ReduceSum", ["mask_3d", "seq_axis"], ["count"], keepdims=0),
            helper.make_node("Div", ["summed", "count"], ["pooled"]),
            helper.make_node("MatMul", ["pooled", "head"], ["logits"]),
        ]
        initializers += [
            numpy_helper.from_array(np.array([1], dtype=np.int64), "seq_axis"),
            numpy_helper.from_array(head.astype(np.float32), "head"),
        ]
        outputs = [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 1])]
    graph = helper.make_graph(nodes, "tiny", inputs, outputs, initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def build_encoder(
    root: Path, dimension: int = 32, pooling: str = "mean", max_seq_length: int = 16, seed: int = 7
) -> dict[str, Any]:
    """A sentence-transformers directory with an ONNX network; returns its weights."""
    import onnx

    root.mkdir(parents=True, exist_ok=True)
    vocab = write_tokenizer(root / "tokenizer.json")
    rng = np.random.default_rng(seed)
    table = rng.normal(size=(len(vocab), dimension)).astype(np.float32)
    weight = rng.normal(size=(dimension, dimension)).astype(np.float32) / np.sqrt(dimension)
    onnx.save(_graph(table, weight, None), str(root / "model.onnx"))
    (root / "config.json").write_text(
        json.dumps({"hidden_size": dimension, "max_position_embeddings": 64, "pad_token_id": 0})
    )
    (root / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": max_seq_length}))
    (root / "modules.json").write_text(
        json.dumps(
            [
                {
                    "idx": 0,
                    "name": "0",
                    "path": "",
                    "type": "sentence_transformers.models.Transformer",
                },
                {
                    "idx": 1,
                    "name": "1",
                    "path": "1_Pooling",
                    "type": "sentence_transformers.models.Pooling",
                },
                {
                    "idx": 2,
                    "name": "2",
                    "path": "2_Normalize",
                    "type": "sentence_transformers.models.Normalize",
                },
            ]
        )
    )
    (root / "1_Pooling").mkdir(exist_ok=True)
    (root / "1_Pooling" / "config.json").write_text(
        json.dumps(
            {
                "word_embedding_dimension": dimension,
                "pooling_mode_mean_tokens": pooling == "mean",
                "pooling_mode_cls_token": pooling == "cls",
                "pooling_mode_max_tokens": pooling == "max",
            }
        )
    )
    return {"vocab": vocab, "table": table, "weight": weight, "max_seq_length": max_seq_length}


def build_cross_encoder(root: Path, dimension: int = 16, seed: int = 11) -> dict[str, Any]:
    """A cross-encoder directory (query and passage in one input, one logit out)."""
    import onnx

    root.mkdir(parents=True, exist_ok=True)
    vocab = write_tokenizer(root / "tokenizer.json")
    rng = np.random.default_rng(seed)
    table = rng.normal(size=(len(vocab), dimension)).astype(np.float32)
    weight = rng.normal(size=(dimension, dimension)).astype(np.float32) / np.sqrt(dimension)
    head = rng.normal(size=(dimension, 1)).astype(np.float32)
    onnx.save(_graph(table, weight, head), str(root / "model.onnx"))
    (root / "config.json").write_text(
        json.dumps({"hidden_size": dimension, "max_position_embeddings": 64, "num_labels": 1})
    )
    return {"vocab": vocab, "table": table, "weight": weight, "head": head}


def _ids(vocab: dict[str, int], text: str, limit: int) -> list[int]:
    words = [vocab.get(w, vocab["[UNK]"]) for w in text.lower().split()]
    ids = [vocab["[CLS]"], *words, vocab["[SEP]"]]
    return [*ids[: limit - 1], vocab["[SEP]"]] if len(ids) > limit else ids


def reference_encoder(model: dict[str, Any], text: str, pooling: str = "mean") -> np.ndarray:
    """What build_encoder's model must embed ``text`` to (truncation like tokenizers')."""
    ids = _ids(model["vocab"], text, model["max_seq_length"])
    if len(ids) > model["max_seq_length"]:
        ids = ids[: model["max_seq_length"]]
    hidden = np.tanh(model["table"][ids] @ model["weight"])
    vector = hidden[0] if pooling == "cls" else hidden.mean(axis=0)
    return vector / np.linalg.norm(vector)


def reference_cross_encoder(model: dict[str, Any], query: str, passage: str) -> float:
    """The logit build_cross_encoder's model gives a (query, passage) pair."""
    vocab = model["vocab"]
    ids = [*_ids(vocab, query, 10**6), *_ids(vocab, passage, 10**6)[1:]]
    hidden = np.tanh(model["table"][ids] @ model["weight"])
    return float(hidden.mean(axis=0) @ model["head"][:, 0])


def as_packages(folder: Path, site: Path, name: str, onnx: str) -> Any:
    """``folder`` zipped and split over two installed "packages" under ``site`` (put it on
    ``sys.path``), as the default model ships: the :class:`PackagedModel` naming them.

    The pieces are ``site/<name>_part_00N/<name>.zip.00N``, the packages ``<name>-part-00N``.
    """
    import io
    import zipfile

    from memhub.embed.packaged import PackagedModel

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as out:
        for file in sorted(folder.rglob("*")):
            out.write(file, file.relative_to(folder.parent))
    data = buffer.getvalue()
    module = name.replace("-", "_")
    names = []
    for n, piece in enumerate((data[: len(data) // 2], data[len(data) // 2 :]), start=1):
        names.append(f"{name}-part-{n:03d}")
        (site / f"{module}_part_{n:03d}").mkdir(parents=True)
        (site / f"{module}_part_{n:03d}/{name}.zip.{n:03d}").write_bytes(piece)
        info = site / f"{module}_part_{n:03d}-0.0.1.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: {names[-1]}\nVersion: 0.0.1\n"
        )
    piece = f"{module}_part_{{n}}/{name}.zip.{{n}}"
    return PackagedModel(name, tuple(names), piece, folder.name, onnx)
