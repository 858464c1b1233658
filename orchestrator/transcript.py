"""Transcript I/O: the JSONL writer (redaction, flush per event, fsync at close) and the validating reader."""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import sys
import threading
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any, Callable, Iterable, Iterator

from pydantic import BaseModel, ValidationError

from orchestrator import __version__
from orchestrator.errors import InputError
from orchestrator.events import EVENT_ADAPTER, SCHEMA_VERSION, Event, Header, ModelCall
from orchestrator.limits import TRANSCRIPT_MAX_DEPTH, TRANSCRIPT_MAX_LINE_BYTES
from orchestrator.messages import Message, ToolSpec
from orchestrator.redact import redact_obj
from orchestrator.settings import state_dir



# JSON leaves DEL, C1 controls and bidi overrides raw with ensure_ascii=False: escaped here, the line parses to the
# same strings and `cat`ting a transcript cannot drive a terminal. Lone surrogates too: a host's JSON or YAML may
# escape one (`"\\ud800"` in a served config parses to it), and UTF-8 cannot encode it: the write raised and the run
# lost the event (a local user's config could end any run's recording)
_JSON_RAW_CONTROL = re.compile("[\x7f-\x9f\u202a-\u202e\u2066-\u2069\u2028\u2029\ud800-\udfff]")


def _dumps(obj: Any) -> str:
    line = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    return _JSON_RAW_CONTROL.sub(lambda m: f"\\u{ord(m.group(0)):04x}", line) if _JSON_RAW_CONTROL.search(line) else line

class TranscriptError(InputError):
    """A transcript cannot be read; the message names the file, the line and the fix."""


def shipped_transcript(path: str | Path) -> Path | None:
    """A transcript shipped with the package named by its file name, with or without `.jsonl` or `transcripts/`
    (`seed-rtx-pro-6000-fp4`, `transcripts/seed-rtx-pro-6000-fp4.jsonl`), when no file of that name is here: a wheel
    keeps them inside the package, and a notebook's folder is not the repository's."""
    from orchestrator.agentdefs import builtin_dir

    p = Path(path)
    if str(p) in ("", "-") or p.exists() or not (len(p.parts) == 1 or p.parent.name == "transcripts"):
        return None
    shipped = builtin_dir("transcripts")
    return next((shipped / n for n in (p.name, p.name + ".jsonl") if (shipped / n).is_file()), None)


def _transcript_file(path: str | Path) -> Path:
    """The transcript's path, checked: a directory, a device or a FIFO is named as such, not as "not found"; a
    shipped transcript may be named by its file name from any folder (`shipped_transcript`)."""
    from orchestrator.validate import check_input_file

    path = shipped_transcript(path) or path
    try:
        return check_input_file(path, "transcript", "pass the path of a .jsonl file written by investigate")
    except InputError as exc:
        raise TranscriptError(str(exc)) from None


def default_path(question: str, run_id: str, now: datetime | None = None) -> Path:
    """`<state dir>/transcripts/<UTC time>-<question slug>-<run id prefix>.jsonl`."""
    now = now or datetime.now(timezone.utc)
    slug = re.sub(r"[^a-z0-9]+", "-", question.lower()).strip("-")[:48] or "run"
    return state_dir() / "transcripts" / f"{now:%Y%m%dT%H%M%SZ}-{slug}-{run_id[:8]}.jsonl"


