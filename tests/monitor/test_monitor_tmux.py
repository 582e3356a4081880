"""`bridge-broker monitor` on a real terminal: tmux runs it, capture-pane reads the screen."""
import shutil
import subprocess
import time

import pytest

from support import BINARY, Broker

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


def tmux(*args):
    return subprocess.run(["tmux", *args], check=True, capture_output=True, text=True).stdout


def screen_until(session, predicate, timeout=30):
    deadline = time.time() + timeout
    text = ""
    while time.time() < deadline:
        text = tmux("capture-pane", "-p", "-t", session)
        if predicate(text):
            return text
        time.sleep(0.1)
    raise AssertionError("the screen never matched:\n" + text)


def test_the_live_view_shows_a_large_download_and_reconnects():
    broker = Broker()
    session = f"bridge-monitor-{broker.port}"
    tmux("new-session", "-d", "-x", "120", "-y", "30", "-s", session,
         f"{BINARY} monitor --url {broker.url}")
    download = None
    try:
        screen_until(session, lambda text: "connected" in text)
        # 40 chunks of 100 kB, 100 ms apart: four seconds of download to watch.
        url = f"{broker.origin}/slow?chunks=40&delay=100&size=100000"
        download = subprocess.Popen([str(BINARY), "fetch", "--broker", broker.url, url],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        text = screen_until(session, lambda text: "/slow?chunks=40" in text and "progress" in text
                            and any(unit in text for unit in (" KB", " MB")))
        line = next(line for line in text.splitlines() if "/slow?chunks=40" in line)
        assert "█" in line or "░" in line, line
        assert "/s" in line and "GET http://127.0.0.1" in line, line
        assert "hit ratio" in text and "active" in text
        assert "\x1b" not in text, "capture-pane shows the screen, not the escape codes"
        download.wait(timeout=30)
        done = screen_until(session, lambda text: "1 done" in text)
        assert "0 active" in done
        # Only one screen's worth of lines: the view is redrawn in place, not appended.
        assert done.count("bridge-broker monitor") == 1

        broker.stop()
        screen_until(session, lambda text: "reconnecting" in text or "cannot reach" in text)
    finally:
        if download and download.poll() is None:
            download.kill()
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
        broker.stop()
