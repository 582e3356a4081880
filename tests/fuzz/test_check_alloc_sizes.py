"""scripts/check_alloc_sizes.py, which `make bench` and the other release targets run on the
release broker: it refuses a binary in which a module's inlined allocation of another module's
class asks for fewer bytes than the class's deinit frees (a stale incremental build: the cause of
the heap corruption in release `bench --only cache`, docs/RELIABILITY.md). The excerpts are from
`objdump -d --no-show-raw-insn` of the reproducer's binaries (78ca17d): the consistent build, and
the incremental one whose CacheBench kept the size without the property."""
import pathlib
import subprocess
import sys

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "scripts" / "check_alloc_sizes.py"

DEINIT = """
00000000004cb8e0 <$s12BridgeSQLite0B10CacheStoreCfD>:
  4cb8e0:	push   %rbp
  4cb8e1:	mov    %rsp,%rbp
  4cb8e4:	call   4cb7b0 <$s12BridgeSQLite0B10CacheStoreCfd>
  4cb8e9:	mov    $0x1a0,%esi
  4cb8ee:	mov    $0x7,%edx
  4cb8f3:	mov    %r13,%rdi
  4cb8f6:	pop    %rbp
  4cb8f7:	jmp    128a10 <swift_deallocClassInstance@plt>
"""


def allocation(size, metadata="$s12BridgeSQLite0B10CacheStoreCMa"):
    return f"""
000000000035c900 <$s12BridgeBroker10CacheBenchV16inlineVersusFileSSyYaKFZTf4d_nTY1_>:
  35c945:	xor    %edi,%edi
  35c947:	call   4cb910 <{metadata}>
  35c94c:	mov    ${size:#x},%esi
  35c951:	mov    $0x7,%edx
  35c956:	mov    %rax,%rdi
  35c959:	call   128270 <swift_allocObject@plt>
  35c95e:	mov    %rax,%r13
"""


def run(tmp_path, text):
    dump = tmp_path / "dump.txt"
    dump.write_text(text)
    return subprocess.run([sys.executable, str(SCRIPT), "--disassembly", str(dump)], capture_output=True, text=True)


def test_a_consistent_build_passes(tmp_path):
    result = run(tmp_path, DEINIT + allocation(0x1a0))
    assert result.returncode == 0, result.stderr
    assert "1 inlined class allocations checked, 0 stale" in result.stderr


def test_an_allocation_smaller_than_the_deinit_frees_is_refused(tmp_path):
    # Either order: the allocating function may come before the class's deinit in the binary.
    for text in (DEINIT + allocation(0x198), allocation(0x198) + DEINIT):
        result = run(tmp_path, text)
        assert result.returncode == 1, result.stderr
        assert "$s12BridgeSQLite0B10CacheStoreC: allocated with 0x198 bytes" in result.stderr
        assert "frees 0x1a0" in result.stderr and "1 stale" in result.stderr


def test_a_larger_allocation_and_unknown_classes_are_not_refused(tmp_path):
    # Tail-allocated storage asks for more than the instance; a class without a deinit in the
    # dump cannot be checked.
    text = DEINIT + allocation(0x602C) + allocation(0x10, metadata="$s3Foo3BarCMa")
    result = run(tmp_path, text)
    assert result.returncode == 0, result.stderr
    assert "1 inlined class allocations checked, 0 stale" in result.stderr
