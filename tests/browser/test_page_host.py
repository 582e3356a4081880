"""A host that takes a page's document from the broker (scripts/page_host.py), in headless Chromium.

After `preload` with `includePage`, loading the page through the host reaches the origin not
once: the document and every resource come from the broker's cache. The cold load beside it
shows what the same load costs without the preload, so the test cannot pass by counting wrong.
"""
import json
import sys
import urllib.request

import pytest

from support import Broker, ROOT

sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "examples"))
from headless_client import BridgeConnection  # noqa: E402
from page_host import PageHost  # noqa: E402

RESOURCES = 6


def origin_requests(broker):
    with urllib.request.urlopen(broker.origin + "/count") as response:
        counts = json.load(response)
    # Chromium asks the origin for /favicon.ico on its own; that is not the page's traffic.
    return sum(count for path, count in counts.items() if path not in ("/count", "/favicon.ico"))


@pytest.fixture
def hosted():
    broker = Broker()
    client = BridgeConnection(broker.url)
    host = PageHost(BridgeConnection(broker.url))
    yield broker, client, host
    host.close()
    client.sock.close()
    broker.stop()


def test_a_page_preloaded_with_include_page_loads_without_the_origin(hosted):
    broker, client, host = hosted
    page = f"{broker.origin}/page?n={RESOURCES}&size=2000&page-cc=max-age%3D60&broker={broker.http}"

    before = origin_requests(broker)
    cold = host.load(page + "&cold=1", "window.preloadDemo")
    assert "error" not in cold, cold
    assert cold["resources"] == RESOURCES and cold["bytes"] == RESOURCES * 2000
    assert origin_requests(broker) - before == 1 + RESOURCES  # the document and every resource

    warm_page = page + "&warm=1"
    client.post("cache.clear", None, on_frame=lambda frame: None)  # the cold load stored the resources
    reply = client.post("preload", {"page": warm_page, "includePage": True}, on_frame=lambda frame: None)
    assert reply["ok"], reply
    assert reply["body"]["totals"]["stored"] == RESOURCES + 1, reply["body"]

    before = origin_requests(broker)
    warm = host.load(warm_page, "window.preloadDemo")
    assert "error" not in warm, warm
    assert warm["resources"] == RESOURCES and warm["bytes"] == RESOURCES * 2000
    assert origin_requests(broker) - before == 0
