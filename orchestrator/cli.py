"""The `investigate` command (see DESIGN.md's CLI contract).

Exit codes: 0 a diagnosis was produced (possibly with gaps), 1 the run failed, 2 bad usage or bad input. Bad input is
one line on stderr naming the problem and the fix, never a traceback.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import List, Optional

import anyio
import typer

try:  # typer >= 0.2x vendors its own click; older typers use the click package
    from typer._click import exceptions as click_exc
except ImportError:  # pragma: no cover
    from click import exceptions as click_exc
from rich.console import Console

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Why is my LLM inference slow? Investigate a GPU host and get a diagnosis with evidence.")

SUBCOMMANDS = {"ask", "replay", "resume", "show", "report", "probe", "specs", "roofline"}


class BadInput(Exception):
    """Exit 2 with this one line."""


class RunFailedExit(Exception):
    """Exit 1 with this one line."""


def _bad_input_types() -> tuple[type[BaseException], ...]:
    from orchestrator.agentdefs import AgentDefError
    from orchestrator.api import InputError
    from orchestrator.hosts.base import HostError
    from orchestrator.observations import ObservationsError
    from orchestrator.transcript import TranscriptError

    types: list[type[BaseException]] = [BadInput, InputError, AgentDefError, HostError, ObservationsError, TranscriptError]
    from orchestrator.commands import UnknownGpu
    from orchestrator.models.base import AnthropicConfigError

    types += [UnknownGpu, AnthropicConfigError]
    return tuple(types)


def _stdout() -> Console:
    return Console(file=sys.stdout, soft_wrap=False)


def _emit_result(result, *, as_json: bool, report: Optional[Path]) -> None:
    from orchestrator.diagnosis import render_terminal

    if result.diagnosis is not None:
        if report:
            from orchestrator.report_html import render_html

            _write(report, render_html(result.diagnosis, result.events))
        if as_json:
            sys.stdout.write(result.diagnosis.model_dump_json(indent=2) + "\n")
        else:
            render_terminal(result.diagnosis, _stdout())
    if result.transcript_path:
        sys.stderr.write(f"transcript: {result.transcript_path}\n")
    if report and result.diagnosis is not None:
        sys.stderr.write(f"report: {report}\n")
    if result.status != "ok":
        raise RunFailedExit(f"run {result.status}: {result.error}")


def _write(path: Path, text: str) -> None:
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise BadInput(f"cannot write {path}: {exc.strerror or exc}; pass a writable path") from None


def _settings():
    from orchestrator.settings import load_settings

    try:
        return load_settings()
    except ValueError as exc:
        raise BadInput(str(exc).splitlines()[0]) from None


def _check_text(path: Path, what: str) -> None:
    """A file read as UTF-8 text later: say which one is not, rather than fail deep inside with no name."""
    try:
        path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadInput(f"{what} {path} is not UTF-8 text (byte {exc.start}); pass a UTF-8 text file") from None
    except OSError:
        pass  # the reader reports a missing or unreadable file in its own words


def _check_inputs(observations: Optional[Path], agents: List[Path] = ()) -> None:
    import os

    if observations is not None and observations.is_file():
        _check_text(observations, "observations file")
    dirs = [Path(p) for p in os.environ.get("INVESTIGATE_AGENTS_DIR", "").split(os.pathsep) if p] + list(agents)
    for d in dirs:
        if d.is_dir():
            for f in sorted(d.glob("*.md")):
                _check_text(f, "agent definition")


def _with_bench(observations: Optional[Path], bench: List[Path]):
    """The observations with the --bench files' runs added (each file parsed, and refused, before the run)."""
    from orchestrator.benchresults import load_bench
    from orchestrator.observations import Observations, load_observations

    runs = [r for path in bench for r in load_bench(path)]
    obs = load_observations(observations) if observations is not None else Observations()
    obs.bench = [*obs.bench, *runs]
    return obs


def _progress(no_progress: bool):
    if no_progress:
        return None
    from orchestrator.progress import Progress

    return Progress(sys.stderr)


