#!/usr/bin/env python3
"""What fresh memory costs this VM: 1 MiB body files written after an idle pause, right after
another run freed its pages, and with the written files' pages handed back as they go.

    python3 scripts/fresh_pages_cost.py [COUNT] [DIR] [PAUSE_S]

The VM's balloon device reports free memory to the host (virtio-balloon free page reporting:
/sys/bus/virtio/devices/*/features, bit 5); a page reported and then taken again faults in the
host. So a new file costs what its pages cost: much more after a pause (the free pages were
reported) than right after another run deleted its files (those pages were not yet). The third
way writes each file, starts its writeback and drops the pages of the file written WINDOW files
before (POSIX_FADV_DONTNEED), so new files take recently freed pages (tried in the broker and not
kept: docs/BENCHMARKS.md, "What bounds 1 MiB `default` on this VM").

Prints milliseconds per 1 MiB file for each; the files are removed at the end.
"""
import os
import shutil
import sys
import tempfile
import time

count = int(sys.argv[1]) if len(sys.argv) > 1 else 600
base = sys.argv[2] if len(sys.argv) > 2 else tempfile.gettempdir()
pause = float(sys.argv[3]) if len(sys.argv) > 3 else 10
WINDOW = 16
body = os.urandom(1 << 20)


def run(recycle):
    root = tempfile.mkdtemp(prefix="fresh-pages-", dir=base)
    recent = []
    started = time.perf_counter()
    for index in range(count):
        descriptor = os.open(os.path.join(root, str(index)), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.write(descriptor, body)
        if recycle:
            os.posix_fadvise(descriptor, 0, 0, os.POSIX_FADV_DONTNEED)  # starts the writeback
            recent.append(descriptor)
            if len(recent) > WINDOW:
                old = recent.pop(0)
                os.posix_fadvise(old, 0, 0, os.POSIX_FADV_DONTNEED)  # written back by now: dropped
                os.close(old)
        else:
            os.close(descriptor)
    elapsed = time.perf_counter() - started
    for descriptor in recent:
        os.close(descriptor)
    shutil.rmtree(root)
    return elapsed / count * 1000


reporting = []
for features in sorted(os.popen("cat /sys/bus/virtio/devices/*/features 2>/dev/null").read().split()):
    reporting.append(len(features) > 5 and features[5] == "1")
print(f"virtio devices with bit 5 (free page reporting, if a balloon): {sum(reporting)} of {len(reporting)}")
time.sleep(pause)
print(f"new files after a {pause:.0f} s pause        {run(False):.3f} ms per MiB ({count} files)")
print(f"new files right after that run      {run(False):.3f} ms per MiB")
time.sleep(pause)
print(f"after a pause, pages handed back    {run(True):.3f} ms per MiB (window {WINDOW} files)")
