"""Texts per CPU-second of memhub's encoders against the bound this CPU's matrix kernels set.

For each model (all-MiniLM-L6-v2 as packaged, all-mpnet-base-v2 fp32, all-mpnet-base-v2 int8
as memhub builds it, and with ``--previous`` the int8 recipe before issue 36: onnxruntime's
dynamic quantisation, feed-forward outputs fp32, one text per run) and each length (16, 64
and 256 tokens, synthetic ids of exactly that length), one single-threaded onnxruntime
session runs batches of 1 and of 32 texts. The rate is texts per second of *process* CPU
time, so it holds on a machine shared with other work.

The bound: a text of L tokens costs 2 x P x L FLOPs in its linear layers (P: their
parameters, embeddings excluded; attention's L x L products are left out, under 5% at 256
tokens), and the CPU does at most G FLOPs per CPU-second, G measured here with onnxruntime
on one thread for the model's own matrix shapes (fp32 MatMul, and u8 x s8 MatMulInteger for
int8; numpy's fp32 for reference). bound = G / (2 P L).

``python -m bench.encoder_speed [--seconds 2] [--previous] [--json FILE]``
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# numpy's reference rate is one thread's, like onnxruntime's (set before numpy loads BLAS).
for _setting in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_setting, "1")

import numpy as np  # noqa: E402

from bench import machine  # noqa: E402

LENGTHS = (16, 64, 256)
BATCHES = (1, 32)


@dataclass(frozen=True)
class Model:
    """One encoder to time: where its graph is and the shapes of its linear layers."""

    name: str
    path: Path
    layers: int
    hidden: int
    inner: int
    int8: bool  # integer arithmetic (the bound uses the int8 GEMM rate)

    @property
    def parameters(self) -> int:
        """Parameters of the linear layers: Q, K, V, output, and the two feed-forward ones."""
        return self.layers * (4 * self.hidden * self.hidden + 2 * self.hidden * self.inner)


def _session(path: Path | bytes, threads: int = 1) -> Any:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    source = path if isinstance(path, bytes) else str(path)
    return ort.InferenceSession(source, options, providers=["CPUExecutionProvider"])


def _per_cpu_second(run: Callable[[], int], seconds: float) -> float:
    """Units of work per second of this process's CPU time; ``run`` returns its units."""
    run()  # warm up: first runs allocate
    done, began = 0, time.process_time()
    while time.process_time() - began < seconds:
        done += run()
    return done / (time.process_time() - began)


def _ids(batch: int, length: int, seed: int = 7) -> dict[str, Any]:
    ids = np.random.default_rng(seed).integers(1000, 20000, size=(batch, length))
    ids[:, 0], ids[:, -1] = 0, 2  # a start and an end token, as the tokenizers put them
    return {"input_ids": ids.astype(np.int64), "attention_mask": np.ones_like(ids, np.int64)}


def texts_per_cpu_second(model: Model, seconds: float) -> dict[str, dict[int, float]]:
    """``{"b1": {length: rate}, "b32": {...}}`` on one single-threaded session."""
    session = _session(model.path)
    wanted = {i.name for i in session.get_inputs()}
    rates: dict[str, dict[int, float]] = {}
    for batch in BATCHES:
        for length in LENGTHS:
            feeds = _ids(batch, length)
            if "token_type_ids" in wanted:
                feeds["token_type_ids"] = np.zeros_like(feeds["input_ids"])

            def run(feeds: dict[str, Any] = feeds, batch: int = batch) -> int:
                session.run(None, feeds)
                return batch

            rates.setdefault(f"b{batch}", {})[length] = _per_cpu_second(run, seconds)
    return rates


def gemm_rates(hidden: int, inner: int, rows: int, seconds: float) -> dict[str, float]:
    """GFLOP per CPU-second of one thread for this model's three linear-layer shapes."""
    shapes = [(hidden, hidden), (hidden, inner), (inner, hidden)]
    found: dict[str, list[float]] = {"fp32": [], "int8": [], "numpy fp32": []}
    for k, n in shapes:
        for kind, rate in _shape_rates(rows, k, n, seconds / 3).items():
            found[kind].append(rate)
    return {kind: _weighted(values, hidden, inner) for kind, values in found.items()}


def _shape_rates(rows: int, k: int, n: int, seconds: float) -> dict[str, float]:
    """GFLOP per CPU-second of (rows x k) @ (k x n): onnxruntime fp32 and u8 x s8, numpy fp32."""
    rng = np.random.default_rng(1)
    flops = 2.0 * rows * k * n
    a = rng.normal(size=(rows, k)).astype(np.float32)
    w = rng.normal(size=(k, n)).astype(np.float32)
    fp32 = _session(_one_matmul("MatMul", k, n, w))
    int8 = _session(_one_matmul("MatMulInteger", k, n, rng.integers(-63, 64, (k, n), np.int8)))
    a8 = rng.integers(0, 256, (rows, k)).astype(np.uint8)
    runs: dict[str, Callable[[], int]] = {
        "fp32": lambda: len(fp32.run(None, {"a": a})),
        "int8": lambda: len(int8.run(None, {"a": a8})),
        "numpy fp32": lambda: len(a @ w) and 1,
    }
    return {kind: _per_cpu_second(work, seconds) * flops / 1e9 for kind, work in runs.items()}


