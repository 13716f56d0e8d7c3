"""quantize_rows on small hand-made graphs: which MatMuls it rewrites, and what rows come out.

The encoders memhub builds are tested in test_graph.py (batch independence through the
embedder) and test_local_model.py (closeness to the reference vectors); here the rewrite
itself: both ReduceMax forms (opset 17 and 18), weights inline and in a data file, a
product of two activations left alone, and rows of zeros.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from memhub.embed.onnx_int8 import WEIGHT_LEVELS, quantize_rows

K, N = 64, 48


def _model(path: Path, opset: int, external: bool) -> np.ndarray:
    """x (rows, K) @ W (K, N), then that product times itself transposed (no constant)."""
    weight = np.random.default_rng(3).normal(size=(K, N)).astype(np.float32)
    nodes = [
        helper.make_node("MatMul", ["x", "W"], ["y"], name="linear"),
        helper.make_node("Transpose", ["y"], ["yt"], perm=[1, 0]),
        helper.make_node("MatMul", ["y", "yt"], ["gram"], name="gram"),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["rows", K])],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, ["rows", N]),
            helper.make_tensor_value_info("gram", TensorProto.FLOAT, ["rows", "rows"]),
        ],
        [numpy_helper.from_array(weight, "W")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.save(model, str(path), save_as_external_data=external, size_threshold=0)
    return weight


def _run(path: Path, x: np.ndarray) -> list[np.ndarray]:
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return list(session.run(None, {"x": x}))


@pytest.mark.parametrize(("opset", "external"), [(17, False), (17, True), (18, True)])
def test_linear_layers_become_integer_and_rows_stay_close(
    tmp_path: Path, opset: int, external: bool
) -> None:
    weight = _model(tmp_path / "fp32.onnx", opset, external)
    out = quantize_rows(tmp_path / "fp32.onnx", tmp_path / "int8.onnx")
    x = np.random.default_rng(5).normal(size=(6, K)).astype(np.float32)
    x[2] *= 1000.0  # one row far larger than the others: it must not coarsen their scale

    y, gram = _run(out, x)

    ops = [node.op_type for node in onnx.load(str(out)).graph.node]
    assert ops.count("MatMulInteger") == 1 and ops.count("MatMul") == 1  # gram stays fp32
    expected = x @ weight
    cosine = (y * expected).sum(1) / np.linalg.norm(y, axis=1) / np.linalg.norm(expected, axis=1)
    assert cosine.min() > 0.999
    assert not np.allclose(y, expected, atol=1e-6)  # it did quantise
    np.testing.assert_allclose(gram, y @ y.T, rtol=1e-5)


def test_a_row_is_the_same_alone_among_others_and_as_zeros(tmp_path: Path) -> None:
    _model(tmp_path / "fp32.onnx", 17, True)
    out = quantize_rows(tmp_path / "fp32.onnx", tmp_path / "int8.onnx")
    rows = np.random.default_rng(9).normal(size=(4, K)).astype(np.float32)
    rows[1] = 0.0

    together = _run(out, rows)[0]

    for i in range(len(rows)):
        np.testing.assert_array_equal(_run(out, rows[i : i + 1])[0][0], together[i])
    assert not together[1].any()  # a zero row (padding) is zero, not NaN


def test_weights_are_seven_bit_per_channel(tmp_path: Path) -> None:
    weight = _model(tmp_path / "fp32.onnx", 17, True)
    out = quantize_rows(tmp_path / "fp32.onnx", tmp_path / "int8.onnx")

    stored = {t.name: t for t in onnx.load(str(out)).graph.initializer}
    levels = numpy_helper.to_array(stored["W/int8"], base_dir=str(tmp_path))
    scales = numpy_helper.to_array(stored["W/scale"], base_dir=str(tmp_path))

    assert levels.dtype == np.int8 and np.abs(levels).max() == WEIGHT_LEVELS
    np.testing.assert_allclose(scales, np.abs(weight).max(axis=0) / WEIGHT_LEVELS, rtol=1e-6)
    assert "W" not in stored  # only what runs is kept
