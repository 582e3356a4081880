"""`bridge-broker serve --preload-manifest URL --preload-interval S`: the broker preloads a
manifest's resources once started and again every S seconds, so a page's first request is a hit."""
import json
import time
import urllib.request

from headless_client import BridgeConnection

MANIFEST = "{origin}/manifest?n=4&size=300&max-age=600"


def origin_counts(broker):
    with urllib.request.urlopen(broker.origin + "/count") as response:
        return json.load(response)


def wait_for(predicate, seconds=30):
    deadline = time.time() + seconds
    while time.time() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("timed out")


def test_serve_preloads_a_manifest_at_startup_and_refreshes_it(make_broker):
    broker = make_broker("--preload-manifest", MANIFEST, "--preload-interval", "1")
    # The startup preload reads the manifest and stores its four resources.
    wait_for(lambda: origin_counts(broker).get("/cached", 0) >= 4)
    connection = BridgeConnection(broker.url)
    connection.receive()  # hello
    resource = broker.origin + "/cached?cc=max-age%3D600&size=300&r=2"

    def fetched():
        reply = connection.post("fetch", {"url": resource, "responseBody": "none"}, on_frame=lambda frame: None)
        assert reply["ok"], reply
        return reply["body"]

    # The resource may still be committing when the origin has answered: wait for the hit.
    body = wait_for(lambda: (lambda b: b if b["cache"]["status"] == "hit" else None)(fetched()))
    assert body["status"] == 200
    assert dict(body["headers"])["cache-status"].startswith("bridge-broker; hit")

    # The refresh runs every second: the manifest is read again. Its resources are fresh in the
    # cache, so the refresh must not fetch them upstream again.
    manifests = origin_counts(broker)["/manifest"]
    cached = origin_counts(broker)["/cached"]
    wait_for(lambda: origin_counts(broker)["/manifest"] >= manifests + 2, seconds=15)
    assert origin_counts(broker)["/cached"] == cached


def test_serve_refuses_a_manifest_that_is_not_an_http_url(tmp_path):
    import subprocess
    from support import BINARY
    result = subprocess.run([str(BINARY), "serve", "--port", "0", "--cache-dir", str(tmp_path),
                             "--preload-manifest", "ftp://example.com/manifest.json"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode != 0
    assert "--preload-manifest must be an absolute http(s) URL" in result.stderr
