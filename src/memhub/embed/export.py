"""Export a Hugging Face model directory to ONNX once, and quantise it to int8 weights.

BERT and MPNet models (all-MiniLM-L6-v2, all-mpnet-base-v2 and their many fine-tunes) need
only the ``onnx`` package: :mod:`memhub.embed.graph` writes their graph from the safetensors
weights. Other architectures need the ``export`` extra (``pip install 'memhub[export]'``:
torch, transformers) for torch's exporter. Run it by hand with
``python -m memhub.embed.export MODEL_DIR [--int8]``, or let
:class:`~memhub.embed.local_model.LocalModelEmbedder` call it the first time it meets a
directory that holds only PyTorch weights.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

from memhub.embed.graph import build_encoder, can_build
from memhub.embed.local_model import read_json
from memhub.errors import ConfigurationError, install_hint

__all__ = ["QUANTISATION", "export_onnx", "quantize_int8"]

logger = logging.getLogger(__name__)

#: ONNX opset of the export: onnxruntime 1.18 and later run it.
_OPSET = 17
#: The feed-forward output projection of every layer, as torch's exporter names it (BERT,
#: RoBERTa and MPNet alike; BERT's attention output is attention/output/dense).
_FFN_OUTPUT = re.compile(r"layer\.\d+/output/dense/")
#: Everything that shapes :func:`quantize_int8`'s file: part of a built model's cache key.
QUANTISATION = {
    "tool": "onnxruntime.quantization.quantize_dynamic",
    "per_channel": True,
    "reduce_range": True,
    "weight_type": "QInt8",
    "op_types_to_quantize": ["MatMul"],
    "kept_fp32": _FFN_OUTPUT.pattern,
}


def export_onnx(model_dir: Path, out_dir: Path) -> Path:
    """Write ``out_dir/model.onnx``: the transformer of ``model_dir``, fp32.

    Inputs ``input_ids`` and ``attention_mask`` (batch and sequence axes dynamic), output
    ``last_hidden_state``; pooling stays in memhub. An existing export is reused.

    Raises:
        ConfigurationError: torch or transformers is missing (for an architecture
            :mod:`memhub.embed.graph` does not write), or the export failed.
    """
    target = out_dir / "model.onnx"
    if target.is_file():
        return target
    config = read_json(model_dir / "config.json")
    if can_build(config) and (model_dir / "model.safetensors").is_file():
        logger.info("writing the ONNX graph of %s (once)", model_dir)
        return build_encoder(model_dir, config, target)
    try:
        import torch
        from transformers import AutoModel
    except ImportError as exc:
        raise ConfigurationError(
            f"{model_dir} holds PyTorch weights but no ONNX export; export it once with the "
            f"export extra (torch, transformers, onnx: {install_hint('export')}), then "
            f".venv/bin/python -m memhub.embed.export {model_dir}"
        ) from exc
    logger.info("exporting %s to ONNX (once)", model_dir)
    try:
        model = AutoModel.from_pretrained(str(model_dir))
    except (OSError, ValueError) as exc:
        raise ConfigurationError(f"transformers cannot load {model_dir}: {exc}") from exc
    model.eval()
    example = (torch.ones((2, 8), dtype=torch.int64), torch.ones((2, 8), dtype=torch.int64))
    out_dir.mkdir(parents=True, exist_ok=True)
    # Write beside the target and rename, so an interrupted export leaves nothing half-written.
    fd, partial = tempfile.mkstemp(dir=out_dir, suffix=".onnx.partial")
    os.close(fd)
    try:
        with torch.no_grad():
            torch.onnx.export(
                _hidden_states(model),
                example,
                partial,
                input_names=["input_ids", "attention_mask"],
                output_names=["last_hidden_state"],
                dynamic_axes={
                    "input_ids": {0: "batch", 1: "sequence"},
                    "attention_mask": {0: "batch", 1: "sequence"},
                    "last_hidden_state": {0: "batch", 1: "sequence"},
                },
                opset_version=_OPSET,
                dynamo=False,
            )
        os.chmod(partial, 0o644)  # mkstemp made it private
        os.replace(partial, target)
    finally:
        Path(partial).unlink(missing_ok=True)
    return target


def quantize_int8(fp32: Path, out: Path) -> Path:
    """Quantise ``fp32``'s weights to int8, one scale per output channel (onnxruntime's tool).

    Dynamic quantisation: weights are stored as int8 with a scale per channel, activations
    are quantised per batch at run time, so the MatMuls run on int8 kernels. Two choices,
    measured on all-mpnet-base-v2 against its fp32 vectors (docs/embedders.md):
    ``reduce_range`` (7-bit weights), without which the u8 x s8 products saturate on CPUs
    without VNNI (onnxruntime's documented AVX2 caveat): on an AVX2-only AMD EPYC the vectors
    came out unrelated to fp32 (cosine about 0); and
    the feed-forward output projections (``layer.N/output/dense``, whose inputs carry the
    largest activations) stay fp32, which raised the mean cosine to fp32 from 0.90 to 0.99.

    Raises:
        ConfigurationError: the ``onnx`` package is missing.
    """
    try:
        import onnx
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError as exc:  # onnxruntime.quantization imports onnx
        raise ConfigurationError(
            f"quantising needs the onnx package: {install_hint('export')}"
        ) from exc
    graph = onnx.load(str(fp32), load_external_data=False).graph
    keep_fp32 = [n.name for n in graph.node if _FFN_OUTPUT.search(n.name)]
    del graph
    # The weights go to a data file beside the graph: serialising them into one protobuf
    # would hold them twice more at the end (docs/embedders.md, the build's peak memory).
    # Both files are made under their final names in a directory of their own, then moved
    # (the data first), so a graph under its final name is complete.
    staging = Path(tempfile.mkdtemp(dir=out.parent, prefix=".quantising-"))
    try:
        quantize_dynamic(
            str(fp32),
            str(staging / out.name),
            per_channel=True,
            reduce_range=True,
            weight_type=QuantType.QInt8,
            op_types_to_quantize=["MatMul"],
            nodes_to_exclude=keep_fp32,
            use_external_data_format=True,
        )
        for made in sorted(staging.iterdir(), key=lambda path: path.suffix == ".onnx"):
            os.chmod(made, 0o644)  # the data file is made private
            made.replace(out.parent / made.name)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return out


def _hidden_states(model: Any) -> Any:
    """Wrap a transformers model so the export returns a plain tensor, not a ModelOutput."""
    import torch

    class HiddenStates(torch.nn.Module):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: Any, attention_mask: Any) -> Any:
            return self.model(input_ids=input_ids, attention_mask=attention_mask)[0]

    return HiddenStates()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m memhub.embed.export", description=__doc__)
    parser.add_argument(
        "model_dir", type=Path, help="a Hugging Face / sentence-transformers directory"
    )
    parser.add_argument("--out", type=Path, help="where model.onnx goes (default MODEL_DIR/onnx)")
    parser.add_argument("--int8", action="store_true", help="also write model_qint8.onnx")
    args = parser.parse_args(argv)
    out_dir = args.out or args.model_dir / "onnx"
    fp32 = export_onnx(args.model_dir, out_dir)
    print(fp32)
    if args.int8:
        print(quantize_int8(fp32, out_dir / "model_qint8.onnx"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
