"""Debian's squid as the shared cache tier of a fleet of brokers, on a free loopback port with a
generated configuration (docs/FLEET.md explains each line). Used by tests/fleet and
scripts/bench_fleet.py."""
import os
import shutil
import socket
import subprocess
import tempfile
import time

from support import free_port, stop_process

# Memory-only cache (no cache_dir), every file in a temporary directory, loopback clients only,
# and loopback origins allowed (Debian's default configuration proxies only to Safe_ports and
# its clients from localnet; nothing here denies to_localhost, which the tests need).
CONFIG = """\
http_port 127.0.0.1:{port}
visible_hostname bridge-fleet-squid
acl brokers src 127.0.0.0/8
http_access allow brokers
http_access deny all
cache_mem 256 MB
maximum_object_size_in_memory 8 MB
memory_cache_mode always
pid_filename {dir}/squid.pid
cache_log {dir}/cache.log
access_log stdio:{dir}/access.log
cache_store_log none
netdb_filename none
coredump_dir {dir}
pinger_enable off
logfile_rotate 0
strip_query_terms off
shutdown_lifetime 0 seconds
"""


class SquidUnavailable(Exception):
    """squid is not installed here (the only reason the fleet tests skip)."""


def squid_binary():
    return shutil.which("squid") or next((path for path in ("/usr/sbin/squid",) if os.access(path, os.X_OK)), None)


class Squid:
    """A squid process in the foreground (-N); `url` is its proxy URL."""

    def __init__(self):
        binary = squid_binary()
        if binary is None:
            raise SquidUnavailable("squid is not installed (scripts/install-test-deps.sh installs Debian's squid)")
        self.dir = tempfile.mkdtemp(prefix="bridge-squid-")
        # Started as root, squid runs as its cache_effective_user (proxy), which must write here.
        os.chmod(self.dir, 0o777)
        self.port = free_port()
        self.config = os.path.join(self.dir, "squid.conf")
        with open(self.config, "w") as file:
            file.write(CONFIG.format(port=self.port, dir=self.dir))
        self.output = open(os.path.join(self.dir, "squid.out"), "w")
        self.process = subprocess.Popen([binary, "-N", "-f", self.config], stdout=self.output, stderr=subprocess.STDOUT)
        self.url = f"http://127.0.0.1:{self.port}"
        deadline = time.time() + 30
        while time.time() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"squid exited with {self.process.returncode}:\n{self.log()}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError("squid did not start listening within 30 s:\n" + self.log())

    def log(self):
        text = ""
        for name in ("squid.out", "cache.log"):
            path = os.path.join(self.dir, name)
            if os.path.exists(path):
                with open(path, errors="replace") as file:
                    text += file.read()[-3000:]
        return text

    def access_log(self):
        """The access log's lines: `... TCP_MISS/200 ... GET http://... ...`."""
        path = os.path.join(self.dir, "access.log")
        if not os.path.exists(path):
            return []
        with open(path, errors="replace") as file:
            return file.read().splitlines()

    def stop(self):
        stop_process(self.process, timeout=15)
        self.output.close()
        shutil.rmtree(self.dir, ignore_errors=True)
