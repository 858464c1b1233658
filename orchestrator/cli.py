"""The `investigate` command (the README's "Using it" section is its contract).

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
    if len(argv) != 2 or argv[0] != "specs" or argv[1].startswith("-"):
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

    return Console(file=sys.stdout, soft_wrap=False)


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


def _check_python(python: Optional[str]) -> None:
    """--python names an interpreter (python, python3, python3.N; absolute or on PATH), nothing else."""
    from orchestrator.probes.interpreter import name_refusal

    why = name_refusal(python) if python is not None else None
    if why is not None:
        raise BadInput(f"--python {python!r} refused: {why.split(' refused: ', 1)[-1]}; pass the serving "
                       "interpreter (e.g. --python /opt/venv/bin/python3)")


# ---------------------------------------------------------------------------------------------------------------
# input checks: all of them run before any work


def _check_text(path: Path, what: str) -> None:
    """A file read as UTF-8 text later: say which one is not, rather than fail deep inside with no name."""
    try:
        path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadInput(f"{what} {path} is not UTF-8 text (byte {exc.start}); pass a UTF-8 text file") from None
    except IsADirectoryError:
        raise BadInput(f"{what} {path} is a directory; pass a file") from None
    except OSError:
        pass  # the reader reports a missing or unreadable file in its own words


def _check_question(question: str) -> str:
    from orchestrator.validate import check_question

    return check_question(question)


REPORT_FORMATS = {".html": "html", ".htm": "html", ".md": "markdown", ".markdown": "markdown"}
"""What a report file's extension says it is; anything else is refused before the run."""


def _report_format(path: Path, option: str) -> str:
    fmt = REPORT_FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise BadInput(f"cannot write a {path.suffix or 'extension-less'} report {path}: reports are HTML or Markdown; "
                       f"pass a .html or .md file to {option}")
    return fmt


def _check_writable(path: Optional[Path], option: str, what: str) -> None:
    """An output file we will write at the end: refuse now what cannot be written then (a missing folder, a
    directory, no permission, a file system that takes no files such as /proc), so that nothing (a paid run)
    happens first. The file is opened for appending, as the write will; one that did not exist is removed again."""
    if path is None:
        return
    reason = None
    if path.is_dir():
        reason = "it is a directory"
    elif path.parent.exists() and not path.parent.is_dir():
        reason = f"{path.parent} is not a directory"
    elif not path.parent.is_dir():
        reason = f"folder {path.parent} does not exist"
    elif path.exists() and not path.is_file():
        reason = "it is not a regular file"
    else:
        existed = path.exists()
        try:
            with open(path, "a", encoding="utf-8"):
                pass
        except OSError as exc:
            reason = (exc.strerror or str(exc)).lower()
        else:
            if not existed:
                path.unlink(missing_ok=True)
    if reason:
        raise BadInput(f"cannot write the {what} {path}: {reason}; pass a writable path to {option}")


def _check_ssh_config(ssh_config: Optional[Path]) -> Optional[str]:
    if ssh_config is None:
        return None
    if not ssh_config.is_file():
        raise BadInput(f"ssh config {ssh_config} not found; pass an existing file to --ssh-config")
    return str(ssh_config)


def _load_observations(observations: Optional[Path]):
    """Parse and validate the observations now: a bad value is exit 2 before the run, naming the field."""
    if observations is None:
        return None
    from orchestrator.observations import load_observations  # checks the file (kind, size, text) before parsing

    return load_observations(observations)


def _check_agents(agents: List[Path]) -> None:
    from orchestrator.agentdefs import user_dirs

    for d in user_dirs(agents):
        if d.is_dir():
            for f in sorted(d.glob("*.md")):
                _check_text(f, "agent definition")


def _check_traces(trace: List[str], baseline: List[str]) -> None:
    """--trace / --baseline-trace name readable traces (checked before any work; exit 2 with one line)."""
    from orchestrator.prongs import check_inputs  # the trace prong's own check

    check_inputs(traces=list(trace), baseline_traces=list(baseline))


