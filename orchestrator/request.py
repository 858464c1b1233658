"""`RunRequest`: what one investigation is asked, every input checked once, in one place.

The CLI (`investigate QUESTION ...`), `orchestrator.investigate` and `orchestrator.investigate_sync` all build one
and hand it to the run; nothing downstream checks an input again. `RunRequest.of(...)` raises `InputError` (one line
naming the option and the fix) for the first bad input, in this order, so that the cheap checks run before anything
is imported or read: the question, values that are empty (an unset shell variable), options that exclude or need
each other, numeric ranges, and only then the files (observations, bench results, logs before, agent definitions,
traces, the transcript's folder) and the interpreter name.

A leaf above `errors.py`/`validate.py`: the modules that read files are imported inside the checks that need them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from orchestrator.errors import InputError

OPTIONS: dict[str, str] = {
    "question": "QUESTION", "host": "--host", "hosts_file": "--hosts", "slurm": "--slurm", "k8s": "--k8s",
    "k8s_namespace": "--namespace", "k8s_container": "--container", "ssh_config": "--ssh-config",
    "python": "--python", "observations": "--observations", "logs": "--log", "traces": "--trace",
    "baseline_traces": "--baseline-trace", "bench": "--bench", "baseline": "--baseline",
    "baseline_log": "--baseline-log", "model": "--model", "offline": "--offline", "agents_dirs": "--agents",
    "measure": "--measure", "sample_s": "--sample-s", "measure_wait": "--measure-wait",
    "transcript": "--transcript", "run_id": "run_id", "path_configs": "--path-config",
}
"""Each field's option on the command line: messages name what the user typed (a library caller reads the same
words as a CLI user, and the keyword is the option without dashes)."""

EMPTY_FIX: dict[str, str] = {
    "host": "pass a host (an ssh-config alias or [user@]host[:port]), or leave --host out to investigate this machine",
    "slurm": "pass a nodelist or partition, or . for this allocation",
    "k8s": "pass a pod label selector such as app=vllm",
}
"""What to pass instead of an empty value, where a generic "pass a value" would not help."""

SAMPLE_S = (0.0, 60.0)
"""`--sample-s`: the resource account's sampling window, more than 0 and at most 60 seconds."""
MEASURE_WAIT_S = (0.0, 3600.0)
"""`--measure-wait`: 0 (measure at once) to 3600 seconds."""


NO_QUESTION = "(inputs only)"
"""The question of a request checked for its inputs alone (`RunRequest.inputs`)."""


def _listed(v: Any) -> list[Any]:
    """A keyword that takes one value or several (`host="a"` or `host=["a", "b"]`), as a list; None as []."""
    if v is None:
        return []
    if isinstance(v, (str, Path)):
        return [v]
    return list(v)


