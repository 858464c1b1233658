"""Every regular expression that runs over text a host or a trace file supplies grows linearly with that text.

A pattern searched anywhere in a line (`re.search`) is retried at every position; when a prefix of it can match
many times and the rest fails late (`server_args=ServerArgs\\((.*)\\)\\s*$` on a line of repeated
`server_args=ServerArgs(`, `sm\\d+_.*(tn|nt|nn|tt)` on `sm1_sm1_...`), the work grows with the square of the
line: the red team's 920 kB log line took minutes, two 100 kB kernel names 87 s.

For each pattern of the catalog (failure-mode log signals and `matches` conditions), the kernel classes, the engine
log parser (prongs/serving_engine/logs.py), the probe scripts, the trace readers and the path prong's config parsers
(which search whole files: a `(?m)^\\s*` runs on over the blank lines below every line start, so newlines are pumped
too), this builds hostile inputs from the pattern itself (each prefix of a minimal match, each literal, pumped) and
searches 4,000 characters of each. A search
that takes over 1 ms of CPU (most take microseconds; a quadratic one ~5 ms on 4,000 characters) is timed again on
2,000 and 8,000 characters (the longest line a log reader passes on), interleaved, best of three, in CPU time (a
loaded machine's preemption does not count): the pattern fails when 4x the text takes more than 10x the time
(linear: 4x, quadratic: 16x), or when a search runs past 5 s.
"""

from __future__ import annotations

import ast
import re
import re._constants as C  # noqa: N812  (the regex parser's own names: the public sre_parse is deprecated)
import re._parser as P  # noqa: N812
import signal
import time
from functools import lru_cache
from importlib import import_module
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2] / "orchestrator"
SMALL, BIG, HUGE = 2000, 4000, 8000
LIMIT = 10
"""Fail when 4x the text takes more than this many times the time: linear is 4x, quadratic 16x."""
BUDGET_S = 5.0


def _walk_patterns(obj, where: str, out: list) -> None:
    if isinstance(obj, re.Pattern):
        out.append((where, obj.pattern, obj.flags))
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            _walk_patterns(v, f"{where}[{i}]", out)
    elif isinstance(obj, dict):
        for k, v in obj.items():
            _walk_patterns(v, f"{where}[{k!r}]", out)


def _module_patterns(name: str) -> list:
    out: list = []
    mod = import_module(name)
    for attr, value in vars(mod).items():
        if not attr.startswith("__"):
            _walk_patterns(value, f"{name}.{attr}", out)
    return out