def _run_with_progress(fn, no_progress: bool, **kwargs):
    progress = _progress(no_progress)
    try:
        return anyio.run(lambda: fn(progress=progress, **kwargs))
    finally:
        if progress is not None:
            progress.close()


@app.command("ask", help="Investigate QUESTION (the default command: `investigate \"why is FP4 slow\"`).")
def ask(
    question: str = typer.Argument(..., help="The question, e.g. \"why is FP4 slow?\""),
    host: List[str] = typer.Option([], "--host", help="ssh-config alias or \\[user@]host[:port]; default: this machine "
                                   "(repeatable: several hosts in one investigation)"),
    hosts_file: Optional[Path] = typer.Option(None, "--hosts", help="file of hosts: one destination per line, or "
                                              "YAML with roles (prefill/decode/router)"),
    slurm: Optional[str] = typer.Option(None, "--slurm", help="Slurm nodelist or partition (or . for this "
                                        "allocation): probe each node through srun"),
    k8s: Optional[str] = typer.Option(None, "--k8s", help="pod label selector: probe each pod through kubectl exec"),
    k8s_namespace: Optional[str] = typer.Option(None, "--namespace", help="Kubernetes namespace of the --k8s pods"),
    k8s_container: Optional[str] = typer.Option(None, "--container", help="container of the --k8s pods to exec into"),
    ssh_config: Optional[Path] = typer.Option(None, "--ssh-config", help="ssh config file to use instead of ~/.ssh/config"),
    python: Optional[str] = typer.Option(None, "--python", help="the serving interpreter on the host"),
    observations: Optional[Path] = typer.Option(None, "--observations", help="YAML/JSON observations file"),
    log: List[str] = typer.Option([], "--log", help="server log path on the host (repeatable)"),
    bench: List[Path] = typer.Option([], "--bench", help="benchmark result file: vllm bench serve JSON, SGLang "
                                     "bench_serving JSONL, genai-perf profile export (repeatable)"),
    model: Optional[str] = typer.Option(None, "--model", help="Claude model id or alias (anthropic backend)"),
    offline: bool = typer.Option(False, "--offline", help="use the deterministic offline backend"),
    agents: List[Path] = typer.Option([], "--agents", help="directory of extra agent definitions (repeatable)"),
    measure: bool = typer.Option(False, "--measure", help="allow probes that load the GPU (GEMM, all-reduce)"),
    transcript: Optional[Path] = typer.Option(None, "--transcript", help="where to write the transcript"),
    report: Optional[Path] = typer.Option(None, "--report", help="also write a self-contained HTML report"),
    as_json: bool = typer.Option(False, "--json", help="print exactly one JSON document (the diagnosis)"),
    no_progress: bool = typer.Option(False, "--no-progress", help="no progress display on stderr"),
) -> None:
    from orchestrator.api import investigate

    if model and offline:
        raise BadInput("--model and --offline exclude each other; pass one")
    if observations is not None and not observations.is_file():
        raise BadInput(f"observations file {observations} not found; pass an existing YAML or JSON file")
    if ssh_config is not None and not ssh_config.is_file():
        raise BadInput(f"ssh config {ssh_config} not found; pass an existing file to --ssh-config")
    if hosts_file is not None and not hosts_file.is_file():
        raise BadInput(f"hosts file {hosts_file} not found; pass an existing file to --hosts")
    if (k8s_namespace or k8s_container) and not k8s:
        raise BadInput("--namespace and --container go with --k8s SELECTOR; pass --k8s too")
    _check_inputs(observations, agents)
    obs_input = _with_bench(observations, bench) if bench else observations
    settings = _settings()
    result = _run_with_progress(
        investigate, no_progress, question=question, host=(host[0] if len(host) == 1 else host or None),
        hosts_file=str(hosts_file) if hosts_file else None, slurm=slurm, k8s=k8s, k8s_namespace=k8s_namespace,
        k8s_container=k8s_container, ssh_config=str(ssh_config) if ssh_config else None,
        python=python, observations=obs_input, logs=log, model=model, offline=offline or None,
        agents_dirs=agents, measure=measure, transcript=transcript, settings=settings,
    )
    for n in result.notices:
        sys.stderr.write(f"notice: {n}\n")
    _emit_result(result, as_json=as_json, report=report)


