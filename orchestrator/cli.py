"""The `investigate` command (its contract: the README's synopsis and docs/usage.md).

Exit codes: 0 a diagnosis was produced (possibly with gaps), 1 the run failed, 2 bad usage or bad input. Bad input is
one line on stderr naming the problem and the fix, never a traceback, and it is found before any work starts.

Start-up is kept cheap (`investigate --help`, `specs`, `roofline` must not pay for paramiko, anthropic, the agent
layer or the analysis): everything heavier than typer is imported inside the command that needs it.

Structure, for whoever adds an option:
- one function per subcommand below; options are typer parameters;
- every input a command takes is checked in its `_check_*` helpers *before* anything runs (files exist and are
  text, output paths are writable, observations and settings validate), raising `BadInput` (exit 2, one line);
- a library exception that means bad input subclasses `orchestrator.errors.InputError` (exit 2, its one line).
"""

from __future__ import annotations

import os
import sys


def _fast_path(argv: list[str]) -> int | None:
    """`investigate specs GPU`, the most common quick look-up, without typer (which builds a pydantic adapter per
    parameter): start-up cost. None: not this command, go through typer."""
    if len(argv) != 2 or argv[0] != "specs" or argv[1].startswith("-") or not argv[1].strip():
        return None
    # pydantic otherwise scans every installed distribution for plugins on its first model (~15 ms); none matters
    # to printing a spec sheet, and this process ends right after
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "1")
    from orchestrator.render.specs import UnknownGpu, render_specs
    from orchestrator.sanitize import sanitize  # `_shown` is defined below: this runs before the module's rest

    try:
        sys.stdout.write(render_specs(argv[1]).rstrip() + "\n")
    except UnknownGpu as exc:
        sys.stderr.write(f"investigate: {sanitize(' '.join(str(exc).split()))}\n")
        return 2
    return 0


if __name__ == "__main__" and (_rc := _fast_path(sys.argv[1:])) is not None:
    sys.exit(_rc)

import difflib
from pathlib import Path
from typing import Any, List, Optional

import typer

from orchestrator.errors import InputError

try:  # typer >= 0.2x vendors its own click; older typers use the click package
    from typer._click import exceptions as click_exc
except ImportError:  # pragma: no cover
    from click import exceptions as click_exc  # type: ignore[no-redef]

# rich_markup_mode=None: plain click help (rich's help renderer alone costs ~75 ms of start-up)
app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False, rich_markup_mode=None,
                  context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 120},
                  help="Why is my LLM inference slow? Investigate a GPU host and get a diagnosis with evidence.")

SUBCOMMANDS = ("ask", "replay", "resume", "show", "report", "probe", "specs", "roofline", "reference")

class BadInput(InputError):
    """Exit 2 with this one line (as every `InputError` the library raises)."""


class RunFailedExit(Exception):
    """Exit 1 with this one line."""


class Interrupted(Exception):
    """Ctrl-C during a run: exit 130 with this line (where the transcript is and how to continue)."""


def _stdout():
    from rich.console import Console

    from orchestrator.sanitize import sanitized

    class Stdout(Console):
        def on_broken_pipe(self) -> None:
            raise BrokenPipeError  # rich would exit 1; main() ends quietly with 0 (the reader stopped, nothing failed)

    # whatever a renderer prints on it, no terminal control from the text reaches the user's terminal
    out = sys.stdout if sys.stdout.isatty() else _NoTrailingSpaces(sys.stdout)
    return sanitized(Stdout(file=out, soft_wrap=False))


class _NoTrailingSpaces:
    """stdout into a pipe or a file, each line without the spaces rich pads it with to the console's width (a table's
    cells, a wrapped line): `show | grep`, a diff or an editor sees the text, not the padding."""

    def __init__(self, out) -> None:
        self._out = out
        self._line = ""

    def write(self, text: str) -> int:
        *done, self._line = (self._line + text).split("\n")
        if done:
            self._out.write("".join(ln.rstrip(" ") + "\n" for ln in done))
        return len(text)

    def flush(self) -> None:
        if self._line:  # a print that ended without a newline: written as it is, nothing after it is known yet
            self._out.write(self._line)
            self._line = ""
        self._out.flush()

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        return self._out.fileno()

    @property
    def encoding(self) -> str:
        return getattr(self._out, "encoding", "utf-8")


def _shown(text: object) -> str:
    """A file name or message as printed: terminal control removed or escaped (a name may hold ESC or BEL)."""
    from orchestrator.sanitize import sanitize

    return sanitize(str(text))


def _one_line(msg: object) -> str:
    from orchestrator.redact import scrub_text

    return scrub_text(" ".join(str(msg).split()))


def _scrub(model):
    """What is printed or written: secrets redacted, terminal control removed (orchestrator.redact)."""
    from orchestrator.redact import scrub_model

    return scrub_model(model)


# ---------------------------------------------------------------------------------------------------------------
# input checks: all of them run before any work (an investigation's are `orchestrator.request.RunRequest`'s)


def _request(question: Any, **fields: Any):
    """The investigation's inputs, checked once (`RunRequest.of`); a bad one is exit 2 with its one line."""
    from orchestrator.request import RunRequest

    return RunRequest.of(question, **fields)


