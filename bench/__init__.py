"""Benchmark harness for memhub: hot-path latency, recall on LoCoMo, and Mem0 side by side.

Run it with ``python -m bench`` (see ``bench/README.md``). Nothing here ships in the wheel.
"""
