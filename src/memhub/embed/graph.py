"""The ONNX graph of a BERT or MPNet encoder, written from its safetensors weights, no torch.

A sentence-transformers directory usually holds ``model.safetensors`` and no ONNX file.
Exporting it through torch costs a one-off install of several hundred MB (torch, transformers)
for a graph these two architectures spell out in a few dozen operators, so memhub writes the
graph itself with the ``onnx`` package: the same operators in the same order as transformers'
``BertModel`` / ``MPNetModel`` (inference: no dropout), every weight an initializer.
all-mpnet-base-v2 (MPNet) and all-MiniLM-L6-v2 (BERT) both come out at cosine 1.00000 to
transformers' torch output (measured; docs/embedders.md). Other architectures still go
through :func:`memhub.embed.export.export_onnx`'s torch path.

Inputs ``input_ids`` and ``attention_mask`` (int64, batch and sequence dynamic), output
``last_hidden_state``: the interface of the torch export, so pooling and quantisation are
shared. Node names follow torch's exporter (``/encoder/layer.N/output/dense/MatMul``), so
profiles and quantised graphs of both exports read alike.
"""

from __future__ import annotations

import json
import math
import mmap
import os
import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np
import numpy.typing as npt

from memhub.errors import ConfigurationError

__all__ = ["SUPPORTED", "build_encoder", "can_build", "read_safetensors"]

Array = npt.NDArray[Any]
#: ``model_type`` values of config.json this module writes graphs for.
SUPPORTED = frozenset({"bert", "mpnet"})
_OPSET = 17  # LayerNormalization is an operator from 17 on
_DTYPES = {"F32": np.float32, "F16": np.float16, "I64": np.int64, "BF16": None}
# The bias added where the attention mask is 0: transformers' own, float32's most negative.
_MASKED = float(np.finfo(np.float32).min)


def read_safetensors(path: Path) -> dict[str, Array]:
    """Every tensor of a ``.safetensors`` file as a numpy array (float ones as float32).

    The format is an 8-byte little-endian header length, a JSON header of name -> dtype,
    shape and byte offsets, then the raw bytes. The file is mapped, not read: the arrays are
    views of the page cache, so a 438 MB file costs no 438 MB copy in the process.

    Raises:
        ConfigurationError: Not a safetensors file, or a dtype numpy cannot hold.
    """
    try:
        with path.open("rb") as f:
            (length,) = struct.unpack("<Q", f.read(8))
            header = json.loads(f.read(length))
            data = memoryview(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ))[8 + length :]
    except (OSError, struct.error, ValueError) as exc:
        raise ConfigurationError(f"{path} is not a readable safetensors file: {exc}") from exc
    tensors: dict[str, Array] = {}
    for name, spec in header.items():
        if name == "__metadata__":
            continue
        dtype = _DTYPES.get(spec["dtype"])
        if dtype is None:
            raise ConfigurationError(f"{path}: tensor {name} has dtype {spec['dtype']}")
        start, end = spec["data_offsets"]
        array = np.frombuffer(
            data, dtype=dtype, count=(end - start) // np.dtype(dtype).itemsize, offset=start
        ).reshape(spec["shape"])
        tensors[name] = array.astype(np.float32) if dtype == np.float16 else array
    return tensors


def can_build(config: dict[str, Any]) -> bool:
    """Whether :func:`build_encoder` writes this config.json's model."""
    return config.get("model_type") in SUPPORTED and config.get("hidden_act", "gelu") == "gelu"


