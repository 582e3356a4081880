"""GET /metrics: Prometheus text that a Prometheus parser (the prometheus-client package's) reads,
with the counts the broker's work should produce, protected by the token when one is set."""
import urllib.error
import urllib.request

import pytest
from headless_client import BridgeConnection
from prometheus_client.parser import text_string_to_metric_families


def scrape(broker, token=None, bearer=None):
    url = broker.http + "/metrics" + (f"?token={token}" if token else "")
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {bearer}"} if bearer else {})
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        text = response.read().decode()
    samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def value(samples, name, **labels):
    return samples.get((name, tuple(sorted(labels.items()))), 0)


def histogram_count(samples, **labels):
    return value(samples, "bridge_request_duration_seconds_count", **labels)


def post(connection, name, body):
    return connection.post(name, body, on_frame=lambda frame: None)


def test_metrics_count_what_the_broker_did(make_broker):
    broker = make_broker()
    before = scrape(broker)
    connection = BridgeConnection(broker.url)
    connection.receive()
    path = broker.origin + "/cached?cc=max-age%3D600&etag=m&size=3000"
    assert post(connection, "fetch", {"url": path})["ok"]                      # miss, stored
    assert post(connection, "fetch", {"url": path})["ok"]                      # hit
    assert post(connection, "fetch", {"url": broker.origin + "/status/404"})["body"]["status"] == 404
    assert post(connection, "fetch", {"url": "http://10.0.0.1/"})["error"]["code"] == "forbidden"
    assert post(connection, "echo", {"x": 1})["ok"]
    reply = post(connection, "preload", {"urls": [broker.origin + "/cached?cc=max-age%3D600&etag=p&size=10", path]})
    assert reply["ok"] and reply["body"]["totals"]["stored"] == 1 and reply["body"]["totals"]["cached"] == 1
    after = scrape(broker)
    connection.sock.close()

    def delta(name, **labels):
        return value(after, name, **labels) - value(before, name, **labels)

    assert delta("bridge_posts_total", handler="fetch", outcome="ok") == 3
    assert delta("bridge_posts_total", handler="fetch", outcome="forbidden") == 1
    assert delta("bridge_posts_total", handler="echo", outcome="ok") == 1
    assert delta("bridge_posts_total", handler="preload", outcome="ok") == 1
    assert delta("bridge_upstream_requests_total", status_class="2xx") == 2     # the miss and the preload's store
    assert delta("bridge_upstream_requests_total", status_class="4xx") == 1
    assert delta("bridge_cache_hits_total") == 2                                # the fetch and the preload's cached one
    assert delta("bridge_cache_misses_total") == 3
    assert delta("bridge_preload_resources_total", result="stored") == 1
    assert delta("bridge_preload_resources_total", result="cached") == 1
    assert histogram_count(after, source="fetch", cache="hit") - histogram_count(before, source="fetch", cache="hit") == 1
    assert histogram_count(after, source="fetch", cache="miss") - histogram_count(before, source="fetch", cache="miss") == 2
    assert histogram_count(after, source="fetch", cache="failed") - histogram_count(before, source="fetch", cache="failed") == 1
    assert histogram_count(after, source="preload", cache="miss") - histogram_count(before, source="preload", cache="miss") == 1
    # The hit's latency lands in a bucket; buckets are cumulative up to +Inf.
    assert value(after, "bridge_request_duration_seconds_bucket", source="fetch", cache="hit", le="+Inf") >= 1
    assert value(after, "bridge_cache_entries", tier="disk") >= 2
    assert value(after, "bridge_cache_entries", tier="memory") >= 2
    assert value(after, "bridge_cache_bytes", tier="disk") >= 3010
    assert value(after, "bridge_cache_capacity_bytes", tier="disk") > 0
    assert value(after, "bridge_connections") == 1 and delta("bridge_connections_opened_total") == 1
    assert delta("bridge_websocket_bytes_total", direction="in") > 200
    assert delta("bridge_websocket_bytes_total", direction="out") > 3000        # the 3000-byte body went out twice


def test_metrics_need_the_token_when_one_is_set(make_broker):
    broker = make_broker("--token", "s3cret")
    for token, bearer in ((None, None), ("wrong", None), (None, "wrong")):
        with pytest.raises(urllib.error.HTTPError) as refused:
            scrape(broker, token=token, bearer=bearer)
        assert refused.value.code == 401
    assert value(scrape(broker, token="s3cret"), "bridge_connections") == 0
    assert ("bridge_connections", ()) in scrape(broker, bearer="s3cret")


def test_no_metrics_serves_none(make_broker):
    broker = make_broker("--no-metrics")
    with pytest.raises(urllib.error.HTTPError) as missing:
        urllib.request.urlopen(broker.http + "/metrics", timeout=10)
    assert missing.value.code == 404
