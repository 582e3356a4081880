#!/usr/bin/env python3
"""CPU time and context switches of the broker process alone, per fetch (docs/BENCHMARKS.md).

`bridge-broker bench` runs the broker, the origin and the clients in one process, so its wall
times move with the machine's load and its CPU figures mix all of them. This runs the origin in
a process of its own (`serve --demo-origin`), a broker in another, and a Python client that
fetches one request at a time; `perf stat -p` counts only the broker's CPU time and context
switches over the counted requests. Each variant is a binary, optionally with environment
settings (`BINARY:NAME=VALUE,...`); variants run in turn, `--rounds` times.

    python3 scripts/broker_cpu.py --mode no-store --size 1024 --requests 1500 \\
        .build/release/bridge-broker .build/release/bridge-broker:BRIDGE_BROKER_SWIFT_POOL=1

`--per-thread` adds the CPU time per request of each kind of thread, summed by thread name
(SwiftNIO's event loops, and the libwebsockets service thread, which keeps the name of the event
loop that started it; Dispatch's workers, which run the SQLite connections and the cache's
body-file queue).

`--wakes N` instead maps the thread wakes of N fetches (`perf sched record -p` of the broker,
read with `perf sched timehist -w`): who woke whom, per fetch, with the broker's threads by name
and the other processes as `client` and `origin` (docs/BENCHMARKS.md, "Thread wakes per fetch").

`--record DIR` also profiles each run (`perf report -i DIR/variant1-round1.data`) and adds the
part of the CPU time spent outside the kernel (whose share grows with the machine's load).
"""
import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
from headless_client import BridgeConnection  # noqa: E402


def start(binary, args, env):
    process = subprocess.Popen([binary, "serve", "--port", "0", *args], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, env=env)
    while True:
        line = process.stdout.readline()
        if not line:
            raise RuntimeError(f"{binary} exited before it listened")
        match = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
        if match and "bridge-broker" in line:
            return process, int(match.group(1))


RECORD_HZ = 2000


def user_share(record):
    """The samples of `record` outside the kernel, as a fraction of all."""
    report = subprocess.run(["perf", "report", "-i", record, "--no-children", "--sort", "dso", "-g", "none", "-n", "--stdio"],
                            capture_output=True, text=True).stdout
    total = kernel = 0
    for line in report.splitlines():
        fields = line.split()
        if len(fields) >= 3 and not line.startswith("#") and fields[1].isdigit():
            total += int(fields[1])
            kernel += int(fields[1]) if "[kernel" in line else 0
    return (total - kernel) / total if total else 0.0


def process_of(tid):
    """The process (thread group) of thread `tid`, or None once it is gone."""
    try:
        with open(f"/proc/{tid}/status") as status:
            return int(re.search(r"^Tgid:\s+(\d+)", status.read(), re.M).group(1))
    except OSError:
        return None