def _weighted(rates: list[float], hidden: int, inner: int) -> float:
    """The rate of a whole layer: total FLOPs over the time each shape takes (the square
    shape four times: Q, K, V and the attention output; each feed-forward shape once)."""
    work = [4 * hidden * hidden, hidden * inner, inner * hidden]
    return sum(work) / sum(w / r for w, r in zip(work, rates, strict=True))


def _one_matmul(kind: str, k: int, n: int, weight: Any) -> bytes:
    from onnx import TensorProto, helper, numpy_helper

    integer = kind == "MatMulInteger"
    a_type = TensorProto.UINT8 if integer else TensorProto.FLOAT
    y_type = TensorProto.INT32 if integer else TensorProto.FLOAT
    graph = helper.make_graph(
        [helper.make_node(kind, ["a", "w"], ["y"])],
        "gemm",
        [helper.make_tensor_value_info("a", a_type, ["rows", k])],
        [helper.make_tensor_value_info("y", y_type, ["rows", n])],
        [numpy_helper.from_array(weight, "w")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return bytes(model.SerializeToString())


def models(previous: bool, scratch: Path) -> list[Model]:
    """The encoders memhub runs, built into the model cache where memhub builds them."""
    from memhub.config import MemhubSettings
    from memhub.embed.onnx_minilm import _model_path
    from memhub.embed.packaged import PACKAGED_MODELS, prepare

    cache = Path(MemhubSettings().model_cache).expanduser()
    fp32 = prepare(PACKAGED_MODELS["all-mpnet-base-v2"], cache)
    found = [
        Model("all-MiniLM-L6-v2 (packaged; fp32 arithmetic)", _model_path(), 6, 384, 1536, False),
        Model("all-mpnet-base-v2 fp32", fp32, 12, 768, 3072, False),
        Model(
            "all-mpnet-base-v2 int8, per-row scales (default)",
            prepare(PACKAGED_MODELS["all-mpnet-base-v2-int8"], cache),
            12,
            768,
            3072,
            True,
        ),
    ]
    if previous:
        path = _previous_int8(fp32, scratch)
        found.append(Model("all-mpnet-base-v2 int8, dynamic (before)", path, 12, 768, 3072, True))
    return found


def _previous_int8(fp32: Path, scratch: Path) -> Path:
    """The recipe before issue 36: onnxruntime's quantize_dynamic, FFN outputs kept fp32."""
    import re

    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    graph = onnx.load(str(fp32), load_external_data=False).graph
    keep = [n.name for n in graph.node if re.search(r"layer\.\d+/output/dense/", n.name)]
    out = scratch / "model_dynamic.onnx"
    quantize_dynamic(
        str(fp32),
        str(out),
        per_channel=True,
        reduce_range=True,
        weight_type=QuantType.QInt8,
        op_types_to_quantize=["MatMul"],
        nodes_to_exclude=keep,
        use_external_data_format=True,
    )
    return out


def table(rows: list[dict[str, Any]]) -> str:
    """Markdown: texts per CPU-second at each length and batch, the bound, the distance."""
    lines = [
        "| model | tokens | batch 1 | batch 32 | bound | bound / best |",
        "|---|---|---|---|---|---|",
    ]
    for row in rows:
        for length in LENGTHS:
            one, many = row["rates"]["b1"][length], row["rates"]["b32"][length]
            bound = row["bound"][length]
            lines.append(
                f"| {row['model']} | {length} | {one:.1f} | {many:.1f} | {bound:.0f} "
                f"| {bound / max(one, many):.1f}x |"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.encoder_speed", description=__doc__)
    parser.add_argument("--seconds", type=float, default=2.0, help="CPU seconds per figure")
    parser.add_argument("--previous", action="store_true", help="also the int8 recipe before")
    parser.add_argument("--json", type=Path, default=None, help="also write the rows here")
    args = parser.parse_args(argv)
    described = machine.describe()
    rows = []
    with tempfile.TemporaryDirectory(prefix="encoder-speed-") as scratch:
        for model in models(args.previous, Path(scratch)):
            gemm = gemm_rates(model.hidden, model.inner, 32 * 64, args.seconds)
            rate = gemm["int8" if model.int8 else "fp32"]
            bound = {n: rate * 1e9 / (2 * model.parameters * n) for n in LENGTHS}
            rates = texts_per_cpu_second(model, args.seconds)
            rows.append({"model": model.name, "gemm_gflops": gemm, "bound": bound, "rates": rates})
            print(f"{model.name}: GEMM GFLOP/CPU-s {json.dumps(gemm)}", flush=True)
    described["load_after"] = os.getloadavg()
    print(machine.summary(described))
    print(table(rows))
    if args.json is not None:
        args.json.write_text(json.dumps({"machine": described, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
