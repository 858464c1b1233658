"""One way to read a host file: every probe script opens files only through the prelude's reader
(open_host_file / read_host_file / host_text: no link to another user's file, regular files only, the naming
process's right to read, no credential location, capped). This walks every script's syntax tree and fails on any
other way to open or copy a file."""

from __future__ import annotations

import ast
from importlib import resources

import pytest

from orchestrator.hosts.policy import unsafe_read
from orchestrator.probes import scripts

SCRIPTS = sorted(p.name for p in resources.files(scripts).iterdir() if p.name.endswith(".py") and p.name != "__init__.py")
READER = {"open_host_file", "read_host_file", "log_lines", "list_host_dir"}
"""The prelude's reader itself: the only functions that open a descriptor (log_lines wraps one it was handed)."""
FILE_MODULES = {"pathlib", "gzip", "bz2", "lzma", "tarfile", "zipfile", "shelve", "sqlite3", "codecs", "fileinput",
                "linecache", "dbm"}
FILE_CALLS = {"open", "fdopen", "read_text", "read_bytes", "FileIO", "copy", "copy2", "copyfile", "copyfileobj",
              "copytree", "sendfile", "openat"}
READING_PROGRAMS = {"cat", "head", "tail", "dd", "less", "more", "strings", "xxd", "od", "base64", "tac", "nl", "cp"}
NOT_FILES = {("engine.py", "opener")}
"""`opener.open(Request)`: a loopback HTTP fetch (no file; the scripts fetch through the prelude's loopback_get, and
the walk's own test plants one)."""


def _problems(name: str, source: str) -> list[str]:
    tree = ast.parse(source)
    out = []
    allowed_nodes: set[int] = set()
    if name == "_prelude.py":
        for fn in tree.body:
            if isinstance(fn, ast.FunctionDef) and fn.name in READER:
                allowed_nodes |= {id(n) for n in ast.walk(fn)}
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            mods = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            out += [f"{name}:{line} imports {m}" for m in mods if m.split(".")[0] in FILE_MODULES]
        if not isinstance(node, ast.Call) or id(node) in allowed_nodes:
            continue
        f = node.func
        if isinstance(f, ast.Name) and f.id == "open":
            out.append(f"{name}:{line} open()")
        elif isinstance(f, ast.Attribute) and f.attr in FILE_CALLS:
            recv = f.value.id if isinstance(f.value, ast.Name) else ast.unparse(f.value)
            if (name, recv) in NOT_FILES:
                continue
            if f.attr == "fdopen" and node.args and isinstance(node.args[0], ast.Call) \
                    and isinstance(node.args[0].func, ast.Name) and node.args[0].func.id == "open_host_file":
                continue  # a file object over the reader's descriptor
            out.append(f"{name}:{line} {recv}.{f.attr}()")
        elif isinstance(f, ast.Attribute) and f.attr in ("run", "Popen", "check_output", "call") and node.args \
                and isinstance(node.args[0], ast.List) and node.args[0].elts \
                and isinstance(node.args[0].elts[0], ast.Constant) and node.args[0].elts[0].value in READING_PROGRAMS:
            out.append(f"{name}:{line} runs {node.args[0].elts[0].value}")
    return out


@pytest.mark.parametrize("name", SCRIPTS)
def test_no_probe_script_opens_a_file_but_through_the_prelude_reader(name):
    source = (resources.files(scripts) / name).read_text()
    assert _problems(name, source) == []


def test_the_walk_sees_each_way_around_the_reader():
    planted = ("import gzip\nfrom pathlib import Path\nopen('/etc/shadow')\nos.open(p, 0)\nio.open(p)\n"
               "Path(p).read_text()\nos.fdopen(os.open(p, 0))\nshutil.copyfile(a, b)\n"
               "subprocess.run(['cat', p])\nos.fdopen(open_host_file(p))\nopener.open(r)\n")
    got = _problems("engine.py", planted)
    assert len(got) == 10, got  # line 7 twice: os.fdopen and os.open
    assert not any("open_host_file" in g or "opener" in g for g in got)


def test_the_prelude_refuses_what_the_host_policy_calls_unsafe_to_read():
    ns: dict = {}
    exec(compile(scripts.prelude(), "_prelude.py", "exec"), ns)
    for path in ("/proc/kmsg", "/sys/kernel/tracing/trace_pipe", "/sys/kernel/debug/tracing/trace_pipe_raw",
                 "/sys/bus/pci/devices/0000:3b:00.0/config", "/sys/devices/pci0000:00/0000:00:01.0/rom",
                 "/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/resource0_wc"):
        assert unsafe_read(path) and ns["unsafe_location"](path), path
    for path in ("/proc/1/stat", "/sys/class/drm/card0/device/gpu_busy_percent", "/proc/meminfo"):
        assert ns["unsafe_location"](path) is None, path
