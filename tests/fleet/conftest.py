"""Fixtures of the fleet tests: a real squid as the shared tier."""
import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).parent.parent))
from squid import Squid, SquidUnavailable  # noqa: E402


@pytest.fixture(scope="module")
def squid():
    try:
        instance = Squid()
    except SquidUnavailable as reason:
        pytest.skip(str(reason))
    yield instance
    instance.stop()