def _missing_local_logs(logs: List[str], host: Optional[str]) -> list[str]:
    """--log paths are read on the investigated host; on this machine we can tell up front which are missing."""
    if host not in (None, "", "local", "localhost"):
        return []
    from orchestrator.validate import file_kind

    for p in logs:
        if (kind := file_kind(Path(p).expanduser())) is not None:  # /dev/zero never ends; a FIFO may never answer
            raise BadInput(f"--log {p} is {kind}, not a log file; pass the server's log file")
    return [p for p in logs if not Path(p).expanduser().is_file()]


def _settings():
    from orchestrator.settings import load_settings

    try:
        return load_settings()
    except ValueError as exc:
        raise BadInput(str(exc).splitlines()[0]) from None


# ---------------------------------------------------------------------------------------------------------------
# running and printing


def _with_bench(obs, bench: List[Path], baseline: Optional[List[Path]] = None):
    """The observations with the --bench files' runs added (each file parsed, and refused, before the run); the
    --baseline file's runs first, labelled `baseline` (the run before)."""
    from orchestrator.benchresults import load_bench
    from orchestrator.observations import Observations

    before = [r.model_copy(update={"label": "baseline"}) for path in baseline or [] for r in load_bench(path)]
    runs = [r for path in bench for r in load_bench(path)]
    obs = obs if obs is not None else Observations()
    obs.bench = [*before, *obs.bench, *runs]
    return obs


def _with_baseline_log(obs, path: Path):
    """The observations with the --baseline-log's version and settings lines (read, and refused, before the run)."""
    from orchestrator.baselines import load_baseline_log
    from orchestrator.observations import Observations

    obs = obs if obs is not None else Observations()
    obs.baseline_log = load_baseline_log(path)
    return obs


def _progress(no_progress: bool):
    if no_progress:
        return None
    from orchestrator.render.progress import Progress

    return Progress(sys.stderr)


_TRANSCRIPT: list[Any] = [None]
"""The transcript the running command writes: an interrupt that surfaces outside the run still names it."""


def _run_with_progress(fn, no_progress: bool, *, transcript: Any = None, **kwargs):
    import anyio

    _TRANSCRIPT[0] = transcript
    progress = _progress(no_progress)
    try:
        return anyio.run(lambda: fn(progress=progress, transcript=transcript, **kwargs))
    except KeyboardInterrupt:
        raise Interrupted(_interrupted_line(transcript)) from None
    finally:
        if progress is not None:
            progress.close()


def _interrupted() -> str:
    """What to say about a Ctrl-C, wherever it surfaced: the run's transcript and how to resume, if one was started."""
    return _interrupted_line(_TRANSCRIPT[0]) if _TRANSCRIPT[0] is not None else "interrupted"


def _interrupted_line(transcript: Any) -> str:
    if isinstance(transcript, (str, Path)) and Path(transcript).is_file() and Path(transcript).stat().st_size:
        return (f"interrupted; transcript: {transcript}; continue with `investigate resume {transcript}` "
                "(finished subagents are reused)")
    return "interrupted before a transcript was started; nothing to resume, run the command again"


