"""WAL positions as the read router compares them (pure logic; the replica itself is tested in
tests/ops/test_replicas.py)."""

from __future__ import annotations

from memhub.store.postgres.replicas import lsn_value


def test_lsn_values_order_as_postgresql_orders_them() -> None:
    positions = ["0/0", "0/16B3748", "0/FFFFFFFF", "1/0", "1/A", "A/0", "10/1"]
    values = [lsn_value(p) for p in positions]
    assert values == sorted(values)
    assert lsn_value("1/0") == 1 << 32
    assert lsn_value("0/16B3748") == 0x16B3748