def build_encoder(model_dir: Path, config: dict[str, Any], target: Path) -> Path:
    """Write ``target``: the ONNX graph of ``model_dir``'s BERT or MPNet encoder, fp32.

    ``config`` is the directory's ``config.json``, as its reader already has it.

    Raises:
        ConfigurationError: The onnx package is missing, or the weights do not match config.json.
    """
    import onnx  # a dependency of memhub, imported only here: `import memhub` stays light

    if not can_build(config):
        raise ConfigurationError(f"{model_dir}: no graph writer for {config.get('model_type')!r}")
    weights = _without_prefix(read_safetensors(model_dir / "model.safetensors"), config)
    target.parent.mkdir(parents=True, exist_ok=True)
    data = target.with_name(target.name + ".data")
    partial = target.with_suffix(".onnx.partial")
    try:
        # Every large weight goes to the data file as the graph is written: the process never
        # holds a second copy of the weights, nor a serialised one (3.0 GB peak when the
        # whole model was one protobuf; docs/embedders.md).
        with data.open("wb") as sink:
            graph = _Graph(sink, data.name)
            try:
                hidden = _encoder(graph, weights, config)
            except KeyError as exc:
                raise ConfigurationError(
                    f"{model_dir}: model.safetensors has no tensor {exc}"
                ) from exc
            _flush(sink)
        onnx.save(graph.model(hidden), str(partial))
        onnx.checker.check_model(str(partial))  # by path: it reads the data file too
        _flush_path(partial)
        partial.replace(target)  # a graph under the final name is complete, data and all
    finally:
        partial.unlink(missing_ok=True)
    return target


def _encoder(graph: _Graph, weights: dict[str, Array], config: dict[str, Any]) -> str:
    if config["model_type"] == "mpnet":
        hidden, bias = _mpnet_embeddings(graph, weights, config)
    else:
        hidden, bias = _bert_embeddings(graph, weights, config)
    for n in range(int(config["num_hidden_layers"])):
        hidden = _layer(graph, weights, config, n, hidden, bias)
    return hidden


def _flush(sink: IO[bytes]) -> None:
    sink.flush()
    os.fsync(sink.fileno())


def _flush_path(path: Path) -> None:
    with path.open("rb") as f:
        os.fsync(f.fileno())


def _without_prefix(weights: dict[str, Array], config: dict[str, Any]) -> dict[str, Array]:
    # A model saved from a task head (BertForMaskedLM, ...) prefixes the encoder's names.
    prefix = f"{config['model_type']}."
    if any(name.startswith(prefix + "embeddings.") for name in weights):
        return {name.removeprefix(prefix): value for name, value in weights.items()}
    return weights


@dataclass(frozen=True)
class _Stored:
    """An initializer written to the external data file: where its bytes are."""

    dtype: np.dtype[Any]
    shape: tuple[int, ...]
    offset: int
    length: int


#: Initializers of at least this many bytes go to the data file; smaller ones stay inline.
_EXTERNAL_BYTES = 1024


class _Graph:
    """Nodes and initializers, named as torch's exporter would, collected for one model.

    Large initializers are written to ``sink`` (the graph's external data file, named
    ``location`` beside it) the moment they are added, so none is held until the end.
    """

    def __init__(self, sink: IO[bytes], location: str) -> None:
        self.nodes: list[Any] = []
        self.constants: dict[str, Array] = {}
        self.stored: dict[str, _Stored] = {}
        self._sink = sink
        self._location = location

    def const(self, name: str, value: Array) -> str:
        if value.nbytes < _EXTERNAL_BYTES:
            self.constants[name] = value
            return name
        raw = np.require(value, dtype=value.dtype.newbyteorder("<"), requirements="C")
        offset = self._sink.tell()
        self._sink.write(raw.data)
        self.stored[name] = _Stored(raw.dtype, raw.shape, offset, raw.nbytes)
        return name

    def op(self, kind: str, name: str, *inputs: str, **attributes: Any) -> str:
        from onnx import helper

        output = f"{name}_output_0"
        self.nodes.append(helper.make_node(kind, list(inputs), [output], name=name, **attributes))
        return output

    def model(self, hidden: str) -> Any:
        from onnx import TensorProto, helper, numpy_helper

        self.nodes.append(helper.make_node("Identity", [hidden], ["last_hidden_state"]))
        inputs = [
            helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "sequence"])
            for name in ("input_ids", "attention_mask")
        ]
        output = helper.make_tensor_value_info(
            "last_hidden_state", TensorProto.FLOAT, ["batch", "sequence", None]
        )
        initializers = [
            numpy_helper.from_array(np.require(v, requirements="C"), k)
            for k, v in self.constants.items()
        ]
        initializers += [self._external(name, where) for name, where in self.stored.items()]
        graph = helper.make_graph(self.nodes, "encoder", inputs, [output], initializers)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", _OPSET)])
        model.ir_version = 8  # what onnxruntime 1.18 and later read
        return model

    def _external(self, name: str, where: _Stored) -> Any:
        from onnx import TensorProto, helper

        tensor = TensorProto()
        tensor.name = name
        tensor.data_type = helper.np_dtype_to_tensor_dtype(where.dtype)
        tensor.dims.extend(where.shape)
        tensor.data_location = TensorProto.EXTERNAL
        for key, value in (
            ("location", self._location),
            ("offset", str(where.offset)),
            ("length", str(where.length)),
        ):
            entry = tensor.external_data.add()
            entry.key, entry.value = key, value
        return tensor


