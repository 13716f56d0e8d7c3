"""Serve a GGUF model with llama.cpp's own server on loopback (run by tools/llm_tier.py).

Runs in the tier's cache venv, where the ``xllamacpp`` wheel (llama.cpp's C++ server, built
for CPU, from PyPI) is installed; memhub's own environment never imports it. The server
speaks the OpenAI API (chat completions with ``response_format`` JSON schemas, tool calls
through the model's chat template, streaming) until it gets SIGTERM or SIGINT.

Usage: python llm_serve.py MODEL.gguf PORT CONTEXT_TOKENS PARALLEL THREADS
"""

from __future__ import annotations

import signal
import sys
import time


def main(argv: list[str]) -> int:
    import xllamacpp  # type: ignore[import-not-found]  # only in the tier's venv

    model, port, context, parallel, threads = argv[1], *map(int, argv[2:6])
    params = xllamacpp.CommonParams()
    params.model.path = model
    params.port = port  # hostnames default to 127.0.0.1 only
    params.n_parallel = parallel
    params.n_ctx = context * parallel  # llama.cpp divides the context between its slots
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    params.use_jinja = True  # the model's own chat template: tool calls as Qwen writes them
    # Blocked before the server starts its threads, so they inherit the mask and the signals
    # reach sigwait below (llama.cpp's server would otherwise take SIGTERM for itself).
    stop = {signal.SIGTERM, signal.SIGINT}
    signal.pthread_sigmask(signal.SIG_BLOCK, stop)
    started = time.monotonic()
    server = xllamacpp.Server(params)
    print(
        f"serving {model} at {server.listening_address}/v1 "
        f"(loaded in {time.monotonic() - started:.1f} s)",
        flush=True,
    )
    signal.sigwait(stop)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
