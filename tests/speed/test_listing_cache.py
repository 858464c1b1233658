"""The kernel inventory's shared-object listings: fatbin headers read right, and a cache that never serves a changed
file (issue 17)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

from orchestrator.probes import scripts
from orchestrator.probes.session import ListingCache
from speed.elfdata import ARCH_SPECIFIC, PLAIN, container, elf, entry


def _script(name: str) -> types.ModuleType:
    """A probe script as a module (its main() runs only as __main__)."""
    mod = types.ModuleType(f"probe_{name}")
    exec(compile(scripts.load(name), f"{name}.py", "exec"), mod.__dict__)
    return mod


kernels = _script("kernels")


def _fatbin_so(path: Path, *containers: bytes, extra: dict[str, bytes] | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(elf({".text": b"\x90" * 32, ".nv_fatbin": b"".join(containers), **(extra or {})}))
    return path


def test_fatbin_headers_give_the_archs_cuobjdump_lists(tmp_path):
    so = _fatbin_so(
        tmp_path / "libk.so",
        container(entry(2, 80, PLAIN), entry(2, 90, PLAIN), entry(1, 90, 0x11), entry(2, 90, ARCH_SPECIFIC)),
        b"\0" * 8,  # padding between containers
        container(entry(2, 100, 0x1008011, header_size=112), entry(2, 120, 0x1108011, header_size=112)),
    )
    archs, images = kernels.fatbin_archs(str(so))
    assert archs == ["sm_100", "sm_120a", "sm_80", "sm_90", "sm_90a"]
    assert images == 5  # the PTX entry is not a GPU code image (cuobjdump --list-elf leaves it out too)


def test_a_library_without_gpu_code_lists_nothing(tmp_path):
    so = tmp_path / "libcpu.so"
    so.write_bytes(elf({".text": b"\x90" * 64, ".rodata": b"hello\0"}))
    assert kernels.fatbin_archs(str(so)) == ([], 0)


@pytest.mark.parametrize("bad", [
    container(entry(2, 90, PLAIN | 0x400000)),   # a flag we do not know (an arch suffix we would miss)
    container(entry(7, 90, PLAIN)),              # an entry kind we do not know
])
def test_unknown_headers_go_to_cuobjdump(tmp_path, bad):
    so = _fatbin_so(tmp_path / "libk.so", bad)
    with pytest.raises(kernels.UnknownFatbin):
        kernels.fatbin_archs(str(so))
    stat = kernels.stat_of(str(so))
    assert kernels.list_archs(str(so), stat, {}, None, 5) == (None, "unlisted")
    fake = tmp_path / "cuobjdump"
    fake.write_text("#!/bin/sh\necho 'ELF file    1: libk.1.sm_90f.cubin'\n")
    fake.chmod(0o755)
    assert kernels.list_archs(str(so), stat, {}, str(fake), 5) == (["sm_90f"], "cuobjdump")


def test_a_truncated_section_is_not_trusted(tmp_path):
    so = _fatbin_so(tmp_path / "libk.so", container(entry(2, 90, PLAIN))[:-8] )
    with pytest.raises(kernels.UnknownFatbin):
        kernels.fatbin_archs(str(so))


def test_a_listing_is_reused_only_while_size_and_mtime_match(tmp_path):
    so = _fatbin_so(tmp_path / "libk.so", container(entry(2, 90, PLAIN)))
    stat = kernels.stat_of(str(so))
    known = {str(so): [stat[0], stat[1], ["sm_75"], "fatbin"]}  # what a cache said last time
    assert kernels.list_archs(str(so), stat, known, None, 5) == (["sm_75"], "cached")
    # same size, other mtime: read again
    os.utime(so, ns=(stat[1] + 1_000_000_000, stat[1] + 1_000_000_000))
    assert kernels.list_archs(str(so), kernels.stat_of(str(so)), known, None, 5) == (["sm_90"], "fatbin")
    # same mtime, other size: read again
    _fatbin_so(so, container(entry(2, 90, PLAIN), entry(2, 100, PLAIN)))
    os.utime(so, ns=(stat[1], stat[1]))
    changed = kernels.stat_of(str(so))
    assert changed[1] == stat[1] and changed[0] != stat[0]
    assert kernels.list_archs(str(so), changed, known, None, 5) == (["sm_100", "sm_90"], "fatbin")


def _run_kernels(site: Path, known: dict) -> dict:
    params = {"arch": "sm_90", "libraries": ["fakelib"], "known": known, "home": str(site)}
    proc = subprocess.run([sys.executable, "-", json.dumps(params)], input=scripts.load("kernels"), text=True,
                          capture_output=True, env={**os.environ, "PYTHONPATH": str(site)}, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_the_cache_round_trip_never_serves_a_changed_file(tmp_path):
    """Script on the host + the in-memory cache on our side, as collect_kernel_inventory wires them."""
    site = tmp_path / "site"
    so = _fatbin_so(site / "fakelib" / "lib" / "libfake.so", container(entry(2, 90, PLAIN)))
    cache = ListingCache()
    first = _run_kernels(site, cache.known_for("gpu-box"))
    assert first["libraries"][0]["compiled_archs"] == ["sm_90"]
    assert first["libraries"][0]["listed_by"] == {"fatbin": 1}
    cache.update("gpu-box", first["listings"])
    again = _run_kernels(site, cache.known_for("gpu-box"))
    assert again["libraries"][0]["listed_by"] == {"cached": 1}
    assert again["libraries"][0]["compiled_archs"] == ["sm_90"]
    assert cache.known_for("other-box") == {}  # another host's listing is never offered
    # the library is upgraded in place: new content, new mtime
    st = so.stat()
    _fatbin_so(so, container(entry(2, 90, PLAIN), entry(2, 90, ARCH_SPECIFIC)))
    os.utime(so, ns=(st.st_mtime_ns + 2_000_000_000,) * 2)
    third = _run_kernels(site, cache.known_for("gpu-box"))
    assert third["libraries"][0]["listed_by"] == {"fatbin": 1}
    assert third["libraries"][0]["compiled_archs"] == ["sm_90", "sm_90a"]


def test_listing_cache_lookup_and_bound():
    cache = ListingCache(max_entries=2)
    cache.update("h", {"/a.so": [10, 100, ["sm_90"], "fatbin"]})
    assert cache.lookup("h", "/a.so", 10, 100) == ["sm_90"]
    assert cache.lookup("h", "/a.so", 11, 100) is None
    assert cache.lookup("h", "/a.so", 10, 101) is None
    assert cache.lookup("other", "/a.so", 10, 100) is None
    cache.update("h", {"/b.so": [1, 1, [], "fatbin"], "/c.so": [2, 2, ["sm_80"], "cuobjdump"],
                       "/bad.so": ["x", 1, [], "fatbin"]})  # what a host printed is checked, not trusted
    assert cache.lookup("h", "/a.so", 10, 100) is None  # the oldest went
    assert sorted(cache.known_for("h")) == ["/b.so", "/c.so"]
    assert list(cache.known_for("h", limit=1)) == ["/c.so"]  # the latest, within what an argument can carry


def test_walk_skips_tests_and_stops_at_its_bound(tmp_path):
    root = tmp_path / "lib"
    for rel in ["gemm_config.py", "tests/gemm_config.py", "__pycache__/tile.py", "sub/moe_tile.h", "sub/libx.so",
                "sub/libx.so.1"]:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("x")
    sources, sos, seen, capped = kernels.walk_library(str(root), 100)
    assert [os.path.relpath(p, root) for p in sources] == ["gemm_config.py", "sub/moe_tile.h"]
    assert [os.path.relpath(p, root) for p in sos] == ["sub/libx.so", "sub/libx.so.1"]
    assert (seen, capped) == (4, False)
    assert kernels.walk_library(str(root), 2)[2:] == (2, True)


pyenv = _script("pyenv")


def test_torch_arch_list_read_from_the_binary_without_importing_torch(tmp_path):
    lib = tmp_path / "torch" / "lib" / "libtorch_python.so"
    lib.parent.mkdir(parents=True)
    strings = b"\0CUDA error: %s\0sm_75 sm_80 sm_86 sm_90 sm_100 sm_120\0compute capability sm_90 needed\0"
    lib.write_bytes(elf({".text": b"\x90" * 16, ".rodata": strings}))
    got = pyenv.torch_arch_from_binary(str(tmp_path))
    assert got["arch_list"] == ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"]
    # two different candidates: not ours to guess (the caller imports torch instead)
    lib.write_bytes(elf({".rodata": strings + b"sm_80 compute_80\0"}))
    assert pyenv.torch_arch_from_binary(str(tmp_path)) is None
    lib.write_bytes(elf({".rodata": b"\0nothing here\0"}))
    assert pyenv.torch_arch_from_binary(str(tmp_path)) is None