def _emit_result(result, *, as_json: bool, report: Optional[Path], no_progress: bool = True) -> None:
    """Print the diagnosis and the transcript path, then write the report: a report that cannot be written at the
    end (the disk filled, the folder went) is exit 2 after the result was shown, never instead of it."""
    if no_progress:  # the progress display already printed them as they happened
        for n in getattr(result, "notices", ()):
            sys.stderr.write(f"notice: {_one_line(n)}\n")
    diagnosis = _scrub(result.diagnosis) if result.diagnosis is not None else None
    if diagnosis is not None:
        if as_json:
            sys.stdout.write(diagnosis.model_dump_json(indent=2) + "\n")
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
    return (transcript if transcript is not None else default_path(question, run_id)), run_id


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
    question = _check_question(question)
    from orchestrator.validate import check_backend_choice

    check_backend_choice(model, offline)
    ssh = _check_ssh_config(ssh_config)
    if hosts_file is not None and not hosts_file.is_file():
        raise BadInput(f"hosts file {hosts_file} not found; pass an existing file to --hosts")
    if (k8s_namespace or k8s_container) and not k8s:
        raise BadInput("--namespace and --container go with --k8s SELECTOR; pass --k8s too")
    obs = _load_observations(observations)
    from orchestrator.validate import check_baselines

    check_baselines(bench, baseline, log, baseline_log)
    if bench:
        obs = _with_bench(obs, bench, baseline)
    if baseline_log:
        obs = _with_baseline_log(obs, baseline_log[0])
    _check_agents(agents)
    _check_python(python)
    _check_traces(trace, baseline_trace)
    _check_writable(report, "--report", "report")
    if report is not None:
        _report_format(report, "--report")
    _check_writable(transcript, "--transcript", "transcript")
    settings = _settings()
    if sample_s is not None:
        if not 0 < sample_s <= 60:
            raise BadInput(f"--sample-s {sample_s:g} is out of range; pass a window between 0 and 60 seconds")
        settings = settings.model_copy(update={"account_sample_s": float(sample_s)})
    if measure_wait is not None:
        if not measure:
            raise BadInput("--measure-wait goes with --measure; pass --measure too, or drop --measure-wait")
        if not 0 <= measure_wait <= 3600:
            raise BadInput(f"--measure-wait {measure_wait:g} is out of range; pass 0 to 3600 seconds")
        settings = settings.model_copy(update={"measure_wait_s": float(measure_wait)})
    local = not (host or hosts_file or slurm or k8s)
    for p in _missing_local_logs(log, None if local else "remote"):
        sys.stderr.write(f"warning: --log {_shown(p)} not found on this machine; it is listed under the diagnosis's gaps\n")

    from orchestrator.api import investigate

    path, run_id = _new_transcript_path(transcript, question)
    result = _run_with_progress(
        investigate, no_progress, question=question, host=(host[0] if len(host) == 1 else host or None),
        hosts_file=str(hosts_file) if hosts_file else None, slurm=slurm, k8s=k8s, k8s_namespace=k8s_namespace,
        k8s_container=k8s_container, ssh_config=ssh, python=python, observations=obs, logs=log, model=model,
        traces=trace, baseline_traces=baseline_trace, offline=offline or None, agents_dirs=agents, measure=measure, transcript=path, settings=settings,
        run_id=run_id,
    )
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
    from orchestrator.validate import check_backend_choice

    check_backend_choice(model, offline)
    _check_writable(report, "--report", "report")
    if report is not None:
        _report_format(report, "--report")
    _check_writable(transcript, "--transcript", "transcript")
    _check_not_cut_off(transcript_path, exact=not (model or offline))
    from orchestrator.api import replay

    result = _run_with_progress(replay, no_progress, path=transcript_path, model=model, offline=offline or None,
                                transcript=transcript or False)
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
             help="Finish an interrupted run, re-using every subagent that had finished. It acts only on "
             "what you name again: the question (--question) and the recorded hosts (--host).")