class RunRequest(BaseModel):
    """The question and every input of one investigation, checked (`RunRequest.of`). Paths are on this machine
    except `logs` (read on the investigated host) and `traces` given as `host:PATH`."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    question: str
    host: list[str] = Field(default_factory=list)
    """ssh-config aliases or [user@]host[:port]; none: this machine; several: one investigation over all of them."""
    hosts_file: Path | None = None
    slurm: str | None = None
    k8s: str | None = None
    k8s_namespace: str | None = None
    k8s_container: str | None = None
    ssh_config: Path | None = None
    python: str | None = None
    observations: Any = None
    """A YAML/JSON file, a dict or an `Observations` given; after the checks, the parsed `Observations` with the
    bench runs and the log before folded in (None when nothing was given)."""
    logs: list[str] = Field(default_factory=list)
    traces: list[str] = Field(default_factory=list)
    baseline_traces: list[str] = Field(default_factory=list)
    path_configs: list[Path] = Field(default_factory=list)
    """Files of the layers in front of the engine that the host cannot show (a proxy config or a Kubernetes
    manifest from another machine), on this machine: the path prong reads them beside what the host shows."""
    bench: list[Path] = Field(default_factory=list)
    baseline: list[Path] = Field(default_factory=list)
    baseline_log: list[Path] = Field(default_factory=list)
    model: str | None = None
    offline: bool | None = None
    agents_dirs: list[Path] = Field(default_factory=list)
    measure: bool = False
    sample_s: float | None = None
    measure_wait: float | None = None
    transcript: Path | bool | None = None
    """A path, None for a new file under the user state directory, or False for none."""
    run_id: str | None = None

    @field_validator("host", "logs", "traces", "baseline_traces", "path_configs", "bench", "baseline", "baseline_log",
                     "agents_dirs", mode="before")
    @classmethod
    def _one_or_several(cls, v: Any) -> list[Any]:
        return _listed(v)

    @field_validator("transcript", mode="before")
    @classmethod
    def _transcript(cls, v: Any) -> Any:
        if v is True:
            raise ValueError("pass a path, None (a new file under the state directory) or False (no transcript)")
        return v

    @classmethod
    def of(cls, question: Any = None, **fields: Any) -> "RunRequest":
        """Check everything given (InputError with one line, for the first problem) and return the request."""
        fields = {k: v for k, v in fields.items() if v is not None}
        unknown = sorted(set(fields) - set(cls.model_fields))
        if unknown:
            import difflib

            near = difflib.get_close_matches(unknown[0], list(cls.model_fields), n=1)
            raise InputError(f"unknown keyword {unknown[0]!r}" + (f"; did you mean {near[0]!r}?" if near else
                                                                  f"; the keywords are {', '.join(cls.model_fields)}"))
        from orchestrator.validate import check_question, check_scope

        q = check_question(question)
        check_scope(q)  # a question the tool cannot answer is said so, not answered with performance boilerplate
        return cls._checked(q, fields)

    @classmethod
    def inputs(cls, **fields: Any) -> "RunRequest":
        """The checks of `of` for inputs given without a question (`probe`, the options of `resume`)."""
        return cls._checked(NO_QUESTION, {k: v for k, v in fields.items() if v is not None})

    @classmethod
    def _checked(cls, q: str, fields: dict[str, Any]) -> "RunRequest":
        _check_empty(fields)
        try:
            req = cls(question=q, **fields)
        except ValidationError as exc:
            raise InputError(_one_error(exc)) from None
        req._check_combinations()
        req._check_ranges()
        req._check_files()
        return req

    # -----------------------------------------------------------------------------------------------------------
    # the checks, cheapest first

    def _check_combinations(self) -> None:
        if self.model and self.offline:
            raise InputError("--model and --offline exclude each other; pass one")
        sources = sum(bool(x) for x in (self.host, self.hosts_file, self.slurm, self.k8s))
        if sources > 1:
            raise InputError("--host, --hosts, --slurm and --k8s are host sources that exclude each other; pass one")
        if (self.k8s_namespace or self.k8s_container) and not self.k8s:
            raise InputError("--namespace and --container go with --k8s SELECTOR; pass --k8s too")
        if self.measure_wait is not None and not self.measure:
            raise InputError("--measure-wait goes with --measure; pass --measure too, or drop --measure-wait")
        from orchestrator.validate import check_baselines

        check_baselines(self.bench, self.baseline, self.logs, self.baseline_log, read=False)

    def _check_ranges(self) -> None:
        lo, hi = SAMPLE_S
        if self.sample_s is not None and not lo < self.sample_s <= hi:
            raise InputError(f"--sample-s {self.sample_s:g} is out of range; pass a window of more than {lo:g} and at "
                             f"most {hi:g} seconds (e.g. --sample-s 2)")
        lo, hi = MEASURE_WAIT_S
        if self.measure_wait is not None and not lo <= self.measure_wait <= hi:
            raise InputError(f"--measure-wait {self.measure_wait:g} is out of range; pass {lo:g} to {hi:g} seconds "
                             "(0: measure at once)")

    def _check_files(self) -> None:
        """Every file this machine reads for the run, and the interpreter's name (heavier: imported here)."""
        from orchestrator.validate import check_baselines, check_input_file

        if self.ssh_config is not None:  # a directory or a FIFO named as such, not as "not found"
            check_input_file(self.ssh_config, "ssh config", "pass an existing file to --ssh-config")
        if self.hosts_file is not None:
            check_input_file(self.hosts_file, "hosts file", "pass a file of hosts to --hosts")
        obs = _observations(self.observations)
        check_baselines(self.bench, self.baseline, self.logs, self.baseline_log)
        if self.bench or self.baseline:
            obs = _with_bench(obs, self.bench, self.baseline)
        if self.baseline_log:
            from orchestrator.baselines import load_baseline_log
            from orchestrator.observations import Observations

            obs = obs if obs is not None else Observations()
            obs.baseline_log = load_baseline_log(self.baseline_log[0])
        self.observations = obs
        self._check_agents()
        if self.python is not None:
            from orchestrator.probes.interpreter import name_refusal

            if (why := name_refusal(self.python)) is not None:
                raise InputError(f"--python {self.python!r} refused: {why.split(' refused: ', 1)[-1]}; pass the "
                                 "serving interpreter (e.g. --python /opt/venv/bin/python3)")
        from orchestrator.prongs import check_inputs  # each prong checks the inputs it reads (traces, path configs)

        check_inputs(**{name: getattr(self, name) for name in type(self).model_fields})
        if isinstance(self.transcript, Path):
            check_writable(self.transcript, "--transcript", "transcript")

    def _check_agents(self) -> None:
        from orchestrator.agentdefs import user_dirs

        for d in user_dirs(self.agents_dirs):
            if d.is_dir():
                for f in sorted(d.glob("*.md")):
                    check_text(f, "agent definition")

    # -----------------------------------------------------------------------------------------------------------
    # what the run takes from it

    @property
    def local(self) -> bool:
        """Whether the investigated host is this machine (no host source named)."""
        named = self.host and self.host not in (["local"], ["localhost"])
        return not (named or self.hosts_file or self.slurm or self.k8s)

    def missing_local_logs(self) -> list[str]:
        """--log paths are read on the investigated host; on this machine we can tell up front which are missing
        (InputError for one that is a directory, a FIFO or a device: never a log, and /dev/zero never ends)."""
        if not self.local:
            return []
        from orchestrator.validate import file_kind

        for p in self.logs:
            if (kind := file_kind(Path(p).expanduser())) is not None:
                raise InputError(f"--log {p} is {kind}, not a log file; pass the server's log file")
        return [p for p in self.logs if not Path(p).expanduser().is_file()]

    def settings_over(self, settings: Any) -> Any:
        """`settings` with this request's own limits laid over them (`--sample-s`, `--measure-wait`)."""
        update: dict[str, float] = {}
        if self.sample_s is not None:
            update["account_sample_s"] = float(self.sample_s)
        if self.measure_wait is not None:
            update["measure_wait_s"] = float(self.measure_wait)
        return settings.model_copy(update=update) if update else settings


