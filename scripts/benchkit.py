"""What the browser benchmarks share: Debian's headless Chromium through Selenium (as in
tests/browser), the demo origin's request counts, waiting for a page's result, figures as
"median [min-max]", and a note of the machine's load.

Used by bench_pageload.py, bench_preload.py and bench_shim_load.py.
"""
import json
import os
import pathlib
import shutil
import statistics
import sys
import tempfile
import time
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "examples"))

from selenium import webdriver  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402

CHROMIUM_ARGUMENTS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage")
# Paths the origin counts that are not a page's traffic: the benchmark's own look at the counts,
# and the favicon Chromium asks for on its own.
NOT_PAGE_TRAFFIC = ("/count", "/favicon.ico")


def chromium(arguments=(), performance_log=False):
    """A Selenium driver for Debian's headless Chromium with `arguments` added (the caller quits it)."""
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    for argument in (*CHROMIUM_ARGUMENTS, *arguments):
        options.add_argument(argument)
    if performance_log:
        # The DevTools protocol's Network and Page events (WebSocket frames included), with times.
        options.set_capability("goog:loggingPrefs", {"performance": "ALL"})
    return webdriver.Chrome(options=options, service=Service(executable_path=shutil.which("chromedriver") or "/usr/bin/chromedriver"))


def browser():
    """A Selenium driver for headless Chromium with chromedriver's throwaway profile."""
    return chromium()


class Browser:
    """Headless Chromium with a profile of its own (a new, empty user data directory), so its HTTP
    cache and V8 code cache start empty and live on disk as a user's do. `quit()` deletes it."""

    def __init__(self, performance_log=False):
        self.profile = tempfile.mkdtemp(prefix="bridge-bench-chromium-")
        self.driver = chromium([f"--user-data-dir={self.profile}"], performance_log)

    def quit(self):
        try:
            self.driver.quit()
        finally:
            shutil.rmtree(self.profile, ignore_errors=True)


def origin_counts(origin):
    """The demo origin's request counts by path."""
    with urllib.request.urlopen(origin + "/count") as response:
        return json.load(response)


def origin_requests(origin, paths=None):
    """Requests that reached the origin: to `paths` if given, else every path of page traffic."""
    counts = origin_counts(origin)
    return sum(count for path, count in counts.items() if (path in paths if paths else path not in NOT_PAGE_TRAFFIC))


def wait_for(driver, expression, timeout=60, interval=0.005):
    """Polls `expression` in the page until it is truthy, and returns its value."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = driver.execute_script(f"return {expression} || null")
        if value:
            return value
        time.sleep(interval)
    raise RuntimeError(f"{expression} stayed empty for {timeout} s at {driver.current_url}")


def spread(values, digits=0):
    """`median [min-max]` of `values`."""
    form = f"{{:.{digits}f}}"
    return f"{form.format(statistics.median(values))} [{form.format(min(values))}-{form.format(max(values))}]"


def machine_load():
    """The 1-minute load average and the number of cores, e.g. "load average 3.2 on 2 cores"."""
    try:
        load = pathlib.Path("/proc/loadavg").read_text().split()[0]
    except OSError:
        load = "unknown"
    return f"load average {load} on {os.cpu_count()} cores"
