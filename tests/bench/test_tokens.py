"""Unit test for the npm-to-tiktoken rank conversion (no npm, no network)."""

from bench.tokens import npm_ranks_to_tiktoken


def test_consecutive_ranks_from_offset() -> None:
    npm_form = "! 0 IQ== Ig==\n! 5 Iw==\n"
    assert npm_ranks_to_tiktoken(npm_form) == b"IQ== 0\nIg== 1\nIw== 5\n"
