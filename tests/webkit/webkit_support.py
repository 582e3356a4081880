"""Running `bridge-broker open` under xvfb-run for the WebKit host's tests and benchmark."""
import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).parent.parent))
from support import BINARY, ROOT, scratch_dir  # noqa: E402


def open_page(url, *args, timeout=60, wait_for="window.testResult", cache=None):
    """Runs `bridge-broker open URL --exit-after-load --json` under xvfb-run; returns its JSON line."""
    if not shutil.which("xvfb-run"):
        pytest.fail("xvfb-run is missing: run scripts/install-test-deps.sh")
    command = ["xvfb-run", "-a", str(BINARY), "open", url, "--exit-after-load", "--json",
               "--cache-dir", cache or scratch_dir("bridge-webkit-"), "--web-root", str(ROOT),
               "--allow-url", "http://127.0.0.1:*", "--timeout", str(timeout), *args]
    if wait_for:
        command += ["--wait-for", wait_for]
    environment = dict(os.environ)
    completed = subprocess.run(command, capture_output=True, text=True, timeout=timeout + 30, env=environment)
    lines = [line for line in completed.stdout.splitlines() if line.startswith("{")]
    assert completed.returncode == 0 and lines, f"open failed ({completed.returncode}):\n{completed.stdout}\n{completed.stderr}"
    return json.loads(lines[-1])
