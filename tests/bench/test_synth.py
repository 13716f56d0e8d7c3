"""Unit tests for bench.synth: the synthetic stream is deterministic and sliceable."""

from bench import synth


def test_slices_reproduce_the_stream() -> None:
    whole = list(synth.memories(0, 50, users=7))
    assert list(synth.memories(20, 30, users=7)) == whole[20:30]
    assert {t.user_id for t in whole} == {f"hot-u{i}" for i in range(7)}


def test_queries_are_seeded() -> None:
    assert synth.queries(5, users=3) == synth.queries(5, users=3)
    assert synth.queries(5, users=3, seed=1) != synth.queries(5, users=3, seed=2)
