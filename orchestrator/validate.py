"""The checks every entry point shares (the CLI and the library): one path, so a notebook gets the CLI's errors.

A leaf beside `errors.py`: it imports nothing heavier, so the CLI can run these checks before it imports the engine.
"""

from __future__ import annotations

import re
import stat
from pathlib import Path

from orchestrator.errors import InputError

MAX_QUESTION_CHARS = 2000
"""A question is a sentence or a paragraph; anything longer is a file pasted by mistake (use observations)."""


def check_question(question: object) -> str:
    """The question, stripped; InputError when it is not text, empty or longer than `MAX_QUESTION_CHARS`."""
    if not isinstance(question, str):
        raise InputError(f"the question must be text, not {type(question).__name__}; ask something like "
                         "\"why is FP4 slow?\"")
    q = question.strip()
    if not q:
        raise InputError("the question is empty; ask something like \"why is FP4 slow?\"")
    if len(q) > MAX_QUESTION_CHARS:
        raise InputError(f"the question is {len(q):,} characters long (at most {MAX_QUESTION_CHARS:,}); ask it in a "
                         "sentence and pass measurements with --observations FILE")
    return q


def check_backend_choice(model: str | None, offline: bool | None) -> None:
    """`model` (a Claude model) and `offline` (the deterministic backend) choose the backend two ways: one only."""
    if model and offline:
        raise InputError("--model and --offline exclude each other; pass one")


def file_kind(path: Path) -> str | None:
    """What a path that exists but is not a regular file is ("a directory", "a FIFO", ...); None for a regular file
    or a path that does not exist. Symlinks are followed, as a reader would."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return None
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device file"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def check_input_file(path: str | Path, what: str, fix: str, *, max_bytes: int | None = None) -> Path:
    """A file read later, checked now with the right words: missing, a directory, a device or FIFO (/dev/zero never
    ends), or larger than `max_bytes` (refused before a byte is parsed). `fix` says what to pass instead."""
    p = Path(path).expanduser()
    kind = file_kind(p)
    if kind is not None:
        raise InputError(f"{what} {p} is {kind}, not a file; {fix}")
    if not p.is_file():
        raise InputError(f"{what} {p} not found; {fix}")
    if max_bytes is not None:
        size = p.stat().st_size
        if size > max_bytes:
            raise InputError(f"{what} {p} is {_mb(size)}, more than the {_mb(max_bytes)} read; {fix}")
    return p


def _mb(n: int) -> str:
    return f"{n / 1e6:,.1f} MB" if n >= 100_000 else f"{n:,} bytes"


def check_baselines(bench: list[Path], baseline: list[Path], logs: list[str], baseline_log: list[Path], *,
                    read: bool = True) -> None:
    """`--baseline` / `--baseline-log` (the run before) go with the run now (`--bench` / `--log`) and name another file:
    InputError naming the option and the fix. `read=False`: only how the options go together (no file is looked
    at). The files themselves are read (and refused) by their loaders."""
    if baseline and not bench:
        raise InputError("--baseline is the benchmark run before; pass the run after with --bench AFTER.json too")
    if baseline_log and not logs:
        raise InputError("--baseline-log is the engine log of the run before; pass the log of the run now with "
                         "--log AFTER.log too")
    if len(baseline) > 1 or len(baseline_log) > 1:
        raise InputError("--baseline and --baseline-log take one file each (the run before); pass one")
    if not read:
        return
    for b in baseline:
        check_input_file(b, "--baseline", "pass the benchmark result file of the run before")
    for b in baseline_log:
        check_input_file(b, "--baseline-log", "pass the engine log of the run before (a file on this machine)")
    for base, others, option, other in ((baseline, [str(b) for b in bench], "--baseline", "--bench"),
                                        (baseline_log, logs, "--baseline-log", "--log")):
        for b in base:
            for o in others:
                if _same_file(Path(b), Path(o)):
                    raise InputError(f"{option} {b} is the same file as {other} {o}: comparing a run with itself "
                                     f"shows nothing; pass the run before to {option}")


def _same_file(a: Path, b: Path) -> bool:
    a, b = a.expanduser(), b.expanduser()
    try:
        return a.exists() and b.exists() and a.samefile(b)
    except OSError:
        return a.resolve() == b.resolve()


_QUALITY = re.compile(
    r"gibberish|garbage|nonsense|incoherent|hallucinat|\baccura(?:cy|te)\b|\bquality\b|perplexity|"
    r"\bwrong (?:outputs?|answers?|results?|tokens?)\b|\bbad (?:outputs?|answers?)\b|repeats? itself|repetitive|"
    r"makes? no sense|\bcorrect(?:ness)?\b", re.IGNORECASE)
"""What the model says (its quality), not how fast it says it."""
_PERFORMANCE = re.compile(
    r"slow|fast|speed|latency|throughput|tok(?:ens)?/s|tokens? (?:per|a) second|\bttft\b|\btpot\b|\bitl\b|"
    r"first[- ]token|inter[- ]token|per[- ]token|\bprefill|\bdecod|\bqps\b|req(?:uests)?/s|time|takes?|took|"
    r"\bseconds?\b|\bms\b|minutes?|hang|stuck|stall|crash|\boom\b|out of memory|memory|utili[sz]|\bbusy\b|idle|"
    r"bound|bottleneck|batch|concurren|queue|scal|regress|drop|\bgpus?\b.*\b(?:use|usage)\b|power|clock|throttl|"
    r"nccl|all-reduce|kernel|gemm|tflops|bandwidth|start[- ]?up|load(?:ing)?\b|warm[- ]?up|cost|price|\$|perf|"
    r"health|wrong with|\bxid\b|\becc\b|faulty|broken|\bnans?\b|error|fail",
    re.IGNORECASE)
_PRICE = re.compile(r"^\W*(?:how much|what(?:'s| is| does| would)?(?: the)?|estimate)\b.{0,60}\b(?:cost|price)",
                    re.IGNORECASE)
_DIAGNOSTIC = re.compile(r"\bwhy\b|slow|\bhigh(?:er)?\b|expensive|\btoo\b|more than|reduce|lower|\bcut\b|doubled|"
                         r"went up|increase", re.IGNORECASE)

SCOPE = ("investigate answers performance questions about LLM inference on GPU hosts (throughput, latency, TTFT, "
         "start-up time, GPU use, errors under load, cost per token)")


def check_scope(question: str) -> None:
    """InputError (one line saying what the tool answers) for a question it cannot answer: the quality of what the
    model says, or a price estimate with nothing to diagnose. Anything that names a performance word is asked."""
    if _QUALITY.search(question) and not _PERFORMANCE.search(_QUALITY.sub(" ", question)):
        raise InputError(f"{SCOPE}; \"{_short(question)}\" is about what the model outputs, not how fast: check the "
                         "quantized checkpoint against the original (e.g. lm-eval on both), then ask investigate why "
                         "it is slow if it is")
    if _PRICE.search(question) and not _DIAGNOSTIC.search(question):
        raise InputError(f"{SCOPE}, not price estimates: `investigate reference --gpu GPU --model MODEL` gives "
                         "published tokens/s per GPU (cost per million tokens = GPU $/hour / (tokens/s x 3600) x "
                         "1,000,000); ask \"why is our cost per token high?\" with --host or --bench to have it "
                         "diagnosed")


def _short(text: str, limit: int = 80) -> str:
    s = " ".join(text.split())
    return s if len(s) <= limit else s[:limit - 1] + "…"