@app.command("replay", help="Re-run a recorded investigation with no host and no network.")
def replay_cmd(
    transcript_path: Path = typer.Argument(..., metavar="TRANSCRIPT"),
    as_json: bool = typer.Option(False, "--json"),
    model: Optional[str] = typer.Option(None, "--model", help="keep the subagents' results, re-synthesize with this model"),
    offline: bool = typer.Option(False, "--offline", help="keep the subagents' results, re-synthesize offline"),
    transcript: Optional[Path] = typer.Option(None, "--transcript", help="record the replay to this file"),
    report: Optional[Path] = typer.Option(None, "--report"),
    no_progress: bool = typer.Option(True, "--no-progress/--progress"),
) -> None:
    from orchestrator.api import replay

    if model and offline:
        raise BadInput("--model and --offline exclude each other; pass one")
    result = _run_with_progress(replay, no_progress, path=transcript_path, model=model, offline=offline or None,
                                transcript=transcript or False)
    _emit_result(result, as_json=as_json, report=report)


@app.command("resume", help="Finish an interrupted run, re-using every subagent that had finished.")
def resume_cmd(
    transcript_path: Path = typer.Argument(..., metavar="TRANSCRIPT"),
    as_json: bool = typer.Option(False, "--json"),
    transcript: Optional[Path] = typer.Option(None, "--transcript"),
    no_progress: bool = typer.Option(False, "--no-progress"),
) -> None:
    from orchestrator.api import resume

    result = _run_with_progress(resume, no_progress, path=transcript_path, transcript=transcript)
    _emit_result(result, as_json=as_json, report=None)


@app.command("show", help="Timeline of a transcript: agents, tools, timings, usage.")
def show_cmd(transcript_path: Path = typer.Argument(..., metavar="TRANSCRIPT"),
             as_json: bool = typer.Option(False, "--json")) -> None:
    from orchestrator.timeline import build_timeline, render_timeline
    from orchestrator.transcript import read_transcript

    t = read_transcript(transcript_path, strict=False)  # a damaged line is named and the rest still shown
    for w in t.warnings:
        sys.stderr.write(f"warning: {w}\n")
    timeline = build_timeline(t.events)
    if as_json:
        sys.stdout.write(timeline.model_dump_json(indent=2) + "\n")
    else:
        render_timeline(timeline, _stdout())


@app.command("report", help="Write a transcript's diagnosis as one self-contained HTML file (or Markdown: -o X.md).")
def report_cmd(transcript_path: Path = typer.Argument(..., metavar="TRANSCRIPT"),
               output: Path = typer.Option(..., "-o", "--output", help="the .html (or .md) file to write")) -> None:
    from orchestrator.diagnosis import to_markdown
    from orchestrator.events import DiagnosisSubmitted
    from orchestrator.report_html import render_html
    from orchestrator.transcript import read_transcript

    t = read_transcript(transcript_path)
    from pydantic import ValidationError

    from orchestrator.report_html import diagnosis_from_events

    if not t.of_type(DiagnosisSubmitted):
        sys.stderr.write(f"notice: {transcript_path} holds no diagnosis (the run did not finish): the report shows "
                         "what ran and what is missing; `investigate resume` finishes the run\n")
    try:
        diagnosis = diagnosis_from_events(t.events)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(x) for x in err["loc"])
        raise BadInput(f"{transcript_path}: the recorded diagnosis is malformed at {where} ({err['msg']}); "
                       "re-synthesize it with `investigate replay --offline`") from None
    if output.suffix.lower() in (".md", ".markdown"):
        _write(output, to_markdown(diagnosis))
    else:
        _write(output, render_html(diagnosis, t.events))
    sys.stderr.write(f"report: {output}\n")


