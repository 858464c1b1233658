"""The `investigate` command (see DESIGN.md's CLI contract).

Exit codes: 0 a diagnosis was produced (possibly with gaps), 1 the run failed, 2 bad usage or bad input. Bad input is
one line on stderr naming the problem and the fix, never a traceback, and it is found before any work starts.

Start-up is kept cheap (`investigate --help`, `specs`, `roofline` must not pay for paramiko, anthropic, the agent
layer or the analysis): everything heavier than typer is imported inside the command that needs it.

Structure, for whoever adds an option:
- one function per subcommand below; options are typer parameters;
- every input a command takes is checked in its `_check_*` helpers *before* anything runs (files exist and are
  text, output paths are writable, observations and settings validate), raising `BadInput` (exit 2, one line);
- a library exception that means bad input is listed in `BAD_INPUT` as (module, class name): it is matched only
  when that module was imported, so listing it costs nothing at start-up.
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

    try:
        sys.stdout.write(render_specs(argv[1]).rstrip() + "\n")
    except UnknownGpu as exc:
        sys.stderr.write(f"investigate: {' '.join(str(exc).split())}\n")
        return 2
    return 0


if __name__ == "__main__" and (_rc := _fast_path(sys.argv[1:])) is not None:
    sys.exit(_rc)

import difflib
from pathlib import Path
from typing import Any, List, Optional

import typer

try:  # typer >= 0.2x vendors its own click; older typers use the click package
    from typer._click import exceptions as click_exc
except ImportError:  # pragma: no cover
    from click import exceptions as click_exc  # type: ignore[no-redef]

# rich_markup_mode=None: plain click help (rich's help renderer alone costs ~75 ms of start-up)
app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False, rich_markup_mode=None,
                  context_settings={"help_option_names": ["-h", "--help"]},
                  help="Why is my LLM inference slow? Investigate a GPU host and get a diagnosis with evidence.")

SUBCOMMANDS = ("ask", "replay", "resume", "show", "report", "probe", "specs", "roofline")
MAX_QUESTION_CHARS = 2000
"""A question is a sentence or a paragraph; anything longer is a file pasted by mistake (use --observations)."""

BAD_INPUT: list[tuple[str, str]] = [
    ("orchestrator.agentdefs", "AgentDefError"),
    ("orchestrator.errors", "InputError"),
    ("orchestrator.hosts.base", "HostError"),
    ("orchestrator.observations", "ObservationsError"),
    ("orchestrator.transcript", "TranscriptError"),
    ("orchestrator.render.specs", "UnknownGpu"),
    ("orchestrator.models.base", "AnthropicConfigError"),
]
"""Exceptions that mean bad input (exit 2): (module, class). Add yours here; the module is never imported for it."""


class BadInput(Exception):
    """Exit 2 with this one line."""


class RunFailedExit(Exception):
    """Exit 1 with this one line."""


class Interrupted(Exception):
    """Ctrl-C during a run: exit 130 with this line (where the transcript is and how to continue)."""


def _is_bad_input(exc: BaseException) -> bool:
    if isinstance(exc, BadInput):
        return True
    for module, name in BAD_INPUT:
        mod = sys.modules.get(module)
        cls = getattr(mod, name, None) if mod is not None else None
        if isinstance(cls, type) and isinstance(exc, cls):
            return True
    return False


def _stdout():
    from rich.console import Console

    return Console(file=sys.stdout, soft_wrap=False)


def _one_line(msg: object) -> str:
    from orchestrator.redact import scrub_text

    return scrub_text(" ".join(str(msg).split()))


def _scrub(model):
    """What is printed or written: secrets redacted, terminal control removed (issue 15; orchestrator.redact)."""
    from orchestrator.redact import scrub_model

    return scrub_model(model)


def _check_python(python: Optional[str]) -> None:
    """--python names an interpreter (python, python3, python3.N; absolute or on PATH), nothing else."""
    from orchestrator.probes.interpreter import name_refusal

    why = name_refusal(python) if python is not None else None
    if why is not None:
        raise BadInput(f"--python {why.split(' refused: ', 1)[-1]}" if " refused: " in why else why)


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
    q = question.strip()
    if not q:
        raise BadInput("the question is empty; ask something like \"why is FP4 slow?\"")
    if len(q) > MAX_QUESTION_CHARS:
        raise BadInput(f"the question is {len(q):,} characters long (at most {MAX_QUESTION_CHARS:,}); ask it in a "
                       "sentence and pass measurements with --observations FILE")
    return q


def _check_writable(path: Optional[Path], option: str, what: str, *, create_parents: bool = False) -> None:
    """An output file we will write at the end: refuse now what cannot be written then (a directory, no permission,
    a parent that is a file), so that nothing (a paid run) happens first."""
    if path is None:
        return
    reason = None
    if path.is_dir():
        reason = "it is a directory"
    elif path.exists():
        reason = None if os.access(path, os.W_OK) else "permission denied"
    elif path.parent.exists() and not path.parent.is_dir():
        reason = f"{path.parent} is not a directory"
    elif not create_parents and not path.parent.is_dir():
        reason = f"folder {path.parent} does not exist"
    else:
        probe = path.parent
        while not probe.exists() and probe != probe.parent:  # transcripts: folders that do not exist are created
            probe = probe.parent
        if not probe.is_dir():
            reason = f"{probe} is not a directory"
        elif not os.access(probe, os.W_OK | os.X_OK):
            reason = f"permission denied in {probe}"
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
    if observations.is_dir():
        raise BadInput(f"observations file {observations} is a directory; pass a YAML or JSON file")
    if not observations.is_file():
        raise BadInput(f"observations file {observations} not found; pass an existing YAML or JSON file")
    _check_text(observations, "observations file")
    from orchestrator.observations import load_observations

    return load_observations(observations)


def _check_agents(agents: List[Path]) -> None:
    from orchestrator.agentdefs import user_dirs

    for d in user_dirs(agents):
        if d.is_dir():
            for f in sorted(d.glob("*.md")):
                _check_text(f, "agent definition")


def _missing_local_logs(logs: List[str], host: Optional[str]) -> list[str]:
    """--log paths are read on the investigated host; on this machine we can tell up front which are missing."""
    if host not in (None, "", "local", "localhost"):
        return []
    return [p for p in logs if not Path(p).expanduser().is_file()]


def _settings():
    from orchestrator.settings import load_settings

    try:
        return load_settings()
    except ValueError as exc:
        raise BadInput(str(exc).splitlines()[0]) from None


# ---------------------------------------------------------------------------------------------------------------
# running and printing


def _with_bench(obs, bench: List[Path]):
    """The observations with the --bench files' runs added (each file parsed, and refused, before the run)."""
    from orchestrator.benchresults import load_bench
    from orchestrator.observations import Observations

    runs = [r for path in bench for r in load_bench(path)]
    obs = obs if obs is not None else Observations()
    obs.bench = [*obs.bench, *runs]
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
    if no_progress:  # the progress display already printed them as they happened
        for n in getattr(result, "notices", ()):
            sys.stderr.write(f"notice: {_one_line(n)}\n")
    if result.diagnosis is not None:
        diagnosis = _scrub(result.diagnosis)
        if report:
            from orchestrator.render.html import render_html

            _write(report, render_html(diagnosis, [_scrub(e) for e in result.events]))
        if as_json:
            sys.stdout.write(diagnosis.model_dump_json(indent=2) + "\n")
        else:
            from orchestrator.render.diagnosis import render_terminal

            render_terminal(diagnosis, _stdout())
    if result.transcript_path:
        sys.stderr.write(f"transcript: {result.transcript_path}\n")
    if report and result.diagnosis is not None:
        sys.stderr.write(f"report: {report}\n")
    if result.status != "ok":
        tail = ""
        if result.status == "cancelled" and result.transcript_path:
            tail = f"; continue with `investigate resume {result.transcript_path}`"
        raise RunFailedExit(f"run {result.status}: {result.error}{tail}")


