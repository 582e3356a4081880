"""Drives every handler and every error code with a client written from docs/PROTOCOL.md alone."""
import json
import struct
import threading
import time

import pytest
from headless_client import BridgeConnection


def connect(broker, **kwargs):
    connection = BridgeConnection(broker.url, **kwargs)
    kind, hello = connection.receive()
    assert kind == "text" and hello["type"] == "hello"
    return connection, hello


def reply_to(connection, post_id, frames=None):
    while True:
        kind, value = connection.receive()
        if kind == "text" and value.get("type") == "reply" and value.get("id") == post_id:
            return value
        if frames is not None:
            frames.append((kind, value))


def test_hello_announces_protocol_handlers_and_limits(broker):
    _, hello = connect(broker)
    assert hello["protocol"] == 1
    assert {"echo", "fetch"} <= set(hello["handlers"])
    assert hello["limits"]["maxMessageBytes"] > 0 and hello["limits"]["maxInFlight"] > 0


def test_posts_sent_before_the_hello_is_read_come_after_it(make_broker):
    # The shim sends its first posts as soon as the socket is open (bridge-js/README.md); a broker
    # sends its hello before it reads anything, and refuses what is over its limit unrun.
    broker = make_broker("--max-in-flight", "2")
    connection = BridgeConnection(broker.url)
    for post_id in (1, 2, 3):
        connection.send_json({"type": "post", "name": "fetch", "id": post_id, "body": {"url": f"{broker.origin}/hang", "timeout": 500}})
    kind, first = connection.receive()
    assert kind == "text" and first["type"] == "hello"
    assert reply_to(connection, 3)["error"]["code"] == "too_many_in_flight"
    codes = {}
    while len(codes) < 2:
        kind, value = connection.receive()
        if kind == "text" and value.get("type") == "reply":
            codes[value["id"]] = value["error"]["code"]
    assert codes == {1: "timeout", 2: "timeout"}


def test_echo_and_fire_and_forget(broker):
    connection, _ = connect(broker)
    connection.send_json({"type": "post", "name": "echo"})          # no id: no reply
    assert connection.post("echo", {"a": [1, "é"]})["body"] == {"a": [1, "é"]}


@pytest.mark.parametrize("frame, code", [
    ("not json", "bad_message"),
    ('{"type": "post"}', "bad_message"),
    ('{"type": "teleport", "id": 3}', "bad_message"),
    ('{"type": "post", "name": "nope"}', "unknown_handler"),
])
def test_frames_that_cannot_be_tied_to_a_post_get_error_frames(broker, frame, code):
    connection, _ = connect(broker)
    connection.send_frame(0x1, frame.encode())
    kind, value = connection.receive()
    assert value["type"] in ("error", "reply")
    assert value["error"]["code"] == code
    assert connection.post("echo", 1)["body"] == 1, "the connection stays open"


def test_error_codes_of_posts(broker):
    connection, _ = connect(broker)
    cases = {
        "unknown_handler": ("nope", {}),
        "bad_request": ("fetch", {"method": "GET"}),
        "forbidden": ("fetch", {"url": "http://10.1.2.3/"}),
        "network": ("fetch", {"url": "http://127.0.0.1:1/"}),
        "timeout": ("fetch", {"url": f"{broker.origin}/hang", "timeout": 200}),
        "not_cached": ("fetch", {"url": f"{broker.origin}/json?never-fetched", "cache": "only-if-cached"}),
    }
    for code, (name, body) in cases.items():
        reply = connection.post(name, body, on_frame=lambda frame: None)
        assert reply["ok"] is False and reply["error"]["code"] == code, (code, reply)


def test_a_malformed_post_with_an_id_gets_its_reply(broker):
    connection, _ = connect(broker)
    connection.send_json({"type": "post", "name": 7, "id": 41})
    assert reply_to(connection, 41)["error"]["code"] == "bad_message"


