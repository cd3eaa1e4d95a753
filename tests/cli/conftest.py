"""CLI test fixtures: every command configures the ``miofind`` logger (level, stderr handler); each
test gets it back as it was, so no level or handler leaks into other tests."""

import logging

import pytest


@pytest.fixture(autouse=True)
def restore_miofind_logger():
    lg = logging.getLogger("miofind")
    level, handlers = lg.level, list(lg.handlers)
    yield
    lg.setLevel(level)
    lg.handlers[:] = handlers
