"""The fuzz pass's child: hand each input to what reads its kind, the way the tool does, and say how it ended.

    python tests/fuzz/harness.py LIST.json     # [[kind, path], ...]; one JSON line per input on stdout

Run under RLIMIT_AS by tests/fuzz/test_fuzz.py (tests/fuzz/bounded.py). An input ends `ok` (a result), `clean` (the
kind's own error with a one-line message: what the CLI prints with exit 2), or fails: `crash` (any other exception:
a traceback for a user), `message` (the error's message is not one line), `timeout` (past PER_INPUT_S), `memory`.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import signal
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any, Callable

PER_INPUT_S = 5.0


class _Timeout(BaseException):
    pass


def _on_alarm(signum: int, frame: Any) -> None:
    raise _Timeout()


def _plain(path: Path, tmp: Path) -> Path:
    """The input as its reader gets it: gzipped corpus files decompressed (traces read gzip themselves)."""
    if not path.name.endswith(".gz"):
        return path
    out = tmp / path.name[:-3]
    out.write_bytes(gzip.decompress(path.read_bytes()))
    return out


def t_observations(p: Path, tmp: Path) -> None:
    from orchestrator.observations import load_observations

    load_observations(_plain(p, tmp))


def t_bench(p: Path, tmp: Path) -> None:
    from orchestrator.benchresults import load_bench

    load_bench(_plain(p, tmp))


def t_baseline_log(p: Path, tmp: Path) -> None:
    from orchestrator.baselines import load_baseline_log

    load_baseline_log(_plain(p, tmp))


def t_log(p: Path, tmp: Path) -> None:
    """Engine log lines as the host returns them (cut at the host's line length): the engine log parser, the
    catalog's log signals, the unclassified-line scan."""
    from orchestrator.analysis.signals import _script
    from orchestrator.knowledge.catalog import catalog
    from orchestrator.limits import LOG_LINE_MAX_CHARS
    from orchestrator.prongs.serving_engine.logs import parse_log_lines

    text = _plain(p, tmp).read_bytes().decode("utf-8", "replace")
    lines = [(p.name, i, ln[:LOG_LINE_MAX_CHARS]) for i, ln in enumerate(text.splitlines(), 1)]
    parse_log_lines(lines)
    patterns = [s.compiled() for e in catalog() for s in e.signals if s.log]
    for _, _, ln in lines:
        for rx in patterns:
            rx.search(ln)
        _script.level_of(ln)
        _script.dedupe_key(ln)


def t_config(p: Path, tmp: Path) -> None:
    """A served process's --config as the engine configuration and the settings audit read it."""
    from orchestrator.prongs.settings_audit.audit import audit_process
    from orchestrator.prongs.serving_engine.cmdline import effective_config
    from orchestrator.prongs.settings_audit.models import ProcessSettings, SettingsFile

    text = _plain(p, tmp).read_bytes().decode("utf-8", "replace")
    for engine, flag in (("vllm", "--config"), ("sglang", "--config"), ("trtllm", "--extra_llm_api_options")):
        argv = ["serve", "/m", flag, "/srv/c.yaml"]
        effective_config(engine, argv, config_files={"/srv/c.yaml": text})
        audit_process(ProcessSettings(pid=1, engine=engine, version="0.32.0", argv=argv,
                                      files={"/srv/c.yaml": SettingsFile(text=text, role=flag)}))


def t_path_config(p: Path, tmp: Path) -> None:
    """A layer's configuration (a `--path-config` file, or a proxy's config read on the host) through each layer's
    parser (a ConfigError is its clean refusal) and the path report (total: nothing raises)."""
    from orchestrator.prongs.path import parsers as ps
    from orchestrator.prongs.path.probe import report_from

    text = _plain(p, tmp).read_bytes().decode("utf-8", "replace")
    where = f"/etc/layer/{p.name}"
    ps.sniff(text, where)
    for layer in ("nginx", "haproxy", "envoy", "litellm", "ray_serve", "triton", "systemd", "k8s", "docker",
                  "k8s_events"):
        try:
            ps.parse_one(layer, {where: text})
        except ps.ConfigError:
            pass
    files = [{"path": where, "layer": layer, "role": role, "text": text}
             for layer, role in (("nginx", "config"), ("haproxy", "config"), ("envoy", "config"),
                                 ("litellm", "config"), ("ray_serve", "config"), ("triton", "model_config"))]
    from orchestrator.transcript import _dumps

    # recorded as the tool's data is: a transcript line, written as UTF-8
    _dumps(report_from("h", {"files": files}, {str(p): text}).model_dump(mode="json")).encode("utf-8")


def t_trace(p: Path, tmp: Path) -> None:
    """A --trace file through the up-front check and the analysis (the trace tool runs the same in its child)."""
    from orchestrator.traces.analyze import analyze
    from orchestrator.traces.inputs import expand
    from orchestrator.traces.text import report_text

    expand([str(p)])
    report = analyze([str(p)], timeout_s=PER_INPUT_S)
    report_text(report)
    report.model_dump_json()


def t_transcript(p: Path, tmp: Path) -> None:
    """show, show --json and report (.html, .md) as the CLI runs them: exit 0 or 2, one line, never a traceback."""
    from orchestrator.cli import main

    path = _plain(p, tmp)
    for args in (["show", str(path)], ["show", str(path), "--json"], ["report", str(path), "-o", str(tmp / "r.html")],
                 ["report", str(path), "-o", str(tmp / "r.md")]):
        err = io.StringIO()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            rc = main(args)
        text = err.getvalue()
        if "Traceback" in text or rc not in (0, 2):
            raise AssertionError(f"{' '.join(args[:1])}: exit {rc}: {text[-1500:]}")
        lines = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith(("notice:", "warning:"))]
        if rc == 2 and len(lines) != 1:
            raise AssertionError(f"{args[0]}: exit 2 with {len(lines)} lines: {text[-1500:]}")