def _layer_norm(
    graph: _Graph, w: dict[str, Array], key: str, where: str, x: str, eps: float
) -> str:
    return graph.op(
        "LayerNormalization",
        f"{where}/LayerNorm",
        x,
        graph.const(f"{key}.weight", w[f"{key}.weight"]),
        graph.const(f"{key}.bias", w[f"{key}.bias"]),
        axis=-1,
        epsilon=eps,
    )


def _linear(graph: _Graph, w: dict[str, Array], key: str, where: str, x: str) -> str:
    # torch stores Linear weights as (out, in); MatMul wants (in, out).
    weight = graph.const(f"{key}.weight.T", np.ascontiguousarray(w[f"{key}.weight"].T))
    product = graph.op("MatMul", f"{where}/MatMul", x, weight)
    return graph.op("Add", f"{where}/Add", product, graph.const(f"{key}.bias", w[f"{key}.bias"]))


def _scalar(graph: _Graph, name: str, value: float | int, dtype: type) -> str:
    return graph.const(name, np.array(value, dtype=dtype))


def _mask_bias(graph: _Graph) -> str:
    """(batch, 1, 1, sequence): 0 where attended, float32's minimum where padded."""
    mask = graph.op("Cast", "/mask/Cast", "attention_mask", to=1)  # 1 = FLOAT
    one = _scalar(graph, "one_f", 1.0, np.float32)
    inverted = graph.op("Sub", "/mask/Sub", one, mask)
    bias = graph.op("Mul", "/mask/Mul", inverted, _scalar(graph, "masked", _MASKED, np.float32))
    return graph.op("Unsqueeze", "/mask/Unsqueeze", bias, graph.const("axes_1_2", np.array([1, 2])))


def _sequence_length(graph: _Graph) -> str:
    shape = graph.op("Shape", "/shape/Shape", "input_ids")
    return graph.op("Gather", "/shape/Gather", shape, _scalar(graph, "one_i", 1, np.int64), axis=0)


def _bert_embeddings(graph: _Graph, w: dict[str, Array], config: dict[str, Any]) -> tuple[str, str]:
    positions = graph.op(
        "Range",
        "/embeddings/Range",
        _scalar(graph, "zero_i", 0, np.int64),
        _sequence_length(graph),
        _scalar(graph, "step_i", 1, np.int64),
    )
    # One segment: token type 0 everywhere, a constant row added to every token.
    types = w.get("embeddings.token_type_embeddings.weight")
    hidden = _embeddings_sum(
        graph, w, config, positions, 1e-12, None if types is None else types[0]
    )
    return hidden, _mask_bias(graph)


def _mpnet_embeddings(
    graph: _Graph, w: dict[str, Array], config: dict[str, Any]
) -> tuple[str, str]:
    pad = int(config.get("pad_token_id", 1))
    # Positions count the non-padding tokens from pad + 1, as MPNet (and RoBERTa) number them.
    is_pad = graph.op(
        "Equal", "/embeddings/Equal", "input_ids", _scalar(graph, "pad_id", pad, np.int64)
    )
    not_pad = graph.op("Not", "/embeddings/Not", is_pad)
    is_token = graph.op("Cast", "/embeddings/Cast", not_pad, to=7)  # 7 = INT64
    counted = graph.op(
        "CumSum", "/embeddings/CumSum", is_token, _scalar(graph, "axis_1", 1, np.int64)
    )
    token_positions = graph.op("Mul", "/embeddings/Mul", counted, is_token)
    positions = graph.op("Add", "/embeddings/Add_pad", token_positions, "pad_id")
    hidden = _embeddings_sum(graph, w, config, positions, 1e-5)
    bias = graph.op("Add", "/bias/Add", _relative_bias(graph, w, config, pad), _mask_bias(graph))
    return hidden, bias