def resume_cmd(
    transcript_path: Path = typer.Argument(..., metavar="TRANSCRIPT"),
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
    if model and offline:
        raise BadInput("--model and --offline exclude each other; pass one")
    ssh = _check_ssh_config(ssh_config)
    _check_agents(agents)
    _check_python(python)
    _check_writable(report, "--report", "report")
    if report is not None:
        _report_format(report, "--report")
    _check_writable(transcript, "--transcript", "transcript")
    settings = _settings()
    from orchestrator.api import resume
    from orchestrator.resume import confirm_resume
    from orchestrator.transcript import read_transcript

    # the question and hosts the user confirmed, checked before anything runs; nothing else comes from the file
    question, _ = confirm_resume(read_transcript(transcript_path), question, list(host))
    question = _check_question(question)
    path, run_id = _new_transcript_path(transcript, question)
    result = _run_with_progress(resume, no_progress, path=transcript_path, question=question, host=list(host),
                                ssh_config=ssh, python=python, logs=log, model=model, offline=offline or None,
                                agents_dirs=agents, settings=settings, transcript=path, run_id=run_id)
    _emit_result(result, as_json=as_json, report=report, no_progress=no_progress)


@app.command("show", short_help="Timeline of a transcript: agents, tools with timings, usage.", help="Timeline of a transcript: agents, their tools with timings, usage.")
def show_cmd(transcript_path: Path = typer.Argument(..., metavar="TRANSCRIPT"),
             as_json: bool = typer.Option(False, "--json")) -> None:
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
    ssh = _check_ssh_config(ssh_config)
    _load_observations(observations)
    _check_python(python)
    settings = _settings()
    for p in _missing_local_logs(log, host):
        sys.stderr.write(f"warning: --log {_shown(p)} not found on this machine\n")
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

        from orchestrator.prongs.reference.rules import Setup, match, precision_of, rows_table
        from orchestrator.render.specs import spec_or_raise

        spec = spec_or_raise(gpu)
        lk = match(Setup(gpu=spec.name, model=model, precision=precision_of(dtype), isl=isl, osl=osl), n=8)
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
  investigate QUESTION [OPTIONS]      the question form (the same as `investigate ask QUESTION`):
    --host DEST            ssh-config alias or [user@]host[:port] (repeatable); default: this machine
    --hosts FILE | --slurm NODES | --k8s SELECTOR    many hosts at once
    --observations FILE    what you measured (YAML/JSON: model, runs, gpu, notes)
    --log PATH             the server's log on the host (repeatable)
    --bench FILE           vllm bench serve / SGLang bench_serving / genai-perf result (repeatable)
    --baseline FILE        the run before (with --bench AFTER): the two runs compared, changed defaults ranked
    --baseline-log FILE    the engine log before (with --log AFTER): versions and settings compared
    --measure              allow probes that load the GPU (GEMM, all-reduce)
    --offline | --model ID the deterministic backend, or a Claude model
    --report FILE.html     also write a report (.html or .md); --json prints the diagnosis as JSON

\b
  `investigate ask --help` lists every option; `investigate COMMAND --help` each command's.
"""


@app.callback(help=TOP_HELP)
def _root(version: bool = typer.Option(False, "--version", "-V", help="Print the version and exit.")) -> None:
    """Why is my LLM inference slow? Investigate a GPU host and get a diagnosis with evidence."""
    # --version is answered in main() before anything is parsed; the option is declared here for --help


def _version() -> str:
    from orchestrator import __version__

    return f"investigate {__version__}"


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    fast = _fast_path(argv)
    if fast is not None:
        return fast
    try:
        if argv[:1] in (["--version"], ["-V"]):
            sys.stdout.write(_version() + "\n")
            return 0
        rv = app(args=_route(argv), prog_name="investigate", standalone_mode=False)
        if rv == 130:  # typer turns KeyboardInterrupt (Ctrl-C) into exit code 130 and returns it
            sys.stderr.write(f"investigate: {_shown(_interrupted())}\n")
            return 130
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
        return 130
    except (KeyboardInterrupt, Interrupted) as exc:
        sys.stderr.write(f"investigate: {_one_line(exc) or _interrupted()}\n")
        return 130
    except RunFailedExit as exc:
        sys.stderr.write(f"investigate: {_one_line(exc)}\n")
        return 1
    except InputError as exc:  # every bad input the CLI or the library finds (orchestrator/errors.py)
        sys.stderr.write(f"investigate: {_one_line(exc)}\n")
        return 2
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
