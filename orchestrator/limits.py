"""Every bound on what the tool parses, in one place: depth, size, count and time.

Whatever a user or a host hands us (observations, bench and baseline files, host config YAML, Kineto traces, nsys
exports, engine logs, transcripts) is read by a parser that takes its bounds from here, so that the cost of any input
is bounded by construction: nesting never grows the stack or the memory past a depth, a value's size and a
document's count of values are capped before or while it is read, and work that can run long (a multi-GB trace) runs
where a deadline or Ctrl-C really ends it. The run-time settings a user may change (timeouts of tools and commands,
byte caps of host reads) live in `orchestrator.settings`; these are the parsers' own, fixed bounds.

Each bound is set well above what a real input of its kind holds (the comment says what that is) and well below what
would make the parser's time or memory a problem.
"""

from __future__ import annotations

# --- YAML and JSON documents (orchestrator/safeload.py) --------------------------------------------------------------

DOC_MAX_DEPTH = 64
"""Nesting of lists and mappings in a YAML or JSON document (observations, hosts and bench files, agent definitions,
host config YAML). Our formats use four; an engine's config YAML a handful."""
DOC_MAX_NODES = 1_000_000
"""Scalars, lists and mappings of one YAML document once every alias is expanded (an alias bomb composes to a few
hundred nodes and expands to billions)."""
INT_MAX_DIGITS = 4300
"""Digits of one integer: Python's own limit on int(str) (sys.get_int_max_str_digits's default)."""
CONFIG_MAX_SETTINGS = 10_000
"""Keys one served process's config file may give the settings audit and the engine configuration (a vLLM --config
or TensorRT-LLM extra options file holds tens)."""

PATH_CONFIG_MAX_BYTES = 4 << 20
"""Characters of one configuration of a layer in front of or around the engine (an nginx file, a HAProxy cfg, an Envoy
bootstrap, a pod list's JSON, a `--path-config` file) read by prongs/path/parsers.py: real ones are kilobytes; a
cluster's whole pod list a few megabytes."""

# --- traces (orchestrator/traces) ------------------------------------------------------------------------------------

TRACE_MAX_DEPTH = 64
"""Nesting inside one trace event or header value (a Kineto event nests three deep: event, args, Input Dims)."""
TRACE_EVENT_MAX_BYTES = 1 << 20
"""Bytes of one trace event, or of one top-level value before `traceEvents` (deviceProperties of 8 GPUs: ~5 kB; the
largest real events, CPU ops with thousands of inputs, ~100 kB)."""
TRACE_HEADER_MAX_BYTES = 16 << 20
"""Bytes before `traceEvents` (the up-front `--trace` check reads only these)."""
TRACE_READ_CHUNK = 256 << 10
"""Bytes read from a trace at a time."""
TRACE_NAME_MAX_CHARS = 1024
"""A kernel, runtime-call or annotation name is cut here before it is kept or classified (C++ template kernel names
reach a few hundred characters)."""
TRACE_MAX_NAMES = 100_000
"""Distinct names kept per rank (a real trace has a few thousand); later new names share one placeholder."""
TRACE_TIME_MAX_US = 1e17
"""|ts| and |dur| of an event in microseconds (epoch microseconds are ~1.8e15; 1e17 is three thousand years). An event
outside, or not finite, is left out and counted."""
TRACE_ANALYSIS_TIMEOUT_S = 3600.0
"""Wall time of one `trace_analysis` call (a multi-GB trace takes minutes to stream)."""
TRACE_ANALYSIS_MEMORY_BYTES = 16 << 30
"""Address space of the process that reads and accounts traces (RLIMIT_AS): a rank's columns take ~70 bytes per GPU
activity, so this holds traces of a hundred million activities."""
TRACE_ANALYSIS_CPU_S = 3600
"""CPU seconds of that process (RLIMIT_CPU): the kernel stops it even if the parent is gone."""

NSYS_MAX_VALUE_BYTES = 1 << 20
"""Bytes of one string or blob SQLite may produce while an nsys export is read (SQLITE_LIMIT_LENGTH)."""
NSYS_STRINGS_MAX_ROWS = 5_000_000
"""Rows of an export's StringIds table (a long multi-process recording holds a few hundred thousand)."""
NSYS_STRINGS_MAX_BYTES = 512 << 20
"""Bytes of all StringIds values together, as read (each value cut at TRACE_NAME_MAX_CHARS)."""
NSYS_PROGRESS_OPS = 100_000
"""SQLite virtual-machine instructions between two checks of the reader's deadline (the progress handler)."""
NSYS_CHECK_TIMEOUT_S = 10.0
"""Wall time of the up-front check of an nsys export (it reads the schema and a row count)."""

# --- an engine's /metrics (prongs/serving_engine/metrics.py) ----------------------------------------------------------

METRIC_MAX_ABS = 1e18
"""|value| of one Prometheus sample an engine exposes: a counter of tokens served reaches ~1e13 in a year of a busy
engine, bytes ~1e15. A sample beyond (or not finite, or a negative count) is left out as no measurement."""

# --- logs ------------------------------------------------------------------------------------------------------------

LOG_LINE_MAX_CHARS = 8000
"""Characters of one log line matched against a pattern; the rest is cut (the host-side log scan cuts at the same
length). Bounds the work of every pattern on one line."""
BASELINE_LOG_MAX_BYTES = 256 << 20
"""Size of a `--baseline-log` (larger than any engine log a user keeps; it is read line by line)."""
BASELINE_LOG_MAX_LINES = 200
"""Version and settings lines kept from a `--baseline-log`."""

# --- transcripts -----------------------------------------------------------------------------------------------------

TRANSCRIPT_MAX_LINE_BYTES = 64 << 20
"""A longer transcript line is skipped by the streaming reader (named in a warning) rather than held in memory."""
TRANSCRIPT_MAX_DEPTH = 190
"""Nesting of one transcript event (our tool data nests a dozen deep). pydantic's JSON parser refuses a line nested
~200 deep, and its serializer ~255 (a deeper event could be read with json.loads but never printed: `report` failed
with "Circular reference detected"): the reader refuses a deeper line as damaged or hostile."""
RECORDED_MAX_DEPTH = 32
"""Nesting of a recorded run's inputs, agent definitions and agent results, rebuilt as models by replay and resume
(observations use five)."""