class Recorder:
    """Writes one run's events: header first, one redacted JSON line per event, flushed as it happens.

    Also keeps the events in memory (for the run's result) and tells subscribers (the progress display).
    """

    def __init__(self, run_id: str, path: str | Path | None = None):
        self.run_id = run_id
        self.path = Path(path) if path else None
        self.events: list[Event] = []
        self._seq = 0
        self._lock = threading.Lock()
        self._subscribers: list[Callable[[Event], None]] = []
        self._fh: IO[str] | None = None
        if self.path:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fh = self.path.open("w", encoding="utf-8")
            header = Header(tool_version=__version__, run_id=run_id)
            self._write(header.model_dump(mode="json"))

    def subscribe(self, callback: Callable[[Event], None]) -> None:
        self._subscribers.append(callback)

    def _write(self, obj: dict[str, Any]) -> None:
        assert self._fh is not None
        self._fh.write(_dumps(redact_obj(obj)) + "\n")
        self._fh.flush()

    def emit(self, event: Event) -> Event:
        """Assign the next seq, redact, write and flush; returns the (redacted) event as recorded."""
        with self._lock:
            self._seq += 1
            event.seq = self._seq
            dumped = event.model_dump(mode="json")
            clean = redact_obj(dumped)
            recorded = event if clean is dumped else EVENT_ADAPTER.validate_python(clean)
            self.events.append(recorded)
            if self._fh is not None:
                self._fh.write(_dumps(clean) + "\n")
                self._fh.flush()
        for cb in self._subscribers:
            try:
                cb(recorded)
            except Exception:  # a display bug must never break a run
                pass
        return recorded

    def close(self) -> None:
        with self._lock:
            if self._fh is not None and not self._fh.closed:
                self._fh.flush()
                os.fsync(self._fh.fileno())
                self._fh.close()


@dataclass
class Transcript:
    header: Header
    events: list[Event]
    path: Path | None = None
    warnings: list[str] = field(default_factory=list)
    upgraded_from: int | None = None

    def of_type(self, cls):
        return [e for e in self.events if isinstance(e, cls)]


def read_transcript(path: str | Path, *, strict: bool = True) -> Transcript:
    """Read and validate a transcript; a file cut off mid-line yields its complete lines and a warning.

    A damaged line inside the file is an error naming the line when `strict` (replay and resume need every event);
    otherwise it becomes a warning naming the line and the rest is read (`show`, notebooks).
    """
    from orchestrator.transcript_upgrade import upgrade

    p = _transcript_file(path)
    # read one line at a time: the whole file as bytes, as text and split into lines was 3x its size held at once
    # before the first event was parsed (bench/transcript_memory.py)
    with p.open("rb") as fh:
        return _read_lines(p, _numbered_lines(p, fh), strict=strict, upgrade=upgrade)


def _numbered_lines(p: Path, fh: IO[bytes]) -> Iterator[tuple[int, str, bool]]:
    """(line number, text, complete) for each line; `complete` is False only for a last line with no newline."""
    for n, raw in enumerate(fh, start=1):
        yield n, raw.decode("utf-8", errors="replace").rstrip("\n"), raw.endswith(b"\n")