def _embeddings_sum(
    graph: _Graph,
    w: dict[str, Array],
    config: dict[str, Any],
    positions: str,
    eps: float,
    token_type: Array | None = None,
) -> str:
    """Word plus position (plus token type) embeddings, layer-normalised."""
    words = graph.op(
        "Gather",
        "/embeddings/word_embeddings/Gather",
        graph.const("word_embeddings", w["embeddings.word_embeddings.weight"]),
        "input_ids",
    )
    at = graph.op(
        "Gather",
        "/embeddings/position_embeddings/Gather",
        graph.const("position_embeddings", w["embeddings.position_embeddings.weight"]),
        positions,
    )
    summed = graph.op("Add", "/embeddings/Add", words, at)
    if token_type is not None:
        summed = graph.op(
            "Add", "/embeddings/Add_1", summed, graph.const("token_type_0", token_type)
        )
    epsilon = float(config.get("layer_norm_eps", eps))
    return _layer_norm(graph, w, "embeddings.LayerNorm", "/embeddings", summed, epsilon)


def _relative_bias(graph: _Graph, w: dict[str, Array], config: dict[str, Any], pad: int) -> str:
    """MPNet's relative position bias, (1, heads, sequence, sequence), shared by every layer.

    Each (query, key) distance falls in one of 32 buckets, each bucket has a learnt bias per
    head. The buckets depend only on the two positions, so their table is a constant, sliced
    to the batch's length.
    """
    longest = int(config["max_position_embeddings"]) - pad - 1
    table = _relative_buckets(longest, int(config.get("relative_attention_num_buckets", 32)))
    length = graph.op(
        "Unsqueeze",
        "/bias/Unsqueeze",
        _sequence_length(graph),
        graph.const("axes_0", np.array([0])),
    )
    ends = graph.op("Concat", "/bias/Concat", length, length, axis=0)
    buckets = graph.op(
        "Slice",
        "/bias/Slice",
        graph.const("relative_buckets", table),
        graph.const("starts_0_0", np.array([0, 0])),
        ends,
        graph.const("axes_0_1", np.array([0, 1])),
    )
    per_head = graph.op(
        "Gather",
        "/encoder/relative_attention_bias/Gather",
        graph.const("relative_attention_bias", w["encoder.relative_attention_bias.weight"]),
        buckets,
    )
    heads_first = graph.op("Transpose", "/bias/Transpose", per_head, perm=[2, 0, 1])
    return graph.op("Unsqueeze", "/bias/Unsqueeze_1", heads_first, "axes_0")


def _relative_buckets(length: int, buckets: int, max_distance: int = 128) -> Array:
    """MPNet's bucket of every (query, key) position pair: exact near, logarithmic far."""
    relative = np.arange(length)[None, :] - np.arange(length)[:, None]  # key - query
    n = -relative
    half = buckets // 2
    result = (n < 0).astype(np.int64) * half
    n = np.abs(n)
    exact = half // 2
    with np.errstate(divide="ignore"):
        far = exact + (
            np.log(np.maximum(n, 1) / exact) / math.log(max_distance / exact) * (half - exact)
        ).astype(np.int64)
    far = np.minimum(far, half - 1)
    table: Array = result + np.where(n < exact, n, far)
    return table


#: The attention's weight names inside ``encoder.layer.N.attention``, per architecture.
_ATTENTION_NAMES = {
    "mpnet": {"q": "attn.q", "k": "attn.k", "v": "attn.v", "o": "attn.o", "norm": "LayerNorm"},
    "bert": {
        "q": "self.query",
        "k": "self.key",
        "v": "self.value",
        "o": "output.dense",
        "norm": "output.LayerNorm",
    },
}


