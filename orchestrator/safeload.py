"""Bounded loading of the YAML and JSON files a user hands us (observations, hosts files, bench files, agent
definitions): the cost of an input is bounded before and while it is parsed.

- size: checked before anything is read (`read_capped`); a device, a FIFO or a directory is refused by name;
- YAML aliases: an alias bomb ("billion laughs") composes to a small graph that expands exponentially when anything
  walks it (pydantic, `json.dumps`): the expanded size is counted on the composed graph, memoised per node, and a
  document past `MAX_NODES` is refused in milliseconds;
- nesting: deeper than `MAX_DEPTH` is refused (no RecursionError);
- integers: more than Python's 4,300-digit conversion limit are refused with the line, not a ValueError;
- duplicate YAML mapping keys are refused naming the key and its line (the last one silently won).

Every failure is a `SafeLoadError` (a ValueError) whose message is one line naming the file, the line where known,
and the problem; callers add the fix. The bounds are orchestrator/limits.py's DOC_*.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import yaml

from orchestrator import limits

MAX_DEPTH = limits.DOC_MAX_DEPTH
MAX_NODES = limits.DOC_MAX_NODES
MAX_INT_DIGITS = limits.INT_MAX_DIGITS


class SafeLoadError(ValueError):
    """A file that is too large, not a regular file, or not a bounded YAML/JSON document; the message is one line."""


def read_capped(path: str | Path, *, what: str, max_bytes: int) -> str:
    """The text of a regular file of at most `max_bytes`, checked before reading (UTF-8)."""
    p = Path(path)
    try:
        st = os.stat(p)
    except FileNotFoundError:
        raise SafeLoadError(f"{what} {p} not found") from None
    except OSError as exc:
        raise SafeLoadError(f"{what} {p} cannot be read ({(exc.strerror or str(exc)).lower()})") from None
    if stat.S_ISDIR(st.st_mode):
        raise SafeLoadError(f"{what} {p} is a directory, not a file")
    if not stat.S_ISREG(st.st_mode):
        kind = "a device" if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode) else \
            "a FIFO" if stat.S_ISFIFO(st.st_mode) else "a socket" if stat.S_ISSOCK(st.st_mode) else "not a regular file"
        raise SafeLoadError(f"{what} {p} is {kind}, not a regular file")
    if st.st_size > max_bytes:
        raise SafeLoadError(f"{what} {p} is {st.st_size:,} bytes, more than the {max_bytes:,} this input may have")
    try:
        with open(p, "rb") as f:
            data = f.read(max_bytes + 1)
    except OSError as exc:
        raise SafeLoadError(f"{what} {p} cannot be read ({(exc.strerror or str(exc)).lower()})") from None
    if len(data) > max_bytes:  # grew since the stat
        raise SafeLoadError(f"{what} {p} is more than the {max_bytes:,} bytes this input may have")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SafeLoadError(f"{what} {p} is not UTF-8 text (byte {exc.start:,})") from None


# ---------------------------------------------------------------------------------------------------------------
# YAML


class _Refusing:
    """Constructor side of the bounds: duplicate keys and over-long integers (shared by both loaders below)."""

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        if isinstance(node, yaml.MappingNode):
            seen: dict[Any, int] = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)  # type: ignore[attr-defined]
                try:
                    first = seen.get(key)
                except TypeError:  # an unhashable key: the constructor below says so
                    continue
                line = key_node.start_mark.line + 1
                if first is not None:
                    shown = " ".join(str(key).split())[:60]
                    raise SafeLoadError(f"line {line}: duplicate key {shown!r} (first at line {first}); "
                                        "keep one")
                seen[key] = line
        return super().construct_mapping(node, deep=deep)  # type: ignore[misc]


class _BoundedLoader(_Refusing, yaml.SafeLoader):
    """PyYAML's safe loader, composing with a depth bound, refusing duplicate keys and over-long integers."""

    def __init__(self, stream: str):
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                mark = self.peek_event().start_mark
                raise SafeLoadError(f"line {mark.line + 1}: nested more than {MAX_DEPTH} levels deep")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


_CLoader = getattr(yaml, "CSafeLoader", None)


class _BoundedCLoader(_Refusing, _CLoader or yaml.SafeLoader):  # type: ignore[misc]
    """The same bounds on libyaml's parser and composer (agent definitions are read at every start-up: the pure-Python
    parser costs ~15 ms a file). libyaml's composer recurses in C and crashes the process on deep nesting, so the
    depth is checked first on its event stream (iterative), and only a document within MAX_DEPTH is composed."""