def _script_patterns(path: Path) -> list:
    """re.compile(...) calls in a probe script, read from its source (the scripts run on the host, not imported)."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "compile" \
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "re" and node.args:
            try:
                pattern = eval(compile(ast.Expression(node.args[0]), str(path), "eval"), {"re": re})
                flags = eval(compile(ast.Expression(node.args[1]), str(path), "eval"), {"re": re}) \
                    if len(node.args) > 1 else 0
            except Exception:  # built from names: such a pattern is data, covered where the data lives
                continue
            if isinstance(pattern, str):
                out.append((f"{path.name}:{node.lineno}", pattern, flags))
    return out


@lru_cache(maxsize=1)
def all_patterns() -> list:
    from orchestrator.knowledge.catalog import catalog

    out: list = []
    cat = catalog()
    for sig in cat.log_signatures():
        out.append((f"failure mode {sig['id']} (log)", sig["pattern"], 0))

    def conditions(obj, where):
        if isinstance(obj, dict):
            if isinstance(obj.get("matches"), str):
                out.append((f"{where} (matches)", obj["matches"], 0))
            for v in obj.values():
                conditions(v, where)
        elif isinstance(obj, list):
            for v in obj:
                conditions(v, where)

    for e in cat.entries:
        conditions(e.model_dump(), f"failure mode {e.id}")
    for row in yaml.safe_load((ROOT / "knowledge" / "kernel_classes.yaml").read_text()):
        out.append((f"kernel class {row['class']}", row["pattern"], re.I))
    out += _module_patterns("orchestrator.prongs.serving_engine.logs")
    out += _module_patterns("orchestrator.traces.steps") + _module_patterns("orchestrator.traces.kineto")
    out += _module_patterns("orchestrator.prongs.path.parsers")
    from orchestrator.prongs.path.probe import LOG_PATTERNS  # sent to the host's log scan as text

    out += [(f"orchestrator.prongs.path.probe.LOG_PATTERNS[{p['name']}]", p["regex"], 0) for p in LOG_PATTERNS]
    for script in sorted((ROOT / "probes" / "scripts").glob("*.py")):
        out += _script_patterns(script)
    return out


# --- hostile inputs from the pattern's own structure -------------------------------------------------------------

def _minimal(items) -> str:
    """A short string matching the parsed items (a witness; anchors and lookarounds left out)."""
    s = []
    for op, av in items:
        if op is C.LITERAL:
            s.append(chr(av))
        elif op is C.NOT_LITERAL:
            s.append("a" if chr(av) != "a" else "b")
        elif op is C.ANY:
            s.append("a")
        elif op is C.IN:
            s.append(_class_member(av))
        elif op in (C.MAX_REPEAT, C.MIN_REPEAT, C.POSSESSIVE_REPEAT):
            lo, _, sub = av
            s.append(_minimal(sub) * max(lo, 1))
        elif op is C.SUBPATTERN:
            s.append(_minimal(av[-1]))
        elif op is C.ATOMIC_GROUP:
            s.append(_minimal(av))
        elif op is C.BRANCH:
            s.append(_minimal(av[1][0]))
    return "".join(s)


def _class_member(av) -> str:
    negate = any(op is C.NEGATE for op, _ in av)
    for op, v in av:
        if op is C.LITERAL and not negate:
            return chr(v)
        if op is C.RANGE and not negate:
            return chr(v[0])
        if op is C.CATEGORY:
            return {C.CATEGORY_DIGIT: "0", C.CATEGORY_SPACE: " ", C.CATEGORY_WORD: "a",
                    C.CATEGORY_NOT_DIGIT: "a", C.CATEGORY_NOT_SPACE: "a", C.CATEGORY_NOT_WORD: " "}.get(v, "a")
    return "#" if negate else "a"


def _sequences(items):
    """The pattern's alternatives, each as a list of items (top-level and group-level branches opened up)."""
    if len(items) == 1 and items[0][0] is C.BRANCH:
        for alt in items[0][1][1]:
            yield from _sequences(list(alt))
        return
    yield list(items)
    for op, av in items:
        if op is C.BRANCH:
            for alt in av[1]:
                yield from _sequences(list(alt))
        elif op is C.SUBPATTERN:
            yield from _sequences(list(av[-1]))


def pumps(pattern: str, flags: int) -> list[str]:
    """Short strings whose repetition is hostile to `pattern`: every prefix of a minimal match of each alternative,
    every literal run, and the usual suspects."""
    out = {"a", "0", " ", "a0_", "=", "(", ")", "{", "}", "-", ". ", "\t", "a:", "0.", "x, ", "\n", " \n"}
    try:
        parsed = P.parse(pattern, flags)
    except re.error:
        return sorted(out)
    for seq in _sequences(list(parsed)):
        for i in range(1, len(seq) + 1):
            w = _minimal(seq[:i])
            if w:
                out.add(w)
                out.add(w + "a")
                out.add(w + " ")
        run = []
        for op, av in seq + [(None, None)]:
            if op is C.LITERAL:
                run.append(chr(av))
            elif run:
                out.add("".join(run))
                run = []
    return sorted(o for o in out if len(o) <= 400)


class _Slow(Exception):
    pass


def _on_alarm(signum, frame):
    raise _Slow()


