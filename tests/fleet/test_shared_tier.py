"""Two brokers with separate caches behind one real squid: what one broker fetched, the other
gets from the shared tier without reaching the origin; no-store and private responses are not
shared (docs/FLEET.md)."""
import json
import urllib.request

from headless_client import BridgeConnection


def fetch(broker, url):
    connection = BridgeConnection(broker.url)
    connection.receive()
    reply = connection.post("fetch", {"url": url, "responseBody": "text"}, on_frame=lambda frame: None)
    connection.sock.close()
    assert reply["ok"], reply
    return reply["body"]


def origin_count(origin, path):
    with urllib.request.urlopen(origin + "/count") as response:
        return json.load(response).get(path, 0)


def header(reply, name):
    return next((value for key, value in reply["headers"] if key == name), None)


def test_a_second_broker_gets_what_the_first_fetched_from_the_shared_tier(make_broker, squid):
    first = make_broker("--upstream-proxy", squid.url)
    second = make_broker("--upstream-proxy", squid.url)
    assert first.cache != second.cache
    url = first.origin + "/cached?cc=max-age%3D600&etag=fleet&size=2048"
    before = origin_count(first.origin, "/cached")
    one = fetch(first, url)
    assert one["status"] == 200 and one["cache"]["status"] == "miss"
    assert origin_count(first.origin, "/cached") == before + 1
    two = fetch(second, url)   # cold in the second broker's own cache
    assert two["cache"]["status"] == "miss" and two["body"] == one["body"]
    assert origin_count(first.origin, "/cached") == before + 1, "the second broker's fetch never reached the origin"
    assert "HIT" in (header(two, "x-cache") or ""), two["headers"]
    assert any("HIT/200" in line and "etag=fleet" in line for line in squid.access_log())


def test_no_store_and_private_responses_are_not_shared(make_broker, squid):
    first = make_broker("--upstream-proxy", squid.url)
    second = make_broker("--upstream-proxy", squid.url)
    for cc, tag in (("no-store", "nostore"), ("private%2C%20max-age%3D600", "private")):
        url = f"{first.origin}/cached?cc={cc}&etag={tag}"
        before = origin_count(first.origin, "/cached")
        fetch(first, url)
        fetch(second, url)
        assert origin_count(first.origin, "/cached") == before + 2, f"{cc}: each broker reached the origin"
    # The private response is still each broker's own to keep (a private cache).
    private = f"{first.origin}/cached?cc=private%2C%20max-age%3D600&etag=private"
    before = origin_count(first.origin, "/cached")
    assert fetch(first, private)["cache"]["status"] == "hit"
    assert origin_count(first.origin, "/cached") == before