def _check_empty(fields: dict[str, Any]) -> None:
    """An empty value (`--host ""`, an unset `$HOST`) is an error naming the option, never "this machine" or "."."""
    for name, value in fields.items():
        if name in ("question", "offline", "measure", "transcript", "sample_s", "measure_wait", "observations"):
            continue
        values = _listed(value) if name in ("host", "logs", "traces", "baseline_traces", "path_configs", "bench",
                                            "baseline", "baseline_log", "agents_dirs") else [value]
        if any(isinstance(v, (str, Path)) and not str(v).strip() for v in values):
            option = OPTIONS.get(name, name)
            fix = EMPTY_FIX.get(name, f"pass a value to {option}, or leave {option} out")
            raise InputError(f"{option} is empty (an unset shell variable?); {fix}")
    obs = fields.get("observations")
    if isinstance(obs, (str, Path)) and not str(obs).strip():
        raise InputError("--observations is empty (an unset shell variable?); pass a YAML or JSON file, or leave "
                         "--observations out")
    if isinstance(fields.get("transcript"), str) and not fields["transcript"].strip():
        raise InputError("--transcript is empty (an unset shell variable?); pass a file, or leave --transcript out")


def _one_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    field = str(err["loc"][0]) if err["loc"] else ""
    option = OPTIONS.get(field, field)
    msg = str(err["msg"]).removeprefix("Value error, ")
    return f"{option}: {msg[:1].lower() + msg[1:]}; see `investigate ask --help`"


def _observations(given: Any) -> Any:
    """Observations as the run records them: from an `Observations`, a dict, or a YAML/JSON file path."""
    if given is None:
        return None
    from orchestrator.observations import Observations, load_observations, parse_observations

    if isinstance(given, Observations):
        return given
    if isinstance(given, dict):
        return parse_observations(given)
    return load_observations(given)


def _with_bench(obs: Any, bench: list[Path], baseline: list[Path]) -> Any:
    """The observations with the bench files' runs added (each file parsed, and refused, before the run); the
    baseline file's runs first, labelled `baseline` (the run before)."""
    from orchestrator.benchresults import load_bench
    from orchestrator.observations import Observations

    before = [r.model_copy(update={"label": "baseline"}) for path in baseline for r in load_bench(path)]
    runs = [r for path in bench for r in load_bench(path)]
    obs = obs.model_copy() if obs is not None else Observations()
    obs.bench = [*before, *obs.bench, *runs]
    return obs


def check_text(path: Path, what: str) -> None:
    """A file read as UTF-8 text later: say which one is not, rather than fail deep inside with no name."""
    try:
        path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{what} {path} is not UTF-8 text (byte {exc.start}); pass a UTF-8 text file") from None
    except IsADirectoryError:
        raise InputError(f"{what} {path} is a directory; pass a file") from None
    except OSError:
        pass  # the reader reports a missing or unreadable file in its own words


def _empty_or_transcript(path: Path) -> bool:
    """Whether path is missing, empty, or starts as a transcript does (its header line)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(256)
    except OSError:
        return True  # missing or unreadable: the open for writing below says what is wrong
    return not head.strip() or head.lstrip().startswith(b'{"type":"header"')


def check_writable(path: Path | None, option: str, what: str) -> None:
    """An output file written later: refuse now what cannot be written then (a missing folder, a directory, no
    permission, a file system that takes no files such as /proc), so that nothing (a paid run) happens first. The
    file is opened for appending, as the write will; one that did not exist is removed again."""
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
    elif what == "transcript" and not _empty_or_transcript(path):
        # a transcript is written from its first byte: `--transcript obs.yaml` (a slip of the hand) would replace
        # the user's file; an earlier transcript at the same path (a script's fixed name) is replaced as before
        reason = "it holds another file, not a transcript, and would be overwritten"
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
        raise InputError(f"cannot write the {what} {path}: {reason}; pass a writable path to {option}")
