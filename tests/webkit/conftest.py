"""Fixtures for the WebKit host's tests: a local origin, and `bridge-broker open` under xvfb-run."""
import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).parent))
sys.path.insert(0, str(pathlib.Path(__file__).parent.parent))
from origin import Origin  # noqa: E402


@pytest.fixture
def origin():
    instance = Origin()
    yield instance
    instance.stop()


@pytest.fixture(scope="session")
def other_origin():
    """A second origin, for cross-origin requests."""
    instance = Origin()
    yield instance
    instance.stop()
