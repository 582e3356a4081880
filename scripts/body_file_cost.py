#!/usr/bin/env python3
"""What writing a 1 MiB body file costs on this machine's file system, three ways.

    python3 scripts/body_file_cost.py [COUNT] [DIR]

- new:       a new file per body, all kept (what the cache does: every stored response is a new
             file, and the page cache grows by a MiB each time);
- replace:   a new file per body, the one written 8 bodies before deleted first (the page cache
             stays the same size: freed pages are taken again);
- overwrite: the bytes written over one of 8 existing files (no new pages at all).

Prints milliseconds per MiB for each (docs/BENCHMARKS.md, "Upstream exchanges on the service
thread"). The directory is emptied first and removed at the end.
"""
import os
import shutil
import sys
import tempfile
import time

count = int(sys.argv[1]) if len(sys.argv) > 1 else 400
base = sys.argv[2] if len(sys.argv) > 2 else tempfile.gettempdir()
root = tempfile.mkdtemp(prefix="body-file-cost-", dir=base)
body = os.urandom(1 << 20)


def run(mode):
    for name in os.listdir(root):
        os.unlink(os.path.join(root, name))
    started = time.perf_counter()
    for index in range(count):
        if mode == "new":
            fd = os.open(os.path.join(root, f"n{index}"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        elif mode == "replace":
            path = os.path.join(root, f"r{index % 8}")
            if os.path.exists(path):
                os.unlink(path)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        else:
            fd = os.open(os.path.join(root, f"o{index % 8}"), os.O_WRONLY | os.O_CREAT, 0o600)
        os.pwrite(fd, body, 0)
        os.close(fd)
    return (time.perf_counter() - started) * 1000 / count


try:
    for mode in ("new", "replace", "overwrite", "new"):
        print(f"{mode:9} {run(mode):6.3f} ms per MiB ({count} bodies)")
finally:
    shutil.rmtree(root, ignore_errors=True)