@app.command("probe", help="Run the evidence probes on a host and print what they found.")
def probe_cmd(
    host: Optional[str] = typer.Option(None, "--host"),
    ssh_config: Optional[Path] = typer.Option(None, "--ssh-config"),
    python: Optional[str] = typer.Option(None, "--python"),
    observations: Optional[Path] = typer.Option(None, "--observations"),
    log: List[str] = typer.Option([], "--log"),
    gemm: bool = typer.Option(False, "--gemm", help="run only the GEMM benchmark (loads the GPU)"),
    comm: bool = typer.Option(False, "--comm", help="run only the all-reduce benchmark (loads the GPU)"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    from orchestrator.probes.cli import probe_main

    if ssh_config is not None and not ssh_config.is_file():
        raise BadInput(f"ssh config {ssh_config} not found; pass an existing file to --ssh-config")
    _check_inputs(observations)
    settings = _settings()
    probes = _run_probe(probe_main, host=host, ssh_config=str(ssh_config) if ssh_config else None, python=python,
                        observations=observations, logs=log, gemm=gemm, comm=comm, settings=settings)
    if as_json:
        sys.stdout.write(json.dumps([p.model_dump(mode="json") for p in probes], indent=2) + "\n")
    else:
        from orchestrator.probes.cli import render_probes

        render_probes(probes, _stdout())


def _run_probe(fn, **kwargs):
    return anyio.run(lambda: fn(**kwargs))


@app.command("specs", help="Spec sheet of a GPU, with sources.")
def specs_cmd(gpu: str = typer.Argument(..., metavar="GPU")) -> None:
    from orchestrator.commands import render_specs

    sys.stdout.write(render_specs(gpu).rstrip() + "\n")


@app.command("roofline", help="Where a GEMM sits on a GPU's roofline.")
def roofline_cmd(
    gpu: str = typer.Option(..., "--gpu"),
    dtype: str = typer.Option(..., "--dtype", help="bf16, fp16, fp8, nvfp4, mxfp4, ... (`knowledge/dtypes.yaml`)"),
    m: int = typer.Option(..., "-m", min=1),
    n: int = typer.Option(..., "-n", min=1),
    k: int = typer.Option(..., "-k", min=1),
) -> None:
    from orchestrator import knowledge
    from orchestrator.commands import render_roofline

    if knowledge.dtype_info(dtype) is None:
        raise BadInput(f"unknown dtype {dtype!r}; pass one of {', '.join(knowledge.dtype_names())} to --dtype")
    sys.stdout.write(render_roofline(gpu, dtype, m, n, k).rstrip() + "\n")


def _route(argv: list[str]) -> list[str]:
    """`investigate QUESTION ...` means `investigate ask QUESTION ...`."""
    if not argv or argv[0] in SUBCOMMANDS or argv[0] in ("-h", "--help"):
        return argv
    return ["ask", *argv]


def _one_line(msg: str) -> str:
    return " ".join(str(msg).split())


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    bad: tuple[type[BaseException], ...] = (BadInput,)
    try:
        bad = _bad_input_types()  # imports: a Ctrl-C here is an interruption like any other, not a traceback
        rv = app(args=_route(argv), prog_name="investigate", standalone_mode=False)
        if rv == 130:  # typer turns KeyboardInterrupt (Ctrl-C) into exit code 130 and returns it
            sys.stderr.write("investigate: interrupted; the transcript ends with a cancelled run_finished event\n")
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
    except typer.Abort:
        sys.stderr.write("investigate: interrupted\n")
        return 130
    except KeyboardInterrupt:
        sys.stderr.write("investigate: interrupted; the transcript ends with a cancelled run_finished event\n")
        return 130
    except RunFailedExit as exc:
        sys.stderr.write(f"investigate: {_one_line(str(exc))}\n")
        return 1
    except bad as exc:
        sys.stderr.write(f"investigate: {_one_line(str(exc))}\n")
        return 2
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
