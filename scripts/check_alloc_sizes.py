#!/usr/bin/env python3
"""Refuses a release binary whose inlined class allocations are stale (docs/RELIABILITY.md, the
heap corruption in release `bench --only cache`).

With cross-module optimisation a module that creates an instance of another module's class may
inline its allocation: it calls the class's metadata accessor, then `swift_allocObject` with the
instance size as a constant. An incremental release build that recompiles the class's module after
a stored property was added, but not the module that inlined the allocation, leaves the old size
there: the initialiser then writes past the block, and glibc reports "double free or corruption"
or "corrupted size vs. prev_size" later, anywhere. The class's own `__deallocating_deinit` (`...CfD`)
passes the current instance size to `swift_deallocClassInstance`; no inlined allocation may ask
for less (more is fine: tail-allocated storage, a generic class's specialisation). Exit 1 and a line per mismatch if one does not; 0 otherwise.

    python3 scripts/check_alloc_sizes.py .build/release/bridge-broker
    python3 scripts/check_alloc_sizes.py --disassembly dump.txt      # objdump -d --no-show-raw-insn output
"""
import argparse
import re
import subprocess
import sys

FUNCTION = re.compile(r"^[0-9a-f]+ <([^>]+)>:$")
CALL = re.compile(r"\s(?:call|jmp)\s+[0-9a-f]+ <([^>@]+)(?:@plt)?>")
SIZE = re.compile(r"\smov\s+\$0x([0-9a-f]+),%esi$")
# How many instructions after the metadata accessor's call the allocation may come.
WINDOW = 8


def check(lines):
    """Returns (checked allocations, mismatches as strings)."""
    dealloc_sizes = {}
    allocations = []  # (class symbol prefix, size, function, address)
    function = None
    recent = []  # the last instructions of the current function
    pending = []  # (class prefix, instructions left, size seen)
    for raw in lines:
        line = raw.rstrip("\n")
        match = FUNCTION.match(line)
        if match:
            function, recent, pending = match.group(1), [], []
            continue
        if not line.startswith(" ") or function is None:
            continue
        size = SIZE.search(line)
        call = CALL.search(line)
        if call and call.group(1) == "swift_deallocClassInstance" and function.endswith("CfD"):
            for previous in reversed(recent[-4:]):
                found = SIZE.search(previous)
                if found:
                    dealloc_sizes[function[: -len("fD")]] = int(found.group(1), 16)
                    break
        still = []
        for prefix, left, seen in pending:
            if size:
                seen = int(size.group(1), 16)
            if call and call.group(1) == "swift_allocObject":
                if seen is not None:
                    allocations.append((prefix, seen, function, line.split(":")[0].strip()))
                continue
            if left > 1 and not (call and call.group(1) != "swift_allocObject"):
                still.append((prefix, left - 1, seen))
        pending = still
        if call and call.group(1).startswith("$s") and call.group(1).endswith("CMa"):
            pending.append((call.group(1)[: -len("Ma")], WINDOW, None))
        recent.append(line)
        if len(recent) > 8:
            del recent[0]
    mismatches = []
    checked = 0
    for prefix, size, function, address in allocations:
        expected = dealloc_sizes.get(prefix)
        if expected is None:
            continue
        checked += 1
        # Larger is not stale: a tail-allocated class (ManagedBuffer's kind) or a generic
        # class's specialisation asks for more than the unspecialised deinit's size.
        if size < expected:
            mismatches.append(
                f"{prefix}: allocated with {size:#x} bytes in {function} at {address}, "
                f"but its deinit frees {expected:#x}: a stale build of that module (rebuild it)")
    return checked, mismatches


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("binary", nargs="?")
    parser.add_argument("--disassembly", help="objdump -d --no-show-raw-insn output instead of a binary")
    args = parser.parse_args()
    if args.disassembly:
        with open(args.disassembly) as handle:
            checked, mismatches = check(handle)
    elif args.binary:
        dump = subprocess.run(["objdump", "-d", "--no-show-raw-insn", args.binary],
                              check=True, capture_output=True, text=True).stdout
        checked, mismatches = check(dump.splitlines())
    else:
        parser.error("give a binary or --disassembly")
    for mismatch in mismatches:
        print(mismatch, file=sys.stderr)
    print(f"{checked} inlined class allocations checked, {len(mismatches)} stale", file=sys.stderr)
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
