"""libwebsockets contexts created while others are serviced and destroyed, on several threads and
without a lock: what the bench did before commit 4bab172 (docs/RELIABILITY.md, the heap
corruption). Built with AddressSanitizer, which sees every malloc and free in the process,
libwebsockets' own included: a double free or a use after free there fails the test."""
import pathlib
import shutil
import subprocess

import pytest

SOURCE = pathlib.Path(__file__).with_name("lws_contexts.c")


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")
def test_concurrent_context_creation_and_destruction_without_the_lock(tmp_path):
    binary = tmp_path / "lws_contexts"
    subprocess.run(["cc", "-O1", "-g", "-fsanitize=address", str(SOURCE), "-lwebsockets", "-lpthread", "-o", str(binary)],
                   check=True)
    run = subprocess.run([str(binary), "4", "300"], capture_output=True, text=True, timeout=300,
                         env={"ASAN_OPTIONS": "detect_leaks=1", "PATH": "/usr/bin:/bin"})
    assert "AddressSanitizer" not in run.stderr and "LeakSanitizer" not in run.stderr, run.stderr[-4000:]
    assert run.returncode == 0, run.stdout + run.stderr[-2000:]
    contexts, echoes = (int(word) for word in run.stdout.replace(",", "").split()[0:4:2])
    assert contexts == 1200 and echoes > 1100, run.stdout
