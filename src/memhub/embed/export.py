"""Export a Hugging Face model directory to ONNX once, and quantise it to int8.

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
import shutil
import tempfile
from pathlib import Path
from typing import Any

from memhub.embed.graph import build_encoder, can_build
from memhub.embed.local_model import read_json
from memhub.embed.onnx_int8 import ROW_QUANTISATION
from memhub.errors import ConfigurationError, install_hint

__all__ = ["QUANTISATION", "export_onnx", "quantize_int8"]

logger = logging.getLogger(__name__)

#: ONNX opset of the export: onnxruntime 1.18 and later run it.
_OPSET = 17
#: Everything that shapes :func:`quantize_int8`'s file: part of a built model's cache key.
QUANTISATION = ROW_QUANTISATION


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
    """Quantise ``fp32``'s linear layers to int8 with a scale per token row (batch-independent).

    :func:`memhub.embed.onnx_int8.quantize_rows` does it: weights int8 with one scale per
    output channel (7 bits, safe on AVX2 without VNNI), each token's activations quantised
    at run time with a scale of its own, so a text's vector does not depend on what it is
    batched with and the encoder runs batches again. Measured on all-mpnet-base-v2 against
    its fp32 vectors, with every linear layer in int8: closer to fp32 than onnxruntime's
    dynamic quantisation (one scale per batch, feed-forward outputs kept fp32) and about 2x
    the texts per CPU-second of one-text runs (docs/embedders.md, bench/encoder_speed.py).

    Raises:
        ConfigurationError: the ``onnx`` package is missing.
    """
    try:
        import onnx  # noqa: F401 - the rewrite reads and writes ONNX protobufs
    except ImportError as exc:
        raise ConfigurationError(
            f"quantising needs the onnx package: {install_hint('export')}"
        ) from exc
    from memhub.embed.onnx_int8 import quantize_rows

    # Both files are made under their final names in a directory of their own, then moved
    # (the data first), so a graph under its final name is complete.
    staging = Path(tempfile.mkdtemp(dir=out.parent, prefix=".quantising-"))
    try:
        quantize_rows(fp32, staging / out.name)
        for made in sorted(staging.iterdir(), key=lambda path: path.suffix == ".onnx"):
            os.chmod(made, 0o644)
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
