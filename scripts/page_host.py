"""A minimal host that loads a page's document through the broker, in headless Chromium.

A native app that embeds a web view can answer the view's page requests itself (WKWebView's
WKURLSchemeHandler or loadHTMLString(_:baseURL:), Android's shouldInterceptRequest, WebView2's
WebResourceRequested). Such a host can take the document from the broker's cache, where
`preload` with `includePage` put it, instead of from the network. This class plays that host for
Chromium through the DevTools protocol: every main-frame document request is paused and answered
with a `fetch` post to the broker (which serves it from its cache or from the origin). Everything
else (the shim, the WebSocket, the page's own requests) goes on as usual.

Chromium treats a document it did not fetch itself as coming from an unknown (public) address,
and its local network access checks would then refuse the page the loopback broker: the host
starts Chromium with those checks off, as an embedding app configures its web view.
"""
import json
import pathlib
import re
import shutil
import subprocess
import tempfile
import time
import urllib.request

import websocket  # websocket-client, installed with selenium


class PageHost:
    """Headless Chromium whose page documents are fetched through the broker connection `bridge`."""

    def __init__(self, bridge):
        self.bridge = bridge
        self.profile = tempfile.mkdtemp(prefix="bridge-host-")
        log = pathlib.Path(self.profile) / "chromium.log"
        self.process = subprocess.Popen(
            [shutil.which("chromium") or "/usr/bin/chromium", "--headless=new", "--no-sandbox", "--disable-gpu",
             "--disable-dev-shm-usage", "--disable-features=LocalNetworkAccessChecks", "--remote-debugging-port=0",
             f"--user-data-dir={self.profile}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log.open("w"))
        deadline = time.time() + 30
        while not (match := re.search(r"DevTools listening on ws://([^/\s]+)/", log.read_text())):
            if time.time() > deadline or self.process.poll() is not None:
                raise RuntimeError("chromium did not start:\n" + log.read_text())
            time.sleep(0.05)
        targets = json.load(urllib.request.urlopen(f"http://{match.group(1)}/json/list"))
        page = next(target for target in targets if target["type"] == "page")
        self.socket = websocket.create_connection(page["webSocketDebuggerUrl"], suppress_origin=True)
        self.next_id = 0
        self.call("Fetch.enable", patterns=[{"urlPattern": "*", "resourceType": "Document", "requestStage": "Request"}])

    def call(self, method, **params):
        """Sends a DevTools command and returns its result, serving paused documents meanwhile."""
        self.next_id += 1
        mine = self.next_id
        self.socket.send(json.dumps({"id": mine, "method": method, "params": params}))
        while True:
            message = json.loads(self.socket.recv())
            if message.get("id") == mine:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
            if message.get("method") == "Fetch.requestPaused":
                self.serve(message["params"])

    def serve(self, paused):
        """Answers one paused document request with the broker's response to it."""
        request = paused["request"]
        reply = self.bridge.post("fetch", {
            "url": request["url"], "method": request["method"], "headers": list(request["headers"].items()),
            "responseBody": "base64", "progress": False}, on_frame=lambda frame: None)
        if not reply["ok"]:
            self.send("Fetch.failRequest", requestId=paused["requestId"], errorReason="Failed")
            return
        body = reply["body"]
        self.send("Fetch.fulfillRequest", requestId=paused["requestId"], responseCode=body["status"],
                  responseHeaders=[{"name": name, "value": value} for name, value in body["headers"]],
                  body=body["body"] or "")

    def send(self, method, **params):
        """A command whose result nobody waits for (id 0 is never awaited)."""
        self.socket.send(json.dumps({"id": 0, "method": method, "params": params}))

    def load(self, url, ready_expression, timeout=60):
        """Navigates to `url` and returns the value of `ready_expression` once it is truthy."""
        self.call("Page.navigate", url=url)
        deadline = time.time() + timeout
        while time.time() < deadline:
            result = self.call("Runtime.evaluate", expression=f"JSON.stringify({ready_expression} || null)",
                               returnByValue=True)["result"].get("value")
            if result and result != "null":
                return json.loads(result)
            time.sleep(0.01)
        raise RuntimeError(f"{url} did not finish loading")

    def close(self):
        self.socket.close()
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
        shutil.rmtree(self.profile, ignore_errors=True)