def _read_lines(p: Path, numbered: Iterator[tuple[int, str, bool]], *, strict: bool, upgrade: Any) -> Transcript:
    warnings: list[str] = []

    def complete_lines() -> Iterator[tuple[int, str]]:
        for n, line, whole in numbered:
            if whole:
                yield n, line
            elif line.strip():
                # the writer ends every line with a newline: a non-empty tail is a line cut off by a crash
                try:
                    json.loads(line)
                except (ValueError, RecursionError):
                    warnings.append(f"{p}: line {n} is cut off mid-line (the run was interrupted); ignored it")
                    return
                yield n, line

    lines = complete_lines()
    first = next(lines, None)
    if first is None or not first[1].strip():
        raise TranscriptError(f"{p}: empty file or missing header line; not an investigate transcript")
    try:
        head = json.loads(first[1])
    except json.JSONDecodeError as exc:
        raise TranscriptError(f"{p}: line 1 is not JSON ({exc.msg}); not an investigate transcript") from None
    except (ValueError, RecursionError) as exc:  # integers past 4,300 digits, nesting past the recursion limit
        raise TranscriptError(f"{p}: line 1 is not a transcript header ({_hostile(exc)})") from None
    if not isinstance(head, dict) or head.get("type") != "header":
        raise TranscriptError(f"{p}: line 1 is not a transcript header; not an investigate transcript")
    version = head.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise TranscriptError(f"{p}: header has no integer schema_version")
    if version < 1:
        raise TranscriptError(f"{p}: schema_version {version} was never written by investigate (versions start at 1); "
                              "the file is not a transcript or was edited")
    if version > SCHEMA_VERSION:
        raise TranscriptError(
            f"{p}: schema_version {version} is newer than this investigate understands ({SCHEMA_VERSION}); "
            "upgrade investigate (pip install -U investigate) to read it"
        )
    def lenient(fn, *args):
        """fn(*args), or None with a warning naming the line when not strict."""
        try:
            return fn(*args)
        except TranscriptError as exc:
            if strict:
                raise
            warnings.append(f"{exc}; skipped it")
            return None

    if version < SCHEMA_VERSION:
        records: list[tuple[int, dict[str, Any]]] = []
        for n, line in lines:
            if line.strip() and (obj := lenient(_loads, p, n, line)) is not None:
                records.append((n, obj))
        head, records = upgrade(version, head, records)
        events = [e for n, obj in records if (e := lenient(_validate, p, n, obj)) is not None]
        upgraded_from: int | None = version
    else:
        # the common case: pydantic parses and validates each line in one step (several times faster than
        # json.loads + validate_python); a failing line is then examined to say what is wrong with it
        events = []
        texts: dict[str, str] = {}
        for n, line in lines:
            if not line.strip():
                continue
            try:
                events.append(tidy(EVENT_ADAPTER.validate_json(line), texts))
            except ValidationError:
                obj = lenient(_loads, p, n, line)
                if obj is not None and (event := lenient(_validate, p, n, obj)) is not None:
                    events.append(tidy(event, texts))
        upgraded_from = None
    try:
        header = Header.model_validate(head)
    except ValidationError as exc:
        raise TranscriptError(f"{p}: line 1: invalid header ({exc.errors()[0]['msg']})") from None
    return Transcript(header=header, events=events, path=p, warnings=warnings, upgraded_from=upgraded_from)


def implausible_number(obj: Any, where: str = "") -> str | None:
    """The path and value of the first number in obj no renderer can draw (NaN, infinities, |x| >= 1e18, subnormal
    or near-subnormal magnitudes below 1e-30), or None. A hand-edited or hostile transcript may hold any of them."""
    if isinstance(obj, bool):
        return None
    if isinstance(obj, (int, float)):
        x = float(obj) if abs(obj) < 10**300 else math.inf
        if not math.isfinite(x) or abs(x) >= 1e18 or (x != 0 and abs(x) < 1e-30):
            return f"{where or 'value'} ({obj!r:.40})"
        return None
    items: Iterable[tuple[Any, Any]]
    if isinstance(obj, dict):
        items = obj.items()
    elif isinstance(obj, (list, tuple)):
        items = enumerate(obj)
    else:
        return None
    for k, v in items:
        found = implausible_number(v, f"{where}.{k}" if where else str(k))
        if found is not None:
            return found
    return None


MAX_LINE_BYTES = TRANSCRIPT_MAX_LINE_BYTES
"""A longer line is skipped by the streaming reader (named in a warning) rather than held in memory."""

BIG_LINE_BYTES = 4 * 1024 * 1024
"""After an event of a line this long is let go, the streaming reader hands the C heap's free memory back to the
system: parsing one line of a lead's 100,000 task calls took 120 MB that the C allocator kept (glibc returns free
heap only when asked), under everything the reader's caller held afterwards (`show`'s peak: 1.3x)."""


def _give_back_free_heap() -> None:
    """glibc's `malloc_trim(0)` where there is one (Linux); nothing elsewhere."""
    global _malloc_trim
    if _malloc_trim is None:
        try:
            import ctypes

            _malloc_trim = ctypes.CDLL("libc.so.6").malloc_trim
        except (OSError, AttributeError):
            _malloc_trim = False
    if _malloc_trim:
        _malloc_trim(0)


_malloc_trim: Any = None


SHORT_TEXT = 64
"""Strings up to this long are interned by `tidy` (run and agent ids, tool, host and model names, repeated in every
event); longer ones are held once per text by `read_transcript` (a tool result's text and the model call that
carried it are two copies of one string in the file)."""
_FIELD_SETS: dict[type, set[str]] = {}