def test_duplicate_id_and_cancel(broker):
    connection, _ = connect(broker)
    slow = {"url": f"{broker.origin}/slow?chunks=50&delay=100", "responseBody": "binary"}
    connection.send_json({"type": "post", "name": "fetch", "id": 5, "body": slow})
    connection.send_json({"type": "post", "name": "echo", "id": 5})
    frames = []
    while True:
        kind, value = connection.receive()
        if kind == "text" and value["type"] == "error":
            assert value["error"]["code"] == "duplicate_id" and value["duplicateId"] == 5
            break
    connection.send_json({"type": "cancel", "id": 5})
    reply = reply_to(connection, 5, frames)
    assert reply["error"]["code"] == "cancelled"


def test_too_many_in_flight_and_oversize_frames(make_broker):
    broker = make_broker("--max-in-flight", "2", "--max-message-bytes", "2048")
    connection, hello = connect(broker)
    assert hello["limits"] == {"maxMessageBytes": 2048, "maxInFlight": 2, "binaryChunkBytes": 262144}
    for post_id in (1, 2, 3):
        connection.send_json({"type": "post", "name": "fetch", "id": post_id, "body": {"url": f"{broker.origin}/hang", "timeout": 2000}})
    assert reply_to(connection, 3)["error"]["code"] == "too_many_in_flight"
    other, _ = connect(broker)
    reply = other.post("fetch", {"url": f"{broker.origin}/text/4000"}, on_frame=lambda frame: None)
    assert reply["error"]["code"] == "too_large"
    other.send_frame(0x1, b'"' + b"x" * 3000 + b'"')
    assert other.receive() == ("close", 1009)


def test_fetch_streams_binary_bodies_both_ways(broker):
    connection, _ = connect(broker)
    body = bytes(range(256)) * 4096                      # 1 MiB
    connection.send_json({"type": "post", "name": "fetch", "id": 9, "body": {
        "url": f"{broker.origin}/echo", "method": "POST", "responseBody": "text",
        "body": {"binary": True, "length": len(body)}}})
    for start in range(0, len(body), 65536):
        end = min(len(body), start + 65536)
        connection.send_frame(0x2, bytes([1, 1 if end == len(body) else 0]) + struct.pack("!Q", 9) + body[start:end])
    frames = []
    reply = reply_to(connection, 9, frames)
    echo = json.loads(reply["body"]["body"])
    assert echo["bodyBytes"] == len(body)
    uploads = [v["body"] for k, v in frames if k == "text" and v.get("name") == "progress" and v["body"]["phase"] == "upload"]
    assert uploads[-1] == {"phase": "upload", "loaded": len(body), "total": len(body)}

    frames = []
    connection.send_json({"type": "post", "name": "fetch", "id": 10, "body": {"url": f"{broker.origin}/bytes/300000", "responseBody": "binary"}})
    reply = reply_to(connection, 10, frames)
    chunks = [value for kind, value in frames if kind == "binary"]
    assert sum(len(chunk) - 10 for chunk in chunks) == 300000 == reply["body"]["bodyBytes"]
    assert all(struct.unpack("!Q", chunk[2:10])[0] == 10 for chunk in chunks)
    assert chunks[-1][1] == 1 and all(chunk[1] == 0 for chunk in chunks[:-1])
    names = [value["name"] for kind, value in frames if kind == "text"]
    assert names[0] == "response"


def send_at_once(connection, posts):
    """Sends the posts in one write, as a browser's network service passes on a page's posts, so
    that the broker reads them in one service turn."""
    written = []
    sock = connection.sock

    class Collect:
        sendall = written.append

    connection.sock = Collect()
    try:
        for post in posts:
            connection.send_json(post)
    finally:
        connection.sock = sock
    sock.sendall(b"".join(written))


