"""Browser fixtures: a page origin, a broker that allows it, and headless Chromium via Selenium."""
import functools
import http.server
import pathlib
import shutil
import threading
import urllib.parse

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service

from support import Broker, ROOT, free_port

PAGES = pathlib.Path(__file__).parent / "pages"
OUT = ROOT / "out"


class PageHandler(http.server.BaseHTTPRequestHandler):
    """Serves pages/*.html with {{BROKER}}, {{PAGE}}, {{ORIGIN}}, {{SNIPPET}} (the shim's bootstrap
    snippet), {{EARLY_FRAMES}} (early_frames.js, the recorders' decoder of early answers) and each
    query parameter `name` as {{QUERY_NAME}} filled in."""

    values = {}

    def do_GET(self):
        name, _, query = self.path.partition("?")
        path = PAGES / (name.lstrip("/") or "page.html")
        if not path.is_file():
            self.send_error(404)
            return
        text = path.read_text()
        for key, value in urllib.parse.parse_qsl(query, keep_blank_values=True):
            text = text.replace("{{QUERY_" + key.upper() + "}}", value)
        for key, value in self.values.items():
            text = text.replace("{{" + key + "}}", value)
        body = text.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="session")
def site():
    page_port = free_port()
    page_origin = f"http://127.0.0.1:{page_port}"
    broker = Broker("--allow-origin", page_origin)
    PageHandler.values = {"BROKER": broker.http, "PAGE": page_origin, "ORIGIN": broker.origin,
                          "SNIPPET": (ROOT / "bridge-js" / "bridge-snippet.js").read_text(),
                          "EARLY_FRAMES": (pathlib.Path(__file__).parent / "early_frames.js").read_text()}
    server = http.server.ThreadingHTTPServer(("127.0.0.1", page_port), PageHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    # "values": what the pages' placeholders are filled with, for a test that adds its own.
    yield {"broker": broker, "page": page_origin, "origin": broker.origin, "values": PageHandler.values}
    server.shutdown()
    broker.stop()


@pytest.fixture(scope="session")
def driver():
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1200,800"):
        options.add_argument(argument)
    service = Service(executable_path=shutil.which("chromedriver") or "/usr/bin/chromedriver")
    browser = webdriver.Chrome(options=options, service=service)
    browser.set_script_timeout(60)
    OUT.mkdir(exist_ok=True)
    yield browser
    browser.quit()


@pytest.fixture
def page(site, driver):
    """Opens the test page and returns a function that runs an async JS body in it."""
    driver.get(site["page"] + "/page.html")

    def run(body, **values):
        script = "const done = arguments[arguments.length - 1];\n"
        for key, value in {"ORIGIN": site["origin"], **values}.items():
            script += f"const {key} = {repr(value) if isinstance(value, str) else value};\n"
        script += ("(async () => {\n" + body + "\n})().then((value) => done({value}), "
                   "(error) => done({error: String(error && error.message || error), name: error && error.name, "
                   "code: error && error.code, type: error && error.constructor && error.constructor.name}));")
        return driver.execute_async_script(script)

    return run
