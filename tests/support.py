"""Helpers shared by the Python tests: a real broker process and its demo origin on free ports."""
import atexit
import os
import pathlib
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
# The tests use the debug build; benchmarks point BRIDGE_BROKER_BINARY at the release one.
BINARY = pathlib.Path(os.environ.get("BRIDGE_BROKER_BINARY", ROOT / ".build" / "debug" / "bridge-broker"))
sys.path.insert(0, str(ROOT / "examples"))


_SCRATCH_DIRS = []


def scratch_dir(prefix):
    """A new directory under the system's temporary directory, removed when this Python process
    exits: a broker's cache (up to 10 MB each) outlives the broker, since a test may start another
    broker on it, but not the test run (`make test` and the benchmarks start hundreds of brokers)."""
    path = tempfile.mkdtemp(prefix=prefix)
    _SCRATCH_DIRS.append(path)
    return path


@atexit.register
def _remove_scratch_dirs():
    for path in _SCRATCH_DIRS:
        shutil.rmtree(path, ignore_errors=True)


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def stop_process(process, timeout=10):
    """SIGTERM, then SIGKILL if `process` has not exited within `timeout` seconds; waits for it."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


class Broker:
    """A `bridge-broker serve` process; stopped with SIGTERM."""

    def __init__(self, *args, allow_loopback=True, cache=None, port=0, origin_port=None):
        """Starts `serve` with `args`; `{origin}` in an argument becomes the demo origin's URL.

        `allow_loopback` adds `--allow-url http://127.0.0.1:*`; without it the broker runs with
        the default URL rules, as `make run` does. `cache` names the cache directory; `port` and
        `origin_port` fix the broker's and the demo origin's ports (a broker restarted as the same
        one), free ones by default."""
        self.origin_port = origin_port or free_port()
        self.cache = cache or scratch_dir("bridge-py-")
        origin = f"http://127.0.0.1:{self.origin_port}"
        rules = ["--allow-url", "http://127.0.0.1:*"] if allow_loopback else []
        command = [str(BINARY), "serve", "--port", str(port), "--demo-origin", str(self.origin_port),
                   "--cache-dir", self.cache, "--web-root", str(ROOT), *rules,
                   *(argument.replace("{origin}", origin) for argument in args)]
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.lines = []
        deadline = time.time() + 60
        while time.time() < deadline:
            line = self.process.stdout.readline()
            if not line:
                raise RuntimeError("the broker exited:\n" + "".join(self.lines))
            self.lines.append(line)
            match = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
            if match and "bridge-broker" in line:
                self.port = int(match.group(1))
                break
        else:
            raise RuntimeError("the broker did not start")
        self.url = f"ws://127.0.0.1:{self.port}/bridge"
        self.http = f"http://127.0.0.1:{self.port}"
        self.origin = f"http://127.0.0.1:{self.origin_port}"

    def stop(self):
        stop_process(self.process)
