"""int8 arithmetic whose result for one text does not depend on the texts batched with it.

onnxruntime's dynamic quantisation gives every run's activations one scale, computed over
the whole batch tensor: a text's vector then moves with its batch companions (up to 0.02 per
dimension on all-mpnet-base-v2), so memhub ran such a model one text at a time.
:func:`quantize_rows` rewrites every MatMul with a constant 2-D weight of an fp32 graph into
standard ONNX operators that quantise each *row* (each token's activation vector) with a
scale of its own:

- the weight, once: one scale per output channel, values in ``[-63, 63]`` (7 bits: the u8 x
  s8 pair sums of AVX2 without VNNI stay below int16's limit, as onnxruntime's
  ``reduce_range`` does);
- each row at run time: ``scale = max|row| / 127``, ``q = round(row / scale) + 128`` as uint8
  (zero point 128);
- ``MatMulInteger`` (onnxruntime's u8 x s8 kernels: VNNI or AMX where the CPU has them), then
  the int32 products times the row's scale and the channel's scale.

A row's quantised values depend on that row alone and integer sums are exact, so a text's
vector is the same bit for bit alone, beside any companions, and padded (the test
``test_onnx_int8``). Per-row scales also follow each token's range, where one scale per batch
follows its largest activation: on LoCoMo turns the vectors are closer to fp32 than the
dynamic ones were, with every linear layer in int8 (docs/embedders.md).
"""

from __future__ import annotations

import mmap
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import numpy as np
import numpy.typing as npt

__all__ = ["ROW_QUANTISATION", "quantize_rows"]

Array = npt.NDArray[Any]

#: Weight values kept in [-WEIGHT_LEVELS, WEIGHT_LEVELS] (7 bits; see the module docstring).
WEIGHT_LEVELS = 63
#: Activation values in [1, 255] around the zero point 128.
_ACTIVATION_LEVELS = 127
_ZERO_POINT = 128
#: Initializers of at least this many bytes go to the data file; smaller ones stay inline.
_EXTERNAL_BYTES = 1024
#: Everything that shapes :func:`quantize_rows`'s file: part of a built model's cache key.
ROW_QUANTISATION = {
    "tool": "memhub.embed.onnx_int8.quantize_rows",
    "version": 1,
    "weights": f"int8 per output channel, symmetric, [-{WEIGHT_LEVELS}, {WEIGHT_LEVELS}]",
    "activations": "uint8 per row at run time, symmetric around 128",
    "op_types": ["MatMul"],
}


def quantize_rows(fp32: Path, out: Path) -> Path:
    """Write ``out`` (and ``out.data``): ``fp32`` with its linear layers in row-wise int8.

    The fp32 weights are read through a memory map one at a time and the int8 ones written
    out as they are made, so the process holds about one layer's weights at a time. MatMuls
    without a constant 2-D weight (attention's) stay fp32.
    """
    import onnx

    model = onnx.load(str(fp32), load_external_data=False)
    data = out.with_name(out.name + ".data")
    with _Weights(fp32.parent) as weights, data.open("wb") as sink:
        writer = _Writer(sink, data.name)
        _rewrite(model, weights, writer, _reduce_axes_as_input(model))
        sink.flush()
        os.fsync(sink.fileno())
    onnx.save(model, str(out))
    return out


def _reduce_axes_as_input(model: Any) -> bool:
    """ReduceMax takes its axes as an input from opset 18 on, as an attribute before."""
    version = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 17)
    return int(version) >= 18


def _rewrite(model: Any, weights: _Weights, writer: _Writer, axes_input: bool) -> None:
    graph = model.graph
    initializers = {tensor.name: tensor for tensor in graph.initializer}
    nodes: list[Any] = []
    quantised: dict[str, tuple[str, str]] = {}  # activation -> (its uint8 form, its scales)
    replaced: set[str] = set()
    writer.constant("rowq/levels", np.array(_ACTIVATION_LEVELS, np.float32))
    writer.constant("rowq/zero_point_f", np.array(_ZERO_POINT, np.float32))
    writer.constant("rowq/zero_point", np.array(_ZERO_POINT, np.uint8))
    writer.constant("rowq/tiny", np.array(np.finfo(np.float32).tiny, np.float32))
    writer.constant("rowq/last_axis", np.array([-1], np.int64))
    for node in graph.node:
        weight = _constant_weight(node, initializers)
        if weight is None:
            nodes.append(node)
            continue
        activation = node.input[0]
        if activation not in quantised:
            quantised[activation] = _quantise_rows(nodes, activation, axes_input)
        nodes.extend(_integer_matmul(node, weights.read(weight), writer, *quantised[activation]))
        replaced.add(weight.name)
    used = {name for node in nodes for name in node.input}
    kept = [
        writer.copy(t, weights)
        for t in graph.initializer
        if t.name not in replaced and t.name in used
    ]
    del graph.node[:]
    graph.node.extend(nodes)
    del graph.initializer[:]
    graph.initializer.extend(t for t in kept + writer.made if t.name in used)


def _constant_weight(node: Any, initializers: dict[str, Any]) -> Any:
    """The MatMul's constant 2-D float weight, or None: only those are quantised."""
    from onnx import TensorProto

    if node.op_type != "MatMul" or node.domain not in ("", "ai.onnx"):
        return None
    tensor = initializers.get(node.input[1])
    if tensor is None or len(tensor.dims) != 2 or tensor.data_type != TensorProto.FLOAT:
        return None
    return tensor