def _check_depth_c(text: str) -> None:
    assert _CLoader is not None
    depth = 0
    for ev in yaml.parse(text, Loader=_CLoader):
        if isinstance(ev, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            depth += 1
            if depth > MAX_DEPTH:
                raise SafeLoadError(f"line {ev.start_mark.line + 1}: nested more than {MAX_DEPTH} levels deep")
        elif isinstance(ev, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
            depth -= 1


def _int_guard(loader: yaml.SafeLoader, node: Any) -> Any:
    digits = sum(c.isdigit() for c in node.value)
    if digits > MAX_INT_DIGITS:
        raise SafeLoadError(f"line {node.start_mark.line + 1}: an integer of {digits:,} digits (at most "
                            f"{MAX_INT_DIGITS:,})")
    return yaml.SafeLoader.construct_yaml_int(loader, node)


_BoundedLoader.add_constructor("tag:yaml.org,2002:int", _int_guard)
_BoundedCLoader.add_constructor("tag:yaml.org,2002:int", _int_guard)


def _expanded_size(node: Any) -> int:
    """Nodes of the document once every alias is expanded, memoised per composed node (iterative: no recursion)."""
    sizes: dict[int, int] = {}
    stack: list[tuple[Any, bool]] = [(node, False)]
    while stack:
        n, done = stack.pop()
        if id(n) in sizes:
            continue
        children = [c for pair in n.value for c in pair] if isinstance(n, yaml.MappingNode) else \
            list(n.value) if isinstance(n, yaml.SequenceNode) else []
        if done or not children:
            total = 1 + sum(sizes[id(c)] for c in children)
            sizes[id(n)] = total
            if total > MAX_NODES:
                raise SafeLoadError(f"line {n.start_mark.line + 1}: expands to more than {MAX_NODES:,} values through "
                                    "its aliases (an alias bomb?)")
            continue
        stack.append((n, True))
        stack.extend((c, False) for c in children if id(c) not in sizes)
    return sizes[id(node)]


def load_yaml(text: str, *, source: str, fast: bool = False) -> Any:
    """One YAML document, bounded (see the module); None for an empty one. `source` names it in errors.

    `fast`: parse with libyaml where it is installed (same bounds, depth checked before composing)."""
    try:
        if fast and _CLoader is not None:
            _check_depth_c(text)
            loader: Any = _BoundedCLoader(text)
        else:
            loader = _BoundedLoader(text)
        try:
            node = loader.get_single_node()
            if node is None:
                return None
            _expanded_size(node)
            return loader.construct_document(node)
        finally:
            loader.dispose()
    except SafeLoadError as exc:
        raise SafeLoadError(f"{source}: {exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise SafeLoadError(f"{source} is not valid YAML{where} ({problem})") from None
    except (ValueError, RecursionError, MemoryError) as exc:
        why = "out of memory" if isinstance(exc, MemoryError) else " ".join(str(exc).split())[:120]
        raise SafeLoadError(f"{source} is not a usable YAML document ({why})") from None


# ---------------------------------------------------------------------------------------------------------------
# JSON


def _depth_ok(text: str) -> int | None:
    """The line where brackets first nest deeper than MAX_DEPTH (outside strings), else None. One linear pass."""
    depth = 0
    in_str = esc = False
    line = 1
    for ch in text:
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                return line
        elif ch in "]}":
            depth -= 1
        if ch == "\n":
            line += 1
    return None


def load_json(text: str, *, source: str) -> Any:
    """One JSON document, bounded in nesting and integer size; `source` names it in errors."""
    if (line := _depth_ok(text)) is not None:
        raise SafeLoadError(f"{source}: line {line}: nested more than {MAX_DEPTH} levels deep")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise SafeLoadError(f"{source} is not valid JSON at line {exc.lineno} ({exc.msg})") from None
    except (ValueError, RecursionError) as exc:  # an integer past 4,300 digits; nesting the scan did not see
        msg = " ".join(str(exc).split())
        if "integer string conversion" in msg:
            msg = f"an integer of more than {MAX_INT_DIGITS:,} digits"
        raise SafeLoadError(f"{source} is not a usable JSON document ({msg[:120]})") from None