def tidy(value: Any, texts: dict[str, str] | None = None) -> Any:
    """`value` (an event just read, or a model, list inside one) made to take less memory, in place: every model's
    set of field names is one set shared by its class (pydantic gives each model its own; it only matters to
    `exclude_unset`, which nothing here uses), short strings are interned and, with `texts`, equal long ones are
    one object. Values are unchanged. A report of 100,000 small events held 2.7 kB an event, 1.3 kB so; a replay of
    a 239 MB transcript 553 MB, 347 MB so."""
    if isinstance(value, BaseModel):
        cls = type(value)
        names = _FIELD_SETS.get(cls)
        if names is None:
            names = _FIELD_SETS[cls] = set(cls.model_fields)
        object.__setattr__(value, "__pydantic_fields_set__", names)
        items: Any = value.__dict__
        keys: Any = list(items)
    elif type(value) is list:
        items, keys = value, range(len(value))
    else:
        return value
    for k in keys:
        x = items[k]
        if type(x) is str:
            y = sys.intern(x) if len(x) <= SHORT_TEXT else x if texts is None else texts.setdefault(x, x)
            if y is not x:
                items[k] = y
        elif isinstance(x, (BaseModel, list)):
            tidy(x, texts)
    return value


def iter_transcript(path: str | Path, warnings: list[str], *, strict: bool = False) -> tuple[Header, Iterator[Event]]:
    """The header and a lazy iterator over the events, reading one line at a time: memory stays bounded by the
    longest line, whatever the file's size (`show` of a multi-GB transcript). Damaged lines become warnings, as
    `read_transcript(strict=False)` does, or with `strict` a TranscriptError raised where the iteration reaches
    them, as `read_transcript` does (`report`); a transcript of an older schema is read whole (they are small)."""
    p = _transcript_file(path)
    with p.open("rb") as fh:
        first = fh.readline(MAX_LINE_BYTES)
    try:
        head = json.loads(first.decode("utf-8", errors="replace")) if first.strip() else None
    except (ValueError, RecursionError):
        head = None
    if not isinstance(head, dict) or head.get("schema_version") != SCHEMA_VERSION:
        t = read_transcript(p, strict=strict)  # older schema or a damaged header: the full reader says what is wrong
        warnings.extend(t.warnings)
        return t.header, iter(t.events)
    try:
        header = Header.model_validate(head)
    except ValidationError as exc:
        raise TranscriptError(f"{p}: line 1: invalid header ({exc.errors()[0]['msg']})") from None

    def events() -> Iterator[Event]:
        with p.open("rb") as fh:
            fh.readline(MAX_LINE_BYTES)
            n = 1
            trim_at = 0  # once the line after a big one is handed over, its event is no longer held by the caller
            while True:
                if trim_at and n >= trim_at:
                    trim_at = 0
                    _give_back_free_heap()
                raw = fh.readline(MAX_LINE_BYTES)
                if not raw:
                    return
                n += 1
                if len(raw) >= BIG_LINE_BYTES:
                    trim_at = n + 1
                if not raw.endswith(b"\n") and len(raw) == MAX_LINE_BYTES:
                    while (more := fh.readline(MAX_LINE_BYTES)) and not more.endswith(b"\n"):
                        pass
                    too_long = f"{p}: line {n} is longer than {MAX_LINE_BYTES // 2**20} MiB"
                    if strict:
                        raise TranscriptError(f"{too_long}; the file is damaged")
                    warnings.append(f"{too_long}; skipped it")
                    continue
                if not raw.strip():
                    continue
                try:
                    yield _tidy_streamed(EVENT_ADAPTER.validate_json(raw))
                    continue
                except ValidationError:
                    pass
                line = raw.decode("utf-8", errors="replace")
                if not raw.endswith(b"\n"):
                    try:
                        json.loads(line)
                    except (ValueError, RecursionError):
                        warnings.append(f"{p}: line {n} is cut off mid-line (the run was interrupted); ignored it")
                        return
                try:
                    event = _validate(p, n, _loads(p, n, line))
                except TranscriptError as exc:
                    if strict:
                        raise
                    warnings.append(f"{exc}; skipped it")
                    continue
                yield _tidy_streamed(event)

    return header, events()