def _inputs(**fields: Any):
    """Inputs checked as an investigation's, for a command without a question (`probe`, `resume`)."""
    from orchestrator.request import RunRequest

    return RunRequest.inputs(**fields)


REPORT_FORMATS = {".html": "html", ".htm": "html", ".md": "markdown", ".markdown": "markdown"}
"""What a report file's extension says it is; anything else is refused before the run."""


def _report_format(path: Path, option: str) -> str:
    fmt = REPORT_FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise BadInput(f"cannot write a {path.suffix or 'extension-less'} report {path}: reports are HTML or Markdown; "
                       f"pass a .html or .md file to {option}")
    return fmt


def _check_report(report: Optional[Path], option: str = "--report") -> None:
    if report is not None:
        from orchestrator.request import check_writable

        check_writable(report, option, "report")
        _report_format(report, option)


def _check_writable(path: Optional[Path], option: str, what: str) -> None:
    from orchestrator.request import check_writable

    check_writable(path, option, what)


def _settings():
    from orchestrator.settings import load_settings

    try:
        return load_settings()
    except ValueError as exc:
        raise BadInput(str(exc).splitlines()[0]) from None


def _warn_missing_logs(request) -> None:
    for p in request.missing_local_logs():
        sys.stderr.write(f"warning: --log {_shown(p)} not found on this machine; it is listed under the diagnosis's "
                         "gaps\n")


# ---------------------------------------------------------------------------------------------------------------
# running and printing


def _progress(no_progress: bool):
    if no_progress:
        return None
    from orchestrator.render.progress import Progress

    return Progress(sys.stderr)


_TRANSCRIPT: list[Any] = [None]
"""The transcript the running command writes: an interrupt that surfaces outside the run still names it."""


def _run_with_progress(fn, no_progress: bool, *, record: Any, **kwargs):
    """`fn(progress=..., **kwargs)` to completion; `record`: the transcript it writes (an interrupt names it)."""
    import anyio

    _TRANSCRIPT[0] = record
    progress = _progress(no_progress)
    try:
        return anyio.run(lambda: fn(progress=progress, **kwargs))
    except KeyboardInterrupt:
        raise Interrupted(_interrupted_line(record)) from None
    finally:
        if progress is not None:
            progress.close()


def _interrupted() -> str:
    """What to say about a Ctrl-C, wherever it surfaced: the run's transcript and how to resume, if one was started."""
    if _TRANSCRIPT[0] is not None:
        return _interrupted_line(_TRANSCRIPT[0])
    return _SIGNALLED[0] + " (SIGTERM)" if _SIGNALLED else "interrupted"


def _interrupted_line(transcript: Any) -> str:
    what = _SIGNALLED[0] + " (SIGTERM)" if _SIGNALLED else "interrupted"
    if isinstance(transcript, (str, Path)) and Path(transcript).is_file() and Path(transcript).stat().st_size:
        return (f"{what}; transcript: {transcript}; continue with `investigate resume {transcript}` "
                "(finished subagents are reused)")
    return f"{what} before a transcript was started; nothing to resume, run the command again"