def _layer(
    graph: _Graph, w: dict[str, Array], config: dict[str, Any], n: int, x: str, bias: str
) -> str:
    """One encoder layer: self-attention, then the feed-forward block, each with a residual."""
    key = f"encoder.layer.{n}"
    where = f"/encoder/layer.{n}"
    default_eps = 1e-5 if config["model_type"] == "mpnet" else 1e-12
    eps = float(config.get("layer_norm_eps", default_eps))
    x1 = _attention(graph, w, config, n, x, bias, eps)
    inner = _linear(graph, w, f"{key}.intermediate.dense", f"{where}/intermediate/dense", x1)
    activated = _gelu(graph, f"{where}/intermediate", inner)
    out = _linear(graph, w, f"{key}.output.dense", f"{where}/output/dense", activated)
    residual = graph.op("Add", f"{where}/output/Add", out, x1)
    return _layer_norm(graph, w, f"{key}.output.LayerNorm", f"{where}/output", residual, eps)


def _attention(
    graph: _Graph,
    w: dict[str, Array],
    config: dict[str, Any],
    n: int,
    x: str,
    bias: str,
    eps: float,
) -> str:
    """Multi-head self-attention of layer ``n`` plus its residual, layer-normalised."""
    names = _ATTENTION_NAMES[config["model_type"]]
    attention, where = f"encoder.layer.{n}.attention", f"/encoder/layer.{n}/attention"
    heads = int(config["num_attention_heads"])
    size = int(config["hidden_size"]) // heads
    split = graph.const(f"split_{n}", np.array([0, 0, heads, size]))

    def project(part: str, perm: list[int]) -> str:
        path = f"{where}/{names[part].replace('.', '/')}"
        flat = _linear(graph, w, f"{attention}.{names[part]}", path, x)
        shaped = graph.op("Reshape", f"{path}/Reshape", flat, split)
        return graph.op("Transpose", f"{path}/Transpose", shaped, perm=perm)

    scores = graph.op(
        "MatMul", f"{where}/MatMul", project("q", [0, 2, 1, 3]), project("k", [0, 2, 3, 1])
    )
    scale = _scalar(graph, f"scale_{n}", 1.0 / math.sqrt(size), np.float32)
    scaled = graph.op("Mul", f"{where}/Mul", scores, scale)
    biased = graph.op("Add", f"{where}/Add", scaled, bias)
    probabilities = graph.op("Softmax", f"{where}/Softmax", biased, axis=-1)
    context = graph.op("MatMul", f"{where}/MatMul_1", probabilities, project("v", [0, 2, 1, 3]))
    heads_last = graph.op("Transpose", f"{where}/Transpose", context, perm=[0, 2, 1, 3])
    merge = graph.const(f"merge_{n}", np.array([0, 0, heads * size]))
    merged = graph.op("Reshape", f"{where}/Reshape", heads_last, merge)
    out_path = f"{where}/{names['o'].replace('.', '/')}"
    attended = _linear(graph, w, f"{attention}.{names['o']}", out_path, merged)
    residual = graph.op("Add", f"{where}/Add_1", attended, x)
    return _layer_norm(graph, w, f"{attention}.{names['norm']}", where, residual, eps)


def _gelu(graph: _Graph, where: str, x: str) -> str:
    """The exact GELU (transformers' ``gelu``): x * (1 + erf(x / sqrt 2)) / 2."""
    op: Callable[..., str] = graph.op
    scaled = op("Div", f"{where}/Div", x, _scalar(graph, "sqrt2", math.sqrt(2.0), np.float32))
    shifted = op(
        "Add",
        f"{where}/Add_1",
        op("Erf", f"{where}/Erf", scaled),
        _scalar(graph, "one_f", 1.0, np.float32),
    )
    return op(
        "Mul",
        f"{where}/Mul_1",
        op("Mul", f"{where}/Mul", x, shifted),
        _scalar(graph, "half", 0.5, np.float32),
    )
