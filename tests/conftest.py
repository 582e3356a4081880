"""Fixtures shared by the Python tests."""
import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from support import Broker  # noqa: E402


@pytest.fixture(scope="session")
def broker():
    instance = Broker()
    yield instance
    instance.stop()


@pytest.fixture
def make_broker():
    started = []

    def make(*args, **kwargs):
        instance = Broker(*args, **kwargs)
        started.append(instance)
        return instance

    yield make
    for instance in started:
        instance.stop()
