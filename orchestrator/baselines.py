"""The run before, given on the command line: `--baseline-log FILE` (the engine log of the previous version or
configuration), read on this machine before any work and kept as the lines that name the engine's version and
settings; `--baseline FILE` is a benchmark result read by orchestrator/benchresults.py and labelled `baseline`.

The lines kept are the ones the engine probe's log parser reads a version and settings from (prongs/serving_engine/logs.py),
each passed through orchestrator.redact (an `api_key` in vLLM's "non-default args" never reaches the transcript).
prongs/settings_audit/before_after.py compares them with the `--log` the engine probe reads on the host.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Callable

from orchestrator.limits import BASELINE_LOG_MAX_BYTES, BASELINE_LOG_MAX_LINES, LOG_LINE_MAX_CHARS
from orchestrator.observations import BaselineLog, ObservationsError

MAX_BYTES = BASELINE_LOG_MAX_BYTES
"""Larger than any engine log a user keeps; the file is read line by line, only the selected lines are kept."""
MAX_LINES = BASELINE_LOG_MAX_LINES
LITERALS = ("vllm api server version", "llm engine (v", "vllm version", "tensorrt-llm version", "sglang version",
            "non-default args: ", "server_args=serverargs(", "] args: namespace(")
"""A line is matched against the version and settings patterns only when it holds one of their literals (lowercase):
most lines of a log hold none."""


class BaselineLogError(ObservationsError):
    """--baseline-log names no readable engine log (one line: the file, what is wrong, what to pass)."""


def _masked(line: str, rx: re.Pattern[str], secret: Callable[[str], bool]) -> str:
    """vLLM's "non-default args: {...}" with the values of secret-named keys (api_key) replaced, so the line stays a
    Python literal the comparison can read after redaction."""
    m = rx.search(line)
    if not m:
        return line
    try:
        d = ast.literal_eval(m.group(1))
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return line
    if not isinstance(d, dict):
        return line
    d = {k: ("<redacted>" if isinstance(k, str) and secret(k) else v) for k, v in d.items()}
    return line[: m.start(1)] + repr(d) + line[m.end(1):]


def load_baseline_log(path: str | Path) -> BaselineLog:
    """The version and settings lines of an engine log on this machine; BaselineLogError when it has none."""
    from orchestrator.prongs.serving_engine.logs import (RX_ARGS_NAMESPACE, RX_ENGINE_CONFIG, RX_NON_DEFAULT, RX_SERVER_ARGS,
                                                 RX_VERSION)
    from orchestrator.redact import redact, secret_name
    from orchestrator.errors import InputError
    from orchestrator.validate import check_input_file

    fix = "pass the log the engine wrote in the run before (vLLM, SGLang, TGI or TensorRT-LLM server log)"
    try:
        p = check_input_file(path, "--baseline-log", fix, max_bytes=MAX_BYTES)
    except InputError as exc:
        raise BaselineLogError(str(exc)) from None
    wanted = [*RX_VERSION, RX_ENGINE_CONFIG, RX_NON_DEFAULT, RX_SERVER_ARGS, RX_ARGS_NAMESPACE]
    kept: list[str] = []
    with p.open("r", encoding="utf-8", errors="replace") as fh:
        # lines cut at LOG_LINE_MAX_CHARS as the host's log reader cuts them: the patterns' work per line is bounded
        # (and linear: tests/fuzz/test_patterns_linear.py), a line of hundreds of kB costs no more than its first 8,000
        # characters; the file is read in bounded pieces, never a whole line at once
        while len(kept) < MAX_LINES and (line := fh.readline(LOG_LINE_MAX_CHARS)):
            if not line.endswith("\n"):
                while (rest := fh.readline(LOG_LINE_MAX_CHARS)) and not rest.endswith("\n"):
                    pass  # the rest of an over-long line
            low = line.lower()
            if any(lit in low for lit in LITERALS) and any(rx.search(line) for rx in wanted):
                kept.append(redact(_masked(line.rstrip("\n"), RX_NON_DEFAULT, secret_name)))
    if not kept:
        raise BaselineLogError(f"--baseline-log {p} has no engine version or settings line (vLLM's 'vLLM API server "
                               f"version' / 'non-default args', SGLang's 'server_args=ServerArgs(', ...); {fix}")
    return BaselineLog(source=p.name, lines=kept)