def wake_map(broker, origin, count, fetch, data):
    """Fetches `count` times under `perf sched record -p BROKER`; returns {(waker, wakee): wakes}."""
    recorder = subprocess.Popen(["perf", "sched", "record", "-o", data, "-p", str(broker.pid)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)  # perf attaches
    for index in range(count):
        fetch(index)
        time.sleep(0.005)  # one fetch at a time, apart in the trace
    time.sleep(0.1)
    names = {}
    for tid in os.listdir(f"/proc/{broker.pid}/task"):
        with open(f"/proc/{broker.pid}/task/{tid}/comm") as comm:
            names[tid] = f"{comm.read().strip()}[{tid}]"
    recorder.send_signal(signal.SIGINT)
    recorder.wait()
    timehist = subprocess.run(["perf", "sched", "timehist", "-i", data, "-w"], capture_output=True, text=True).stdout
    outside = {os.getpid(): "client", origin.pid: "origin"}

    def name(comm, tid):
        if tid in names:
            return names[tid]
        return outside.get(process_of(tid), f"{comm or 'other'}[{tid}]")

    pairs = {}
    for line in timehist.splitlines():
        match = re.search(r"\]\s+(\S*)\[(\d+)/\d+\]\s+awakened: (\S*?)(?:\[(\d+)/\d+\])?$", line.strip())
        if not match:
            continue
        waker = name(match.group(1), match.group(2))
        wakee_tid = match.group(4) or match.group(3).lstrip(":")
        key = (waker, name(match.group(3).lstrip(":") if match.group(4) else "", wakee_tid))
        pairs[key] = pairs.get(key, 0) + 1
    return pairs, set(names.values())


def measure(binary, extra_env, args, origin_port, record=None, origin=None):
    env = dict(os.environ, **extra_env)
    broker, port = start(binary, ["--cache-dir", tempfile.mkdtemp(prefix="broker-cpu-"), "--allow-url", "http://127.0.0.1:*"], env)
    try:
        connection = BridgeConnection(f"ws://127.0.0.1:{port}/bridge")
        kind, hello = connection.receive()
        assert kind == "text" and hello["type"] == "hello", hello
        base = f"http://127.0.0.1:{origin_port}/bytes/{args.size}?mode={args.mode}"

        def fetch(index):
            reply = connection.post("fetch", {"url": f"{base}&i={index}", "responseBody": "binary", "progress": False,
                                              "cache": args.mode}, on_frame=lambda frame: None)
            assert reply.get("ok"), reply

        for index in range(args.warmup):
            fetch(-index - 1)
        if args.wakes:
            return wake_map(broker, origin, args.wakes, fetch, record)
        command = ["perf", "stat", "-x,", "-e", "task-clock,context-switches", "-p", str(broker.pid)]
        if args.per_thread:
            command.insert(2, "--per-thread")
        perf = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
        recorder = None
        if record:
            # A profile of the same requests, for `perf report -i FILE` and the user-space part.
            recorder = subprocess.Popen(["perf", "record", "-g", "-F", str(RECORD_HZ), "-o", record, "-p", str(broker.pid)],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.5 if record else 0.3)  # perf attaches
        started = time.time()
        for index in range(args.requests):
            fetch(index)
        wall = time.time() - started
        perf.send_signal(signal.SIGINT)
        if recorder:
            recorder.send_signal(signal.SIGINT)
            recorder.wait()
        report = perf.communicate()[1]
        if not args.per_thread:
            cpu = float(re.search(r"^([\d.]+),msec,task-clock", report, re.M).group(1))
            switches = int(re.search(r"^(\d+),,context-switches", report, re.M).group(1))
            return cpu, switches, wall, {}
        # Lines "COMM-TID,VALUE,UNIT,EVENT,...": CPU summed by thread name.
        cpu, switches, threads = 0.0, 0, {}
        for line in report.splitlines():
            fields = line.split(",")
            if len(fields) < 4 or not re.fullmatch(r"[\d.]+", fields[1]):
                continue
            if fields[3] == "task-clock":
                name = re.sub(r"-\d+$", "", fields[0])
                threads[name] = threads.get(name, 0.0) + float(fields[1])
                cpu += float(fields[1])
            elif fields[3] == "context-switches":
                switches += int(fields[1])
        return cpu, switches, wall, threads
    finally:
        broker.terminate()
        broker.wait()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mode", default="no-store", choices=["no-store", "default"], help="the fetch's cache mode")
    parser.add_argument("--size", type=int, default=1024, help="body bytes")
    parser.add_argument("--requests", type=int, default=1500, help="counted requests per run")
    parser.add_argument("--warmup", type=int, default=200, help="requests before counting")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--per-thread", action="store_true",
                        help="also the CPU time per request of each kind of thread, by name (perf stat --per-thread)")
    parser.add_argument("--record", metavar="DIR", help="also `perf record -g` each run into DIR/variantN-roundM.data "
                        "and report the CPU time spent outside the kernel (less moved by the machine's load)")
    parser.add_argument("--wakes", type=int, metavar="N", help="instead: map the thread wakes of N fetches "
                        "(perf sched) and print who woke whom, per fetch")
    parser.add_argument("variants", nargs="+", metavar="BINARY[:NAME=VALUE,...]")
    args = parser.parse_args()
    origin_port = 20000 + os.getpid() % 20000
    origin, _ = start(args.variants[0].partition(":")[0],
                      ["--demo-origin", str(origin_port), "--cache-dir", tempfile.mkdtemp(prefix="broker-cpu-origin-")], dict(os.environ))
    if args.record:
        os.makedirs(args.record, exist_ok=True)
    if args.wakes:
        try:
            for round_number in range(1, args.rounds + 1):
                for number, variant in enumerate(args.variants, 1):
                    binary, _, settings = variant.partition(":")
                    extra = dict(setting.split("=", 1) for setting in settings.split(",") if setting)
                    data = os.path.join(tempfile.mkdtemp(prefix="broker-wakes-"), "sched.data")
                    pairs, threads = measure(binary, extra, args, origin_port, data, origin)
                    inside = sum(n for (waker, wakee), n in pairs.items() if waker in threads and wakee in threads)
                    print(f"\n{os.path.basename(binary)} {settings} round {round_number}: "
                          f"{inside / args.wakes:.2f} wakes per fetch from one broker thread to another", flush=True)
                    for (waker, wakee), n in sorted(pairs.items(), key=lambda item: -item[1]):
                        if n / args.wakes >= 0.1:
                            print(f"  {n / args.wakes:5.2f} per fetch  {waker} -> {wakee}", flush=True)
        finally:
            origin.terminate()
            origin.wait()
        return
    extra = (" of which user space |" if args.record else "") + (" CPU µs per request by thread |" if args.per_thread else "")
    print(f"| variant | round | CPU µs per request | context switches per request | wall µs per request |{extra}", flush=True)
    print("|---|---|---|---|---|" + ("---|" if args.record else "") + ("---|" if args.per_thread else ""), flush=True)
    try:
        for round_number in range(1, args.rounds + 1):
            for number, variant in enumerate(args.variants, 1):
                binary, _, settings = variant.partition(":")
                extra = dict(setting.split("=", 1) for setting in settings.split(",") if setting)
                record = os.path.join(args.record, f"variant{number}-round{round_number}.data") if args.record else None
                cpu, switches, wall, threads = measure(binary, extra, args, origin_port, record)
                n = args.requests
                by_thread = ", ".join(f"{name} {ms / n * 1000:.0f}" for name, ms in sorted(threads.items(), key=lambda item: -item[1])
                                      if ms / n * 1000 >= 1)
                print(f"| {os.path.basename(binary)} {settings or ''} | {round_number} | {cpu / n * 1000:.0f} | {switches / n:.1f} | {wall / n * 1e6:.0f} |"
                      + (f" {cpu / n * 1000 * user_share(record):.0f} |" if record else "")
                      + (f" {by_thread} |" if args.per_thread else ""), flush=True)
    finally:
        origin.terminate()
        origin.wait()


if __name__ == "__main__":
    main()