def _write(path: Path, text: str) -> None:
    from orchestrator.sanitize import sanitize

    try:
        path.write_text(sanitize(text), encoding="utf-8")
    except OSError as exc:
        raise BadInput(f"cannot write {path}: {(exc.strerror or str(exc)).lower()}; pass a writable path") from None


def _new_transcript_path(transcript: Optional[Path], question: str) -> tuple[Path, str]:
    import uuid

    from orchestrator.transcript import default_path

    run_id = uuid.uuid4().hex
    return (transcript if transcript is not None else default_path(question, run_id)), run_id


# ---------------------------------------------------------------------------------------------------------------
# commands


@app.command("ask", help="Investigate QUESTION (the default command: `investigate \"why is FP4 slow\"`).")
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
    bench: List[Path] = typer.Option([], "--bench", metavar="FILE", help="benchmark result file: vllm bench serve "
                                     "JSON, SGLang bench_serving JSONL, genai-perf profile export (repeatable)"),
    model: Optional[str] = typer.Option(None, "--model", metavar="ID", help="Claude model id or alias (anthropic backend)"),
    offline: bool = typer.Option(False, "--offline", help="use the deterministic offline backend"),
    agents: List[Path] = typer.Option([], "--agents", metavar="DIR", help="directory of extra agent definitions (repeatable)"),
    measure: bool = typer.Option(False, "--measure", help="allow probes that load the GPU (GEMM, all-reduce)"),
    transcript: Optional[Path] = typer.Option(None, "--transcript", metavar="FILE", help="where to write the transcript"),
    report: Optional[Path] = typer.Option(None, "--report", metavar="FILE.html", help="also write a self-contained HTML report"),
    as_json: bool = typer.Option(False, "--json", help="print exactly one JSON document (the diagnosis)"),
    no_progress: bool = typer.Option(False, "--no-progress", help="no progress display on stderr"),
) -> None:
    # every input first: nothing runs (nothing is paid for) before all of them are known to be usable
    question = _check_question(question)
    if model and offline:
        raise BadInput("--model and --offline exclude each other; pass one")
    ssh = _check_ssh_config(ssh_config)
    if hosts_file is not None and not hosts_file.is_file():
        raise BadInput(f"hosts file {hosts_file} not found; pass an existing file to --hosts")
    if (k8s_namespace or k8s_container) and not k8s:
        raise BadInput("--namespace and --container go with --k8s SELECTOR; pass --k8s too")
    obs = _load_observations(observations)
    if bench:
        obs = _with_bench(obs, bench)
    _check_agents(agents)
    _check_python(python)
    _check_writable(report, "--report", "report")
    _check_writable(transcript, "--transcript", "transcript", create_parents=True)
    settings = _settings()
    local = not (host or hosts_file or slurm or k8s)
    for p in _missing_local_logs(log, None if local else "remote"):
        sys.stderr.write(f"warning: --log {p} not found on this machine; it is listed under the diagnosis's gaps\n")

    from orchestrator.api import investigate

    path, run_id = _new_transcript_path(transcript, question)
    result = _run_with_progress(
        investigate, no_progress, question=question, host=(host[0] if len(host) == 1 else host or None),
        hosts_file=str(hosts_file) if hosts_file else None, slurm=slurm, k8s=k8s, k8s_namespace=k8s_namespace,
        k8s_container=k8s_container, ssh_config=ssh, python=python, observations=obs, logs=log, model=model,
        offline=offline or None, agents_dirs=agents, measure=measure, transcript=path, settings=settings,
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
    if model and offline:
        raise BadInput("--model and --offline exclude each other; pass one")
    _check_writable(report, "--report", "report")
    _check_writable(transcript, "--transcript", "transcript", create_parents=True)
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


@app.command("resume", help="Finish an interrupted run, re-using every subagent that had finished.")
def resume_cmd(
    transcript_path: Path = typer.Argument(..., metavar="TRANSCRIPT"),
    as_json: bool = typer.Option(False, "--json"),
    transcript: Optional[Path] = typer.Option(None, "--transcript", metavar="FILE", help="where to write the new transcript"),
    ssh_config: Optional[Path] = typer.Option(None, "--ssh-config", metavar="FILE",
                                              help="ssh config file for the recorded host (default: the recorded one)"),
    report: Optional[Path] = typer.Option(None, "--report", metavar="FILE.html", help="also write a self-contained HTML report"),
    no_progress: bool = typer.Option(False, "--no-progress"),
) -> None:
    ssh = _check_ssh_config(ssh_config)
    _check_writable(report, "--report", "report")
    _check_writable(transcript, "--transcript", "transcript", create_parents=True)
    from orchestrator.api import resume
    from orchestrator.transcript import read_transcript

    old = read_transcript(transcript_path)
    question = next((getattr(e, "question", "") for e in old.events if getattr(e, "type", "") == "run_started"), "")
    path, run_id = _new_transcript_path(transcript, question or "resume")
    result = _run_with_progress(resume, no_progress, path=transcript_path, transcript=path, ssh_config=ssh,
                                run_id=run_id)
    _emit_result(result, as_json=as_json, report=report, no_progress=no_progress)


@app.command("show", help="Timeline of a transcript: agents, their tools with timings, usage.")
def show_cmd(transcript_path: Path = typer.Argument(..., metavar="TRANSCRIPT"),
             as_json: bool = typer.Option(False, "--json")) -> None:
    from orchestrator.render.timeline import build_timeline, render_timeline
    from orchestrator.transcript import iter_transcript

    # streamed, one line at a time: memory stays bounded on a transcript of any size (issue 15, bench/show.py);
    # a damaged line is named and the rest still shown
    from orchestrator.events import DiagnosisSubmitted

    warnings: list[str] = []
    _, events = iter_transcript(transcript_path, warnings)
    submitted: list = []  # the last diagnosis event only (the fleet table reads it), not every event

    engine_events: list = []  # the serving engine's results (engine_config, observations): a few small events

    def tap(stream):
        for e in stream:
            if isinstance(e, DiagnosisSubmitted):
                submitted[:] = [e]
            elif getattr(e, "tool", None) in ("engine_config", "observations", "settings_audit") and getattr(e, "data", None):
                engine_events.append(e)
            yield e

    timeline = _scrub(build_timeline(tap(events)))
    for w in warnings:
        sys.stderr.write(f"warning: {_one_line(w)}\n")
    if as_json:
        sys.stdout.write(timeline.model_dump_json(indent=2) + "\n")
    else:
        render_timeline(timeline, _stdout())
        _show_fleet(submitted)
        from orchestrator.render.engine import render_engine_terminal  # the serving engine's config, latency vs floor

        render_engine_terminal(engine_events + submitted, _stdout())
        from orchestrator.render.settings import render_settings_terminal  # non-default settings (issue 27)

        render_settings_terminal(engine_events, _stdout())


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


@app.command("report", help="Write a transcript's diagnosis as one self-contained HTML file (or Markdown: -o X.md).")
def report_cmd(transcript_path: Path = typer.Argument(..., metavar="TRANSCRIPT"),
               output: Path = typer.Option(..., "-o", "--output", metavar="FILE", help="the .html (or .md) file to write")) -> None:
    _check_writable(output, "-o", "report")
    from pydantic import ValidationError

    from orchestrator.render.diagnosis import to_markdown
    from orchestrator.events import DiagnosisSubmitted
    from orchestrator.render.html import diagnosis_from_events, render_html
    from orchestrator.transcript import read_transcript

    t = read_transcript(transcript_path)
    if not t.of_type(DiagnosisSubmitted):
        sys.stderr.write(f"notice: {transcript_path} holds no diagnosis (the run did not finish): the report shows "
                         f"what ran and what is missing; `investigate resume {transcript_path}` finishes the run\n")
    try:
        diagnosis = diagnosis_from_events(t.events)
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
    if output.suffix.lower() in (".md", ".markdown"):
        _write(output, to_markdown(diagnosis))
    else:
        _write(output, render_html(diagnosis, [_scrub(e) for e in t.events]))
    sys.stderr.write(f"report: {output}\n")


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
        sys.stderr.write(f"warning: --log {p} not found on this machine\n")
    import anyio

    from orchestrator.probes.probe_command import probe_main

    probes = anyio.run(lambda: probe_main(host=host, ssh_config=ssh, python=python, observations=observations,
                                          logs=log, gemm=gemm, comm=comm, settings=settings))
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


@app.callback()
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
            sys.stderr.write(f"investigate: {_interrupted()}\n")
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
        sys.stderr.write(f"investigate: {_interrupted()}\n")
        return 130
    except (KeyboardInterrupt, Interrupted) as exc:
        sys.stderr.write(f"investigate: {_one_line(exc) or _interrupted()}\n")
        return 130
    except RunFailedExit as exc:
        sys.stderr.write(f"investigate: {_one_line(exc)}\n")
        return 1
    except Exception as exc:
        if not _is_bad_input(exc):
            raise
        sys.stderr.write(f"investigate: {_one_line(exc)}\n")
        return 2
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
