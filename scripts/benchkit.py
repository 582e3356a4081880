"""What the browser benchmarks share: Debian's headless Chromium through Selenium (as in
tests/browser), the demo origin's request counts, waiting for a page's result, figures as
"median [min-max]", and a note of the machine's load.

Used by bench_pageload.py, bench_preload.py, bench_shim_load.py, bench_shim_injected.py and bench_response.py. The two DevTools classes are
for what Selenium's own commands cannot do (a page session may not create browser contexts).
"""
import functools
import http.server
import json
import os
import pathlib
import shutil
import statistics
import sys
import threading
import time
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "examples"))

import websocket  # noqa: E402  (websocket-client, installed with selenium)
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


class DevTools:
    """The DevTools protocol on a Selenium-driven Chromium's browser target (not a page's), for
    what only it may do: browser contexts, tracing."""

    def __init__(self, driver):
        address = driver.capabilities["goog:chromeOptions"]["debuggerAddress"]
        with urllib.request.urlopen(f"http://{address}/json/version") as response:
            endpoint = json.load(response)["webSocketDebuggerUrl"]
        self.socket = websocket.create_connection(endpoint, suppress_origin=True)
        self.next_id = 0

    def call(self, method, **params):
        """Sends a command and returns its result (events that arrive meanwhile are dropped)."""
        self.next_id += 1
        self.socket.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            message = json.loads(self.socket.recv())
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})

    def start_tracing(self, categories):
        """Starts a Chrome trace of the whole browser (every process) with `categories`."""
        self.call("Tracing.start", transferMode="ReportEvents",
                  traceConfig={"includedCategories": list(categories), "recordMode": "recordAsMuchAsPossible"})

    def stop_tracing(self):
        """Ends the trace started by `start_tracing` and returns its events."""
        self.next_id += 1
        self.socket.send(json.dumps({"id": self.next_id, "method": "Tracing.end", "params": {}}))
        events = []
        while True:
            message = json.loads(self.socket.recv())
            if message.get("method") == "Tracing.dataCollected":
                events.extend(message["params"]["value"])
            elif message.get("method") == "Tracing.tracingComplete":
                return events
            elif message.get("id") == self.next_id and "error" in message:
                raise RuntimeError(f"Tracing.end: {message['error']}")

    def close(self):
        self.socket.close()


class BrowserContext:
    """A fresh browser context (its own empty HTTP cache, cookies and storage, as a new profile
    has; held in memory) in `driver`'s Chromium, with one tab the driver is switched to. `tab()`
    opens another; `close()` disposes of the context and switches back."""

    def __init__(self, driver, devtools):
        self.driver = driver
        self.devtools = devtools
        self.home = driver.current_window_handle
        self.id = devtools.call("Target.createBrowserContext")["browserContextId"]
        self.page = self.tab()
        driver.switch_to.window(self.page)

    def tab(self):
        return self.devtools.call("Target.createTarget", url="about:blank", browserContextId=self.id)["targetId"]

    def close(self):
        self.driver.switch_to.window(self.home)
        self.devtools.call("Target.disposeBrowserContext", browserContextId=self.id)


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


def await_global(driver, name, timeout=60):
    """Waits, without polling, until the page assigns `window[name]`, and returns the value.

    One DevTools `Runtime.evaluate` that awaits a promise: the promise resolves at once when the
    global is there, else from a setter put in its place that the page's assignment runs. Unlike
    `wait_for`, nothing runs in the page or in the browser while it waits (the 5 ms polls of
    `wait_for` are a script task on the page's main thread and a round trip through chromedriver
    and the browser each, which a 2-core machine pays for during the load being measured)."""
    expression = f"""new Promise((resolve) => {{
      const name = {json.dumps(name)};
      if (window[name]) return resolve(window[name]);
      setTimeout(() => resolve({{error: `${{name}} stayed empty for {timeout} s`}}), {timeout * 1000});
      Object.defineProperty(window, name, {{configurable: true, enumerable: true, get() {{ return undefined; }},
        set(value) {{
          Object.defineProperty(window, name, {{value, writable: true, configurable: true, enumerable: true}});
          resolve(value);
        }}}});
    }})"""
    answer = driver.execute_cdp_cmd("Runtime.evaluate", {"expression": expression, "awaitPromise": True, "returnByValue": True})
    if "exceptionDetails" in answer:
        raise RuntimeError(f"waiting for {name}: {answer['exceptionDetails']}")
    return answer["result"].get("value")


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    """Serves files without a log line per request."""

    def log_message(self, *_):
        pass


def static_server(root):
    """An HTTP server of the files under `root` on 127.0.0.1 and an OS-chosen port, serving on a
    daemon thread; `server_port` is its port, `shutdown()` stops it."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(QuietHandler, directory=str(root)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


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