def _emit_result(result, *, as_json: bool, report: Optional[Path], no_progress: bool = True) -> None:
    """Print the diagnosis and the transcript path, then write the report: a report that cannot be written at the
    end (the disk filled, the folder went) is exit 2 after the result was shown, never instead of it."""
    if no_progress:  # the progress display already printed them as they happened
        for n in getattr(result, "notices", ()):
            sys.stderr.write(f"notice: {_one_line(n)}\n")
    diagnosis = _scrub(result.diagnosis) if result.diagnosis is not None else None
    if diagnosis is not None:
        if as_json:
            import json

            doc = diagnosis.model_dump(mode="json")
            doc.setdefault("also_noticed", [])  # one shape for a consumer, empty or not
            sys.stdout.write(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
        else:
            from orchestrator.render.diagnosis import render_terminal

            render_terminal(diagnosis, _stdout())
        sys.stdout.flush()
    if result.transcript_path:
        sys.stderr.write(f"transcript: {_shown(result.transcript_path)}\n")
    if report and diagnosis is not None:
        if _report_format(report, "--report") == "markdown":
            from orchestrator.render.diagnosis import to_markdown

            text = to_markdown(diagnosis, [_scrub(e) for e in result.events])
        else:
            from orchestrator.render.html import render_html

            text = render_html(diagnosis, [_scrub(e) for e in result.events])
        _write(report, text, shown=bool(result.transcript_path))
        sys.stderr.write(f"report: {_shown(report)}\n")
    if result.status != "ok":
        tail = ""
        if result.status == "cancelled" and result.transcript_path:
            tail = f"; continue with `investigate resume {result.transcript_path}`"
        raise RunFailedExit(f"run {result.status}: {result.error}{tail}")


def _write(path: Path, text: str, *, shown: bool = False) -> None:
    """Write an output file; `shown`: the diagnosis was printed and the transcript named, so the message says so."""
    from orchestrator.sanitize import sanitize

    try:
        path.write_text(sanitize(text), encoding="utf-8")
    except OSError as exc:
        why = (exc.strerror or str(exc)).lower()
        if shown:
            raise BadInput(f"cannot write {path}: {why}; the diagnosis is printed above and kept in the transcript: "
                           "write the report again with `investigate report TRANSCRIPT -o FILE`") from None
        raise BadInput(f"cannot write {path}: {why}; pass a writable path") from None


def _new_transcript_path(transcript: Optional[Path], question: str) -> tuple[Path, str]:
    import uuid

    from orchestrator.transcript import default_path

    run_id = uuid.uuid4().hex
    if transcript is not None:
        return transcript, run_id
    path = default_path(question, run_id)
    path.parent.mkdir(parents=True, exist_ok=True)  # the state folder is ours to make (the writer would, later)
    return path, run_id


def _recorded(path: Path) -> Path:
    """A TRANSCRIPT argument: the file named, or else a transcript shipped with the package named by its file name,
    with or without `.jsonl` or `transcripts/` (a wheel keeps them inside the package, where `transcripts/X.jsonl`
    from the README is no path)."""
    if path.exists() or str(path) == "-":
        return path
    from orchestrator.agentdefs import builtin_dir
    from orchestrator.transcript import shipped_transcript

    found = shipped_transcript(path)
    if found is not None:
        return found
    shipped = builtin_dir("transcripts")
    if len(path.parts) == 1 or path.parent.name == "transcripts":
        names = ", ".join(sorted(p.stem for p in shipped.glob("*.jsonl")))
        if names:
            raise BadInput(f"transcript {path} not found; the shipped examples are {names} "
                           "(e.g. `investigate replay seed-rtx-pro-6000-fp4`)")
    return path


# ---------------------------------------------------------------------------------------------------------------
# commands


@app.command("ask", short_help="Investigate QUESTION (the default: `investigate \"why is FP4 slow?\"`).", help="Investigate QUESTION (the default command: `investigate \"why is FP4 slow\"`).")
def ask(
    question: str = typer.Argument(..., metavar="QUESTION", help="The question, e.g. \"why is FP4 slow?\""),
    host: List[str] = typer.Option([], "--host", metavar="DEST", help="ssh-config alias or [user@]host[:port]; "
                                   "default: this machine (repeatable: several hosts in one investigation)"),
    hosts_file: Optional[Path] = typer.Option(None, "--hosts", metavar="FILE", help="file of hosts: one destination "
                                              "per line, or YAML with roles (prefill/decode/router)"),
    slurm: Optional[str] = typer.Option(None, "--slurm", metavar="NODES", help="Slurm nodelist or partition (or . for "
                                        "this allocation): probe each node through srun"),
    k8s: Optional[str] = typer.Option(None, "--k8s", metavar="SELECTOR", help="pod label selector: probe each pod "
                                      "through kubectl exec"),
    k8s_namespace: Optional[str] = typer.Option(None, "--namespace", metavar="NS", help="Kubernetes namespace of the "
                                                "--k8s pods"),
    k8s_container: Optional[str] = typer.Option(None, "--container", metavar="NAME", help="container of the --k8s "
                                                "pods to exec into"),
    ssh_config: Optional[Path] = typer.Option(None, "--ssh-config", metavar="FILE", help="ssh config file to use instead of ~/.ssh/config"),
    python: Optional[str] = typer.Option(None, "--python", metavar="PATH", help="the serving interpreter on the host"),
    observations: Optional[Path] = typer.Option(None, "--observations", metavar="FILE", help="YAML/JSON observations file"),
    log: List[str] = typer.Option([], "--log", metavar="PATH", help="server log path on the host (repeatable)"),
    trace: List[str] = typer.Option([], "--trace", metavar="FILE", help="profile on this machine: Kineto/PyTorch "
                                    "profiler .json(.gz) or nsys SQLite export; a directory or glob of per-rank "
                                    "files (repeatable)"),
    baseline_trace: List[str] = typer.Option([], "--baseline-trace", metavar="FILE", help="profile to diff the "
                                             "--trace against (repeatable, same forms)"),
    path_config: List[Path] = typer.Option([], "--path-config", metavar="FILE", help="config of a layer in front "
                                           "of the engine that the host cannot show (nginx, HAProxy, Envoy/Istio, "
                                           "LiteLLM, a Kubernetes manifest...), on this machine (repeatable)"),
    bench: List[Path] = typer.Option([], "--bench", metavar="FILE", help="benchmark result file: vllm bench serve "
                                     "JSON, SGLang bench_serving JSONL, genai-perf profile export (repeatable)"),
    baseline: List[Path] = typer.Option([], "--baseline", metavar="FILE", help="benchmark result of the run before "
                                        "(with --bench AFTER): the two runs are compared, changed defaults ranked"),
    baseline_log: List[Path] = typer.Option([], "--baseline-log", metavar="FILE", help="engine log of the run before, "
                                            "on this machine (with --log AFTER): versions and settings compared"),
    model: Optional[str] = typer.Option(None, "--model", metavar="ID", help="Claude model id or alias (anthropic backend)"),
    offline: bool = typer.Option(False, "--offline", help="use the deterministic offline backend"),
    agents: List[Path] = typer.Option([], "--agents", metavar="DIR", help="directory of extra agent definitions (repeatable)"),
    measure: bool = typer.Option(False, "--measure", help="allow probes that load the GPU (GEMM, all-reduce)"),
    sample_s: Optional[float] = typer.Option(None, "--sample-s", metavar="SECONDS", help="the resource account's "
                                             "sampling window (default 2 s; it overlaps the other probes)"),
    measure_wait: Optional[float] = typer.Option(None, "--measure-wait", metavar="SECONDS", help="with --measure: "
                                                 "wait up to SECONDS for other processes to leave the GPUs before "
                                                 "measuring (default 0: measure now, marked as shared)"),
    transcript: Optional[Path] = typer.Option(None, "--transcript", metavar="FILE", help="where to write the transcript"),
    report: Optional[Path] = typer.Option(None, "--report", metavar="FILE.html", help="also write a self-contained HTML report"),
    as_json: bool = typer.Option(False, "--json", help="print exactly one JSON document (the diagnosis)"),
    no_progress: bool = typer.Option(False, "--no-progress", help="no progress display on stderr"),
) -> None:
    # every input first: nothing runs (nothing is paid for) before all of them are known to be usable
    request = _request(question, host=host, hosts_file=hosts_file, slurm=slurm, k8s=k8s, k8s_namespace=k8s_namespace,
                       k8s_container=k8s_container, ssh_config=ssh_config, python=python, observations=observations,
                       logs=log, traces=trace, baseline_traces=baseline_trace, path_configs=path_config, bench=bench, baseline=baseline,
                       baseline_log=baseline_log, model=model, offline=offline or None, agents_dirs=agents,
                       measure=measure, sample_s=sample_s, measure_wait=measure_wait, transcript=transcript)
    _check_report(report)
    settings = _settings()
    _warn_missing_logs(request)

    from orchestrator.api import run_request

    path, run_id = _new_transcript_path(transcript, request.question)
    request = request.model_copy(update={"transcript": path, "run_id": run_id})
    result = _run_with_progress(run_request, no_progress, record=path, request=request, settings=settings)
    _emit_result(result, as_json=as_json, report=report, no_progress=no_progress)


@app.command("replay", help="Re-run a recorded investigation with no host and no network.")
def replay_cmd(
    transcript_path: Path = typer.Argument(..., metavar="TRANSCRIPT"),
    as_json: bool = typer.Option(False, "--json"),
    model: Optional[str] = typer.Option(None, "--model", metavar="ID", help="keep the subagents' results, re-synthesize with this model"),
    offline: bool = typer.Option(False, "--offline", help="keep the subagents' results, re-synthesize offline"),
    transcript: Optional[Path] = typer.Option(None, "--transcript", metavar="FILE", help="record the replay to this file"),
    report: Optional[Path] = typer.Option(None, "--report", metavar="FILE.html"),
    no_progress: bool = typer.Option(True, "--no-progress/--progress"),
) -> None:
    transcript_path = _recorded(transcript_path)
    from orchestrator.validate import check_backend_choice

    check_backend_choice(model, offline)
    _check_report(report)
    _check_writable(transcript, "--transcript", "transcript")
    _check_not_cut_off(transcript_path, exact=not (model or offline))
    from orchestrator.api import replay

    result = _run_with_progress(replay, no_progress, record=transcript, path=transcript_path, model=model,
                                offline=offline or None, transcript=transcript or False)
    _emit_result(result, as_json=as_json, report=report)


def _check_not_cut_off(path: Path, *, exact: bool) -> None:
    """An exact replay of a run that never finished cannot produce a diagnosis: say so and point at `resume`."""
    if not exact or not path.is_file():
        return  # the reader names a missing file
    from orchestrator.events import RunFinished
    from orchestrator.transcript import read_transcript

    t = read_transcript(path)
    finished = t.of_type(RunFinished)
    if not finished or finished[-1].status == "cancelled":
        why = "was interrupted" if finished else "is cut off (it has no run_finished event)"
        raise BadInput(f"{path} {why}; finish the run with `investigate resume {path}`, "
                       f"or re-synthesize what it has with `investigate replay {path} --offline`")


@app.command("resume", short_help="Finish an interrupted run, re-using the subagents that had finished.",
             help="Finish an interrupted run, re-using every subagent that had finished. The recorded question and "
             "hosts are shown and asked for confirmation (--yes: without asking, e.g. from a script); or name them "
             "again with --question and --host.")
def resume_cmd(
    transcript_path: Path = typer.Argument(..., metavar="TRANSCRIPT"),
    yes: bool = typer.Option(False, "--yes", "-y", help="resume with the recorded question and hosts without asking"),
    question: Optional[str] = typer.Option(None, "--question", metavar="TEXT",
                                           help="the recorded question, confirmed (or reworded)"),
    host: List[str] = typer.Option([], "--host", metavar="DEST", help="each host the run was recorded on, named "
                                   "again (none for a run on this machine)"),
    ssh_config: Optional[Path] = typer.Option(None, "--ssh-config", metavar="FILE",
                                              help="ssh config file to use instead of ~/.ssh/config"),
    python: Optional[str] = typer.Option(None, "--python", metavar="PATH", help="the serving interpreter on the host"),
    log: List[str] = typer.Option([], "--log", metavar="PATH", help="server log path on the host (repeatable)"),
    model: Optional[str] = typer.Option(None, "--model", metavar="ID", help="Claude model id or alias (anthropic backend)"),
    offline: bool = typer.Option(False, "--offline", help="use the deterministic offline backend"),
    agents: List[Path] = typer.Option([], "--agents", metavar="DIR", help="directory of extra agent definitions (repeatable)"),
    as_json: bool = typer.Option(False, "--json"),
    transcript: Optional[Path] = typer.Option(None, "--transcript", metavar="FILE", help="where to write the new transcript"),
    report: Optional[Path] = typer.Option(None, "--report", metavar="FILE.html", help="also write a self-contained HTML report"),
    no_progress: bool = typer.Option(False, "--no-progress"),
) -> None:
    transcript_path = _recorded(transcript_path)
    # the caller's own inputs first (checked as an investigation's), then what the transcript says, confirmed
    _inputs(ssh_config=ssh_config, python=python, logs=log, model=model, offline=offline or None,
             agents_dirs=agents, transcript=transcript)
    _check_report(report)
    settings = _settings()
    from orchestrator.api import resume
    from orchestrator.resume import confirm_resume
    from orchestrator.transcript import read_transcript

    old = read_transcript(transcript_path)
    accept = question is None and not host
    if accept:
        _confirm_recorded(old, transcript_path, yes=yes)
    # the question and hosts the user confirmed, checked before anything runs; nothing else comes from the file
    confirmed, dests = confirm_resume(old, question, list(host), accept_recorded=accept)
    path, run_id = _new_transcript_path(transcript, confirmed)
    result = _run_with_progress(resume, no_progress, record=path, path=transcript_path, question=confirmed,
                                host=dests, ssh_config=ssh_config, python=python, logs=log, model=model,
                                offline=offline or None, agents_dirs=agents, settings=settings, transcript=path,
                                run_id=run_id)
    _emit_result(result, as_json=as_json, report=report, no_progress=no_progress)


def _confirm_recorded(old, path: Path, *, yes: bool) -> None:
    """Show the recorded question and hosts (data someone wrote: shown, never obeyed) and have them confirmed: at a
    terminal by answering y, otherwise by --yes; BadInput (one line that shows them) when neither."""
    from orchestrator.resume import quoted, recorded_target
    from orchestrator.validate import MAX_QUESTION_CHARS

    question, dests = recorded_target(old)
    # in full: what is confirmed is what the run is then asked (a question is at most MAX_QUESTION_CHARS long)
    where = ", ".join(quoted(d, MAX_QUESTION_CHARS) for d in dests) if dests else "this machine"
    named = " ".join(["--question", quoted(question, MAX_QUESTION_CHARS),
                      *(f"--host {quoted(d, MAX_QUESTION_CHARS)}" for d in dests)])
    if not yes and not sys.stdin.isatty():
        raise BadInput(f"{_shown(path)} was recorded on {where}, asking {quoted(question, MAX_QUESTION_CHARS)}; stdin "
                       f"is not a terminal "
                       f"to confirm them: pass --yes to resume with them (`investigate resume --yes {_shown(path)}`), "
                       f"or name them again with {named}")
    sys.stderr.write(f"resume {_shown(path)}: question {quoted(question, MAX_QUESTION_CHARS)}, on {where}\n")
    if yes:
        return
    sys.stderr.write("Resume with this question and these hosts? [y/N] ")
    sys.stderr.flush()
    answer = sys.stdin.readline().strip().lower()
    if answer not in ("y", "yes"):
        raise RunFailedExit("not resumed (not confirmed); nothing was run")


@app.command("show", short_help="Timeline of a transcript: agents, tools with timings, usage.", help="Timeline of a transcript: agents, their tools with timings, usage.")
def show_cmd(transcript_path: Path = typer.Argument(..., metavar="TRANSCRIPT"),
             as_json: bool = typer.Option(False, "--json")) -> None:
    transcript_path = _recorded(transcript_path)
    from orchestrator.render.timeline import build_timeline, render_timeline
    from orchestrator.transcript import iter_transcript

    # streamed, one line at a time: memory stays bounded on a transcript of any size (bench/show.py);
    # a damaged line is named and the rest still shown
    from orchestrator.events import DiagnosisSubmitted

    warnings: list[str] = []
    _, events = iter_transcript(transcript_path, warnings)
    submitted: list = []  # the last diagnosis event only (the fleet table reads it), not every event

    from orchestrator.prongs import PRONGS, sections

    # the results the prongs' terminal sections read (their tools' and the run's observations): a few small events
    shown_tools = {"observations", *(t.name for p in PRONGS if p.terminal for t in p.parts("tools"))}
    shown: list = []

    def tap(stream):
        for e in stream:
            if isinstance(e, DiagnosisSubmitted):
                submitted[:] = [e]
            elif getattr(e, "tool", None) in shown_tools and getattr(e, "data", None):
                shown.append(e)
            yield e

    timeline = _scrub(build_timeline(tap(events)))
    for w in warnings:
        sys.stderr.write(f"warning: {_one_line(w)}\n")
    if as_json:
        sys.stdout.write(timeline.model_dump_json(indent=2) + "\n")
    else:
        render_timeline(timeline, _stdout())
        _show_fleet(submitted)
        for section in sections("terminal"):  # each prong's own tables (engine config and latency, settings)
            section(shown + submitted, None, _stdout())


def _show_fleet(events) -> None:
    """Multi-host runs: the fleet comparison of the recorded diagnosis, after the timeline (hosts helper's hook)."""
    from pydantic import ValidationError

    from orchestrator.diagnosis import FleetTable
    from orchestrator.events import DiagnosisSubmitted
    from orchestrator.render.diagnosis import fleet_markdown, md_text

    subs = [e for e in events if isinstance(e, DiagnosisSubmitted)]
    raw = (subs[-1].diagnosis or {}).get("fleet") if subs else None
    if not raw:
        return
    try:
        tables = [FleetTable.model_validate(x) for x in raw]
    except ValidationError:
        sys.stderr.write("warning: the recorded fleet comparison is malformed; not shown\n")
        return
    from rich.markdown import Markdown

    _stdout().print(Markdown("\n".join(fleet_markdown(tables, md_text))))


@app.command("report", short_help="Write a transcript's diagnosis as HTML (or Markdown: -o X.md).", help="Write a transcript's diagnosis as one self-contained HTML file (or Markdown: -o X.md).")
def report_cmd(transcript_path: Path = typer.Argument(..., metavar="TRANSCRIPT"),
               output: Path = typer.Option(..., "-o", "--output", metavar="FILE", help="the .html (or .md) file to write")) -> None:
    transcript_path = _recorded(transcript_path)
    _check_writable(output, "-o", "report")
    fmt = _report_format(output, "-o")
    from pydantic import ValidationError

    from orchestrator.render.diagnosis import to_markdown
    from orchestrator.events import DiagnosisSubmitted
    from orchestrator.render.html import diagnosis_from_events, render_html
    from orchestrator.render.slim import report_view
    from orchestrator.transcript import iter_transcript

    # streamed, and of each event only what the report shows (an excerpt, not a result's whole text; no model
    # conversation), scrubbed as it is read: memory well under the transcript's size (bench/transcript_memory.py)
    from orchestrator.redact import scrub_text

    events = [_scrub(report_view(e, scrub_text)) for e in iter_transcript(transcript_path, [], strict=True)[1]]
    if not any(isinstance(e, DiagnosisSubmitted) for e in events):
        sys.stderr.write(f"notice: {_shown(transcript_path)} holds no diagnosis (the run did not finish): the report shows "
                         f"what ran and what is missing; `investigate resume {_shown(transcript_path)}` finishes the run\n")
    try:
        diagnosis = diagnosis_from_events(events)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(x) for x in err["loc"])
        raise BadInput(f"{transcript_path}: the recorded diagnosis is malformed at {where} ({err['msg']}); "
                       "re-synthesize it with `investigate replay --offline`") from None
    from orchestrator.transcript import implausible_number

    if (bad := implausible_number(diagnosis.model_dump())) is not None:
        raise BadInput(f"{transcript_path}: the recorded diagnosis holds a number no report can draw at {bad}; "
                       "re-synthesize it with `investigate replay --offline`")
    diagnosis = _scrub(diagnosis)
    if fmt == "markdown":
        _write(output, to_markdown(diagnosis, events))
    else:
        _write(output, render_html(diagnosis, events))
    sys.stderr.write(f"report: {_shown(output)}\n")


