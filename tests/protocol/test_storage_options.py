"""`serve` and `open` share one group of storage options (cache dir, capacities, third-party
cookies): both refuse the same bad values with the same clear error, before starting anything."""
import subprocess

import pytest

from support import BINARY


@pytest.mark.parametrize("command", [["serve"], ["open", "http://127.0.0.1:9/"]])
@pytest.mark.parametrize("option, message", [
    ("--memory-capacity=-1", "capacities must not be negative"),
    ("--disk-capacity=-1", "capacities must not be negative"),
    ("--third-party-cookies=sometimes", "Please provide one of 'block' and 'allow'"),
])
def test_bad_storage_options_are_refused(command, option, message):
    result = subprocess.run([str(BINARY), *command, option], capture_output=True, text=True, timeout=30)
    assert result.returncode != 0
    assert message in result.stderr
