"""The protocol fuzzer with a small budget (`make fuzz` runs it longer; docs/RELIABILITY.md)."""
import os

import protocol_fuzz


def test_broker_survives_fuzzed_protocol_and_returns_its_memory():
    seconds = float(os.environ.get("BRIDGE_PROTOCOL_FUZZ_SECONDS", "15"))
    seed = int(os.environ.get("BRIDGE_PROTOCOL_FUZZ_SEED", "17"))
    figures = protocol_fuzz.run(seed, seconds)
    assert figures["connections"] > 5 and figures["actions"] > 50