TARGETS: dict[str, tuple[Callable[[Path, Path], None], tuple[str, ...]]] = {
    "observations": (t_observations, ("orchestrator.observations:ObservationsError",)),
    "bench": (t_bench, ("orchestrator.observations:ObservationsError",)),
    "baseline_log": (t_baseline_log, ("orchestrator.observations:ObservationsError",)),
    "log": (t_log, ()),
    "config": (t_config, ()),
    "trace": (t_trace, ("orchestrator.traces.inputs:TraceInputError", "orchestrator.traces.kineto:TraceFormatError",
                        "orchestrator.traces.nsys:NsysFormatError")),
    "nsys": (t_trace, ("orchestrator.traces.inputs:TraceInputError", "orchestrator.traces.kineto:TraceFormatError",
                       "orchestrator.traces.nsys:NsysFormatError")),
    "transcript": (t_transcript, ()),
    "path_config": (t_path_config, ()),
}
"""What reads each kind, and the errors that are its clean refusal (one line, exit 2 at the CLI)."""


def _cls(spec: str) -> type:
    mod, name = spec.split(":")
    return getattr(__import__(mod, fromlist=[name]), name)


def run_one(kind: str, path: Path) -> dict[str, Any]:
    fn, clean_specs = TARGETS[kind]
    clean = tuple(_cls(s) for s in clean_specs)
    started = time.monotonic()
    out: dict[str, Any] = {"kind": kind, "path": str(path)}
    with tempfile.TemporaryDirectory() as tmp:
        signal.setitimer(signal.ITIMER_REAL, PER_INPUT_S)
        try:
            fn(path, Path(tmp))
            out["end"] = "ok"
        except _Timeout:
            out["end"], out["detail"] = "timeout", f"past {PER_INPUT_S} s"
        except MemoryError:
            out["end"], out["detail"] = "memory", "MemoryError"
        except clean as e:  # type: ignore[misc]
            msg = str(e)
            out["end"] = "clean" if "\n" not in msg and 0 < len(msg) < 1000 else "message"
            out["detail"] = msg[:300]
        except Exception as e:
            out["end"] = "crash"
            out["detail"] = f"{type(e).__name__}: {str(e)[:300]}\n" + "".join(traceback.format_tb(e.__traceback__)[-4:])
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    out["s"] = round(time.monotonic() - started, 3)
    return out


def main(argv: list[str]) -> int:
    signal.signal(signal.SIGALRM, _on_alarm)
    for kind, path in json.loads(Path(argv[1]).read_text()):
        print(json.dumps(run_one(kind, Path(path))), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