@app.command("probe", help="Run the evidence probes on a host and print what they found.")
def probe_cmd(
    host: Optional[str] = typer.Option(None, "--host", metavar="DEST"),
    ssh_config: Optional[Path] = typer.Option(None, "--ssh-config", metavar="FILE"),
    python: Optional[str] = typer.Option(None, "--python", metavar="PATH"),
    observations: Optional[Path] = typer.Option(None, "--observations", metavar="FILE"),
    log: List[str] = typer.Option([], "--log", metavar="PATH"),
    gemm: bool = typer.Option(False, "--gemm", help="run only the GEMM benchmark (loads the GPU)"),
    comm: bool = typer.Option(False, "--comm", help="run only the all-reduce benchmark (loads the GPU)"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    request = _inputs(host=host, ssh_config=ssh_config, python=python, observations=observations, logs=log)
    settings = _settings()
    for p in request.missing_local_logs():
        sys.stderr.write(f"warning: --log {_shown(p)} not found on this machine\n")
    ssh = str(ssh_config) if ssh_config else None
    import anyio

    from orchestrator.probes.probe_command import probe_main

    from orchestrator.hosts.base import HostError

    try:
        probes = anyio.run(lambda: probe_main(host=host, ssh_config=ssh, python=python, observations=observations,
                                              logs=log, gemm=gemm, comm=comm, settings=settings))
    except HostError as exc:
        if isinstance(exc, InputError):
            raise  # the host could not be used at all: bad input
        raise RunFailedExit(f"the probes stopped: {exc}") from None
    probes = [_scrub(p) for p in probes]
    if as_json:
        import json

        sys.stdout.write(json.dumps([p.model_dump(mode="json") for p in probes], indent=2) + "\n")
    else:
        from orchestrator.render.summaries import render_probes

        render_probes(probes, _stdout())
    if gemm or comm:
        _fail_if_nothing_measured(probes, "GEMM" if gemm else "all-reduce")


def _fail_if_nothing_measured(probes, what: str) -> None:
    """`probe --gemm` / `--comm` exist to measure: when nothing could run, that is a failure with its reason."""
    if not probes:
        raise RunFailedExit(f"the {what} benchmark did not run: no probe result")
    ran = [p for p in probes if getattr(p, "available", True) is not False]
    if not ran:
        reasons = "; ".join(_one_line(getattr(p, "reason", None) or "no reason given") for p in probes)
        raise RunFailedExit(f"the {what} benchmark could not run: {reasons}")


@app.command("specs", help="Spec sheet of a GPU, with sources (--list: every GPU known).")
def specs_cmd(
    gpu: Optional[str] = typer.Argument(None, metavar="GPU"),
    as_list: bool = typer.Option(False, "--list", help="List every GPU the catalogue knows, with its headline peaks."),
) -> None:
    from orchestrator.render.specs import render_specs

    if as_list:
        from orchestrator.tools.knowledge import render_gpu_list

        sys.stdout.write(render_gpu_list().rstrip() + "\n")
        return
    if not gpu:
        raise BadInput("name a GPU (`investigate specs \"NVIDIA H200\"`) or pass --list to see every known one")
    sys.stdout.write(render_specs(gpu).rstrip() + "\n")


@app.command("roofline", help="Where a GEMM sits on a GPU's roofline.")
def roofline_cmd(
    gpu: str = typer.Option(..., "--gpu", metavar="GPU"),
    dtype: str = typer.Option(..., "--dtype", metavar="DTYPE", help="bf16, fp16, fp8, int8, nvfp4, mxfp4, ... (knowledge/dtypes.yaml; a wrong one lists them)"),
    m: int = typer.Option(..., "-m", metavar="M", min=1),
    n: int = typer.Option(..., "-n", metavar="N", min=1),
    k: int = typer.Option(..., "-k", metavar="K", min=1),
) -> None:
    from orchestrator import knowledge
    from orchestrator.render.specs import render_roofline

    if knowledge.dtype_info(dtype) is None:
        raise BadInput(f"unknown dtype {dtype!r}; pass one of {', '.join(knowledge.dtype_names())} to --dtype")
    sys.stdout.write(render_roofline(gpu, dtype, m, n, k).rstrip() + "\n")


@app.command("reference", short_help="Published throughput for a GPU and model, with sources.",
             help="Published throughput for a GPU, model and precision, nearest first, with sources.")
def reference_cmd(
    gpu: str = typer.Option(..., "--gpu", metavar="GPU", help="H200, B200, \"NVIDIA H100 80GB HBM3\", ..."),
    model: str = typer.Option(..., "--model", metavar="MODEL", help="a model name or Hugging Face id"),
    dtype: Optional[str] = typer.Option(None, "--dtype", metavar="DTYPE", help="fp4, fp8, bf16"),
    isl: Optional[int] = typer.Option(None, "--isl", min=1, help="input tokens per request"),
    osl: Optional[int] = typer.Option(None, "--osl", min=1, help="output tokens per request"),
    as_json: bool = typer.Option(False, "--json", help="the rows as one JSON document"),
) -> None:
    from orchestrator.render.specs import render_references

    if as_json:
        import json

        from orchestrator.prongs.reference.rules import rows_table
        from orchestrator.render.specs import reference_lookup

        spec, lk, _ = reference_lookup(gpu, model, dtype, isl, osl)
        sys.stdout.write(json.dumps({"gpu": spec.name, "model_id": lk.model_id, "why_none": lk.why_none,
                                     "rows": rows_table(lk)}, indent=1) + "\n")
        return
    sys.stdout.write(render_references(gpu, model, dtype, isl, osl))


# ---------------------------------------------------------------------------------------------------------------
# routing: `investigate QUESTION ...` means `investigate ask QUESTION ...`, unless it looks like a mistyped command


def _did_you_mean(argv: list[str]) -> Optional[str]:
    """A lone word close to a subcommand's name (`investigate prob`), or a first word close to one followed by a
    file that exists (`investigate reply t.jsonl`), is a mistyped command, not a question."""
    first = argv[0]
    if not first or any(c.isspace() for c in first):
        return None  # a question of several words is a question
    close = difflib.get_close_matches(first.lower(), SUBCOMMANDS, n=1, cutoff=0.6)
    if not close:
        return None
    # arguments that are neither options nor (as far as we can tell without the command) an option's value
    positionals = [a for prev, a in zip(argv, argv[1:]) if not a.startswith("-") and not prev.startswith("-")]
    if not positionals or Path(positionals[0]).exists():
        return close[0]
    return None


def _route(argv: list[str]) -> list[str]:
    if not argv or argv[0] in SUBCOMMANDS or argv[0] in ("-h", "--help"):
        return argv
    if argv[0] == "help":
        return ["--help"]
    if argv[0] in ("--version", "-V"):
        return argv
    if not argv[0].startswith("-"):
        guess = _did_you_mean(argv)
        if guess is not None:
            raise BadInput(f"unknown command {argv[0]!r}; did you mean `investigate {guess}`? "
                           f"(to ask a question, quote it: investigate \"why is it slow\")")
    return ["ask", *argv]


TOP_HELP = """Why is my LLM inference slow? Investigate a GPU host and get a diagnosis with evidence.

\b
  investigate QUESTION [OPTIONS]   (the same as `investigate ask QUESTION`)
    --host DEST           ssh alias or [user@]host[:port] (default: this host)
    --hosts FILE | --slurm NODES | --k8s SELECTOR   many hosts at once
    --observations FILE   what you measured (YAML/JSON: model, runs, gpu)
    --log PATH            the server's log on the host (repeatable)
    --bench FILE          vllm / SGLang / genai-perf bench result (repeatable)
    --baseline FILE       the bench run before (with --bench AFTER): compared
    --baseline-log FILE   the engine log before (with --log AFTER): compared
    --measure             allow probes that load the GPU (GEMM, all-reduce)
    --offline | --model ID   the deterministic backend, or a Claude model
    --report FILE.html    also write a report (.html or .md)
    --json                print the diagnosis as one JSON document

\b
  `investigate ask --help` lists every option;
  `investigate COMMAND --help` each command's.
"""


@app.callback(help=TOP_HELP)
def _root(version: bool = typer.Option(False, "--version", "-V", help="Print the version and exit.")) -> None:
    """Why is my LLM inference slow? Investigate a GPU host and get a diagnosis with evidence."""
    # --version is answered in main() before anything is parsed; the option is declared here for --help


def _version() -> str:
    from orchestrator import __version__

    return f"investigate {__version__}"


def _refuse_empty_values(command, args: list[str]) -> None:
    """An option given an empty value (`--host "$HOST"` with HOST unset) is bad input naming the option: typer would
    take "" as this machine, or as the path "." (a directory). Positional arguments: an empty TRANSCRIPT or GPU too
    (an empty question is refused with its own words)."""
    sub = getattr(command, "commands", {}).get(args[0]) if args else None
    if sub is None:
        return
    # typer may vendor its own click: parameters are told apart by their kind's name, not by class
    takes = {o: p for p in sub.params if p.param_type_name == "option" and not p.is_flag and not p.count
             for o in (*p.opts, *p.secondary_opts)}
    arguments = [p for p in sub.params if p.param_type_name == "argument"]
    positional = 0
    i = 1
    while i < len(args):
        a = args[i]
        if a == "--":
            break
        name, eq, value = a.partition("=")
        if a.startswith("-") and eq and name in takes:
            if not value.strip():
                raise BadInput(f"{name} is empty (an unset shell variable?); {_fill(takes[name], name)}")
        elif a in takes:
            if i + 1 < len(args) and not args[i + 1].strip():
                raise BadInput(f"{a} is empty (an unset shell variable?); {_fill(takes[a], a)}")
            i += 1
        elif not a.startswith("-") or a == "-":
            if not a.strip() and args[0] != "ask" and positional < len(arguments):
                meta = arguments[positional].metavar or arguments[positional].name.upper()
                raise BadInput(f"the {meta} argument is empty (an unset shell variable?); pass a {meta.lower()}")
            positional += 1
        i += 1


def _fill(param, option: str) -> str:
    """What to pass instead of an empty value: the request's own words where it has them."""
    from orchestrator.request import EMPTY_FIX, OPTIONS

    field = next((f for f, o in OPTIONS.items() if o == option), None)
    if field in EMPTY_FIX:
        return EMPTY_FIX[field]
    meta = param.metavar or "a value"
    return f"pass {meta} to {option}" + ("" if param.required else f", or leave {option} out")


_SIGNALLED: list[str] = []
"""How the run was stopped from outside, when it was (SIGTERM: "terminated"); empty for Ctrl-C."""


def _on_sigterm(signum, frame) -> None:
    """SIGTERM (a scheduler's or `timeout`'s stop) is handled as Ctrl-C is: the run is cancelled, its transcript
    closed with what finished, and the resume hint printed; the exit code says which signal (143)."""
    import signal

    _SIGNALLED[:] = ["terminated"]
    signal.raise_signal(signal.SIGINT)


def _interrupt_code() -> int:
    return 143 if _SIGNALLED else 130


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    fast = _fast_path(argv)
    if fast is not None:
        return fast
    import signal

    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        if argv[:1] in (["--version"], ["-V"]):
            sys.stdout.write(_version() + "\n")
            return 0
        args = _route(argv)
        command = typer.main.get_command(app)
        _refuse_empty_values(command, args)
        rv = command.main(args=args, prog_name="investigate", standalone_mode=False)
        if rv == 130:  # typer turns KeyboardInterrupt (Ctrl-C) into exit code 130 and returns it
            sys.stderr.write(f"investigate: {_shown(_interrupted())}\n")
            return _interrupt_code()
        if isinstance(rv, int) and not isinstance(rv, bool):
            return rv
    except click_exc.NoArgsIsHelpError:
        return 0
    except click_exc.UsageError as exc:
        sys.stderr.write(f"investigate: {_one_line(exc.format_message())} (see investigate --help)\n")
        return 2
    except typer.Exit as exc:
        return exc.exit_code
    except typer.Abort:  # click's word for a Ctrl-C that surfaced outside the run
        sys.stderr.write(f"investigate: {_shown(_interrupted())}\n")
        return _interrupt_code()
    except (KeyboardInterrupt, Interrupted) as exc:
        sys.stderr.write(f"investigate: {_one_line(exc) or _interrupted()}\n")
        return _interrupt_code()
    except BrokenPipeError:
        # the reader stopped reading (`investigate show T | head`): nothing failed; the rest of the output goes
        # nowhere instead of failing again when Python flushes stdout at exit
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except RunFailedExit as exc:
        sys.stderr.write(f"investigate: {_one_line(exc)}\n")
        return 1
    except InputError as exc:  # every bad input the CLI or the library finds (orchestrator/errors.py)
        sys.stderr.write(f"investigate: {_one_line(exc)}\n")
        return 2
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