def _quantise_rows(nodes: list[Any], activation: str, axes_input: bool) -> tuple[str, str]:
    """Nodes that quantise ``activation`` row by row: its uint8 values and per-row scales."""
    from onnx import TensorProto, helper

    p = f"{activation}/rowq"

    def op(kind: str, inputs: list[str], output: str, **attributes: Any) -> str:
        nodes.append(helper.make_node(kind, inputs, [output], name=output, **attributes))
        return output

    magnitude = op("Abs", [activation], f"{p}/abs")
    if axes_input:
        peak = op("ReduceMax", [magnitude, "rowq/last_axis"], f"{p}/max", keepdims=1)
    else:
        peak = op("ReduceMax", [magnitude], f"{p}/max", keepdims=1, axes=[-1])
    # An all-zero row gets a tiny scale instead of a division by zero: it quantises to 0.
    scale = op("Div", [op("Max", [peak, "rowq/tiny"], f"{p}/peak"), "rowq/levels"], f"{p}/scale")
    steps = op("Round", [op("Div", [activation, scale], f"{p}/steps")], f"{p}/rounded")
    shifted = op("Add", [steps, "rowq/zero_point_f"], f"{p}/shifted")
    return op("Cast", [shifted], f"{p}/u8", to=TensorProto.UINT8), scale


def _integer_matmul(
    node: Any, weight: Array, writer: _Writer, rows: str, row_scales: str
) -> list[Any]:
    """``node``'s product as MatMulInteger on ``rows``, scaled back to float32."""
    from onnx import TensorProto, helper

    channel_scales = np.abs(weight).max(axis=0) / WEIGHT_LEVELS
    channel_scales[channel_scales == 0] = 1.0  # an all-zero column stays 0 at any scale
    levels = np.clip(np.rint(weight / channel_scales), -WEIGHT_LEVELS, WEIGHT_LEVELS)
    q = writer.constant(f"{node.input[1]}/int8", levels.astype(np.int8))
    s = writer.constant(f"{node.input[1]}/scale", channel_scales.astype(np.float32))
    name, output = node.name or node.output[0], node.output[0]
    return [
        helper.make_node(
            "MatMulInteger", [rows, q, "rowq/zero_point"], [f"{name}/i32"], name=f"{name}/int8"
        ),
        helper.make_node("Cast", [f"{name}/i32"], [f"{name}/f32"], to=TensorProto.FLOAT),
        helper.make_node("Mul", [f"{name}/f32", row_scales], [f"{name}/rows"]),
        helper.make_node("Mul", [f"{name}/rows", s], [output], name=name),
    ]


class _Weights:
    """Reads an fp32 graph's initializers, inline or from its external data files (mapped)."""

    def __init__(self, base: Path) -> None:
        self._base = base
        self._maps: dict[str, mmap.mmap] = {}

    def __enter__(self) -> _Weights:
        return self

    def __exit__(self, *exc: object) -> None:
        for mapped in self._maps.values():
            mapped.close()

    def raw(self, tensor: Any) -> memoryview | None:
        """The bytes of an external tensor (a view of the mapped file), None for inline."""
        from onnx import TensorProto

        if tensor.data_location != TensorProto.EXTERNAL:
            return None
        info = {entry.key: entry.value for entry in tensor.external_data}
        location = info["location"]
        if location not in self._maps:
            with (self._base / location).open("rb") as f:
                self._maps[location] = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        start = int(info.get("offset", 0))
        length = int(info.get("length", len(self._maps[location]) - start))
        return memoryview(self._maps[location])[start : start + length]

    def read(self, tensor: Any) -> Array:
        from onnx import numpy_helper

        raw = self.raw(tensor)
        if raw is None:
            return np.asarray(numpy_helper.to_array(tensor), dtype=np.float32)
        return np.frombuffer(raw, dtype="<f4").reshape(tuple(tensor.dims))


@dataclass
class _Writer:
    """Appends large initializers to the new data file as they are made."""

    sink: IO[bytes]
    location: str
    made: list[Any] = field(default_factory=list)

    def constant(self, name: str, value: Array) -> str:
        from onnx import numpy_helper

        if value.nbytes < _EXTERNAL_BYTES:
            self.made.append(numpy_helper.from_array(value, name))
            return name
        little = np.require(value, dtype=value.dtype.newbyteorder("<"), requirements="C")
        self.made.append(self._external(name, little.dtype, little.shape, little.tobytes()))
        return name

    def copy(self, tensor: Any, weights: _Weights) -> Any:
        """``tensor`` unchanged, its bytes moved to the new data file if it had external ones."""
        raw = weights.raw(tensor)
        if raw is None:
            return tensor
        moved = self._external(tensor.name, None, tuple(tensor.dims), raw)
        moved.data_type = tensor.data_type
        return moved

    def _external(self, name: str, dtype: Any, shape: tuple[int, ...], raw: Any) -> Any:
        from onnx import TensorProto, helper

        tensor = TensorProto()
        tensor.name = name
        if dtype is not None:
            tensor.data_type = helper.np_dtype_to_tensor_dtype(dtype)
        tensor.dims.extend(shape)
        tensor.data_location = TensorProto.EXTERNAL
        offset = self.sink.tell()
        self.sink.write(raw)
        for key, value in (
            ("location", self.location),
            ("offset", str(offset)),
            ("length", str(self.sink.tell() - offset)),
        ):
            entry = tensor.external_data.add()
            entry.key, entry.value = key, value
        return tensor