def whole_frames(message):
    """The whole-response frames (id, head, body) of one binary message: itself, or those of a batch."""
    kind, flags, frame_id = message[0], message[1], struct.unpack("!Q", message[2:10])[0]
    if kind == 0x02:
        length = struct.unpack("!I", message[10:14])[0]
        return [(frame_id, json.loads(message[14:14 + length]), message[14 + length:])]
    assert kind == 0x03 and flags == 0x01 and frame_id == 0, message[:10]
    frames, at = [], 10
    while at < len(message):
        length = struct.unpack("!I", message[at:at + 4])[0]
        assert message[at + 4] == 0x02 and at + 4 + length <= len(message)
        frames += whole_frames(message[at + 4:at + 4 + length])
        at += 4 + length
    return frames


def test_whole_responses_of_posts_that_ask_for_batch_come_joined(broker):
    # docs/PROTOCOL.md, "Batches of whole responses": hits answered in one service turn go as a
    # few messages; posts that do not ask get one whole frame each, as before.
    connection, _ = connect(broker)
    urls = [f"{broker.origin}/cached?cc=max-age%3D600&size={1000 + n}" for n in range(12)]
    for url in urls:
        assert connection.post("fetch", {"url": url}, on_frame=lambda frame: None)["ok"]
    for batch, first_id in ((True, 100), (False, 200)):
        posts = [{"type": "post", "name": "fetch", "id": first_id + n,
                  "body": {"url": url, "responseBody": "binary", "whole": 65536, **({"batch": True} if batch else {})}}
                 for n, url in enumerate(urls)]
        send_at_once(connection, posts)
        messages, seen = [], {}
        while len(seen) < len(urls):
            kind, value = connection.receive()
            assert kind == "binary", value
            messages.append(value)
            for frame_id, head, body in whole_frames(value):
                assert frame_id not in seen
                seen[frame_id] = (head, body)
        assert sorted(seen) == [first_id + n for n in range(len(urls))]
        for n in range(len(urls)):
            head, body = seen[first_id + n]
            assert head["status"] == 200 and head["cache"]["status"] == "hit" and len(body) == 1000 + n
        kinds = [message[0] for message in messages]
        if batch:
            assert 0x03 in kinds and len(messages) < len(urls), kinds
        else:
            assert kinds == [0x02] * len(urls)
    assert connection.post("echo", 1, on_frame=lambda frame: None)["body"] == 1, "the connection goes on"


def test_sigterm_closes_every_client_with_1001_and_exits_once_they_have_closed(make_broker):
    """SIGTERM: each connection gets a close frame with 1001 and the broker exits as soon as the
    clients have answered it, not at the end of the shutdown's grace (2 s)."""
    broker = make_broker()
    connections = [connect(broker)[0] for _ in range(3)]
    started = time.monotonic()
    broker.process.terminate()
    for connection in connections:
        kind, code = connection.receive()
        assert (kind, code) == ("close", 1001)
        connection.send_frame(0x8, struct.pack("!H", 1000))
    broker.process.wait(timeout=10)
    assert broker.process.returncode == 0
    assert time.monotonic() - started < 1.5, "the broker waited for its grace though every client had closed"


def test_sigterm_exits_at_the_end_of_its_grace_when_a_client_never_reads(make_broker):
    """A client that asked for a 50 MB body and reads nothing: the close frame cannot reach it, so
    its connection is still open when the 2 s grace ends; the broker exits then, with 0."""
    broker = make_broker()
    connection, _ = connect(broker)
    connection.send_json({"type": "post", "name": "fetch", "id": 1,
                          "body": {"url": broker.origin + "/bytes/50000000", "cache": "no-store", "responseBody": "binary"}})
    time.sleep(1)  # the socket's buffers fill
    started = time.monotonic()
    broker.process.terminate()
    broker.process.wait(timeout=10)
    elapsed = time.monotonic() - started
    assert broker.process.returncode == 0
    assert 1.5 < elapsed < 6, f"the broker exited after {elapsed:.2f} s"