def _text(pump: str, n: int) -> str:
    return (pump * (n // len(pump) + 1))[:n] + "\x00"  # a non-matching end: a search that can fail late does


def _best(rx: re.Pattern[str], text: str) -> float:
    """CPU time of one search (this thread's: a loaded machine's preemption does not count)."""
    started = time.thread_time()
    rx.search(text)
    return time.thread_time() - started


def growth(rx: re.Pattern[str], pump: str) -> float | None:
    """How much longer a search of HUGE characters of the pump takes than one of SMALL (the best of 3, interleaved),
    when one of BIG takes over 1 ms of CPU; None when that is fast. Raises _Slow past BUDGET_S."""
    if _best(rx, _text(pump, BIG)) < 0.001:
        return None
    small, huge = _text(pump, SMALL), _text(pump, HUGE)
    t_small = t_huge = float("inf")
    for _ in range(3):
        t_small = min(t_small, _best(rx, small))
        t_huge = min(t_huge, _best(rx, huge))
    return t_huge / t_small


def _bounded_growth(rx: re.Pattern[str], pump: str) -> float | None:
    """growth(), with a search past BUDGET_S counted as unbounded growth."""
    signal.setitimer(signal.ITIMER_REAL, BUDGET_S)
    try:
        return growth(rx, pump)
    except _Slow:
        return float("inf")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def super_linear(pattern: str, flags: int) -> str | None:
    """Why `pattern` grows faster than its input, or None."""
    rx = re.compile(pattern, flags)
    old = signal.signal(signal.SIGALRM, _on_alarm)
    try:
        for pump in pumps(pattern, flags):
            ratio = _bounded_growth(rx, pump)
            if ratio is not None and LIMIT < ratio < float("inf"):  # again: a busy machine's caches can spoil one round
                ratio = min(ratio, _bounded_growth(rx, pump) or 0.0)
            if ratio is not None and ratio > LIMIT:
                if ratio == float("inf"):
                    return f"a search of {pump!r} repeated ran past {BUDGET_S} s"
                return (f"{pump!r} repeated: {HUGE // SMALL}x the text took {ratio:.1f}x the time "
                        f"(linear: {HUGE // SMALL}x, quadratic: {(HUGE // SMALL) ** 2}x)")
    finally:
        signal.signal(signal.SIGALRM, old)
    return None


def test_the_pattern_sources_are_all_found():
    where = [w for w, _, _ in all_patterns()]
    assert sum(w.startswith("failure mode") for w in where) > 30
    assert sum(w.startswith("kernel class") for w in where) >= 7
    assert any("RX_SERVER_ARGS" in w for w in where) and any("RX_NON_DEFAULT" in w for w in where)
    assert any(w.startswith("logscan.py") for w in where) and any(w.startswith("engine.py") for w in where)
    assert any("_PBTXT_FIELD" in w for w in where) and any(w.startswith("path.py") for w in where)


def test_the_detector_finds_the_known_quadratic_patterns():
    """The red team's two (they must be found, or the test below proves nothing) and their bounded forms."""
    assert super_linear(r"sm\d+_.*(tn|nt|nn|tt)", re.I)
    assert super_linear(r"server_args=ServerArgs\((.*)\)\s*$", 0)
    assert super_linear(r"sm\d{1,4}_.{0,200}?(tn|nt|nn|tt)", re.I) is None
    assert super_linear(r"^(?>.*?server_args=ServerArgs\()(.*)\)\s*$", 0) is None


@pytest.mark.parametrize("source", ["catalog", "kernel classes", "engine logs", "probe scripts", "traces",
                                    "path parsers"])
def test_every_pattern_over_host_or_trace_text_is_linear(source):
    prefix = {"catalog": ("failure mode",), "kernel classes": ("kernel class",),
              "engine logs": ("orchestrator.prongs.serving_engine.logs",),
              "traces": ("orchestrator.traces",), "path parsers": ("orchestrator.prongs.path",)}.get(source)
    bad = []
    for where, pattern, flags in all_patterns():
        mine = where.startswith(prefix) if prefix else not where.startswith(
            ("failure mode", "kernel class", "orchestrator."))
        if not mine:
            continue
        why = super_linear(pattern, flags)
        if why:
            bad.append(f"{where}: {pattern[:120]!r}: {why}")
    assert not bad, "super-linear patterns (bound each repetition, or anchor and make the prefix atomic):\n" + \
        "\n".join(bad)