def _tidy_streamed(event: Event) -> Event:
    """`tidy`, but not a model call's conversation: what streams through (`show`, `report`) keeps none of it."""
    return event if isinstance(event, ModelCall) else tidy(event)


def _hostile(exc: BaseException) -> str:
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    return "an integer too long to read" if "digits" in str(exc) else " ".join(str(exc).split())[:120]


def _loads(p: Path, n: int, line: str) -> dict[str, Any]:
    try:
        return json.loads(line)
    except json.JSONDecodeError as exc:
        raise TranscriptError(f"{p}: line {n} is not valid JSON ({exc.msg} at column {exc.colno}); the file is damaged") from None
    except (ValueError, RecursionError) as exc:
        raise TranscriptError(f"{p}: line {n} cannot be read ({_hostile(exc)}); the file is damaged") from None


def _deeper_than(obj: Any, limit: int) -> bool:
    """Whether lists and dicts nest more than `limit` levels in obj (iterative)."""
    stack = [(obj, 1)]
    while stack:
        o, d = stack.pop()
        if isinstance(o, (dict, list)):
            if d > limit:
                return True
            stack.extend((v, d + 1) for v in (o.values() if isinstance(o, dict) else o))
    return False


def _validate(p: Path, n: int, obj: dict[str, Any]) -> Event:
    # reached only for a line pydantic's own parser refused (nesting past ~200 among the reasons): the depth is
    # checked here, where json.loads read what pydantic's serializer could never write back out
    if _deeper_than(obj, TRANSCRIPT_MAX_DEPTH):
        raise TranscriptError(f"{p}: line {n} is nested more than {TRANSCRIPT_MAX_DEPTH} levels deep; the file is "
                              "damaged or hostile")
    try:
        return EVENT_ADAPTER.validate_python(obj)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(x) for x in err["loc"])
        kind = obj.get("type", "event") if isinstance(obj, dict) else "event"
        raise TranscriptError(f"{p}: line {n}: invalid {kind} event ({loc}: {err['msg']})") from None


# --- request fingerprints (what replay checks each recorded request against) ------------------------------------


def _strip_ids(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _strip_ids(v) for k, v in obj.items() if k not in {"id", "tool_use_id"}}
    if isinstance(obj, list):
        return [_strip_ids(v) for v in obj]
    return obj


def _canonical(obj: Any) -> str:
    """Canonical JSON of one request part after redaction, without tool-use ids (they differ between live runs)."""
    return json.dumps(_strip_ids(redact_obj(obj)), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


class Fingerprinter:
    """Request fingerprints: sha256 over the canonical system, tools and each message, in order.

    The loop keeps one per agent so that each message is canonicalized once, not once per later turn.
    """

    def __init__(self) -> None:
        self._head: tuple[str, str] | None = None
        self._parts: list[str] = []

    def __call__(self, system: str, tools: list[ToolSpec], messages: list[Message], stable: int = 0) -> str:
        """`stable`: how many leading messages are unchanged since the previous call (their parts are reused)."""
        if self._head is None or self._head[0] != system:
            self._head = (system, _canonical([t.model_dump(mode="json") for t in tools]))
        del self._parts[stable:]
        for m in messages[len(self._parts):]:
            self._parts.append(_canonical(m.model_dump(mode="json")))
        h = hashlib.sha256()
        for part in (_canonical(system), self._head[1], *self._parts):
            h.update(part.encode())
            h.update(b"\n")
        return "sha256:" + h.hexdigest()


def fingerprint(system: str, tools: list[ToolSpec], messages: list[Message]) -> str:
    """Hash of the canonical request (system, tools, messages) after redaction, without ids or timestamps."""
    return Fingerprinter()(system, tools, messages)
