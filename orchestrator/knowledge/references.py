"""Published reference throughput: what others measured on the same GPU, model and precision, with provenance.

The dataset (`references.json` beside this module) is built by `scripts/build_references.py` from the sources
themselves — TensorRT-LLM's performance overview (the Markdown tables of
docs/source/developer-guide/perf-overview.md) and MLPerf Inference result logs (`mlperf_log_summary.txt` with the
system description JSON) — and never typed by hand. This module holds the row model, the two parsers the script
runs, and the loader; matching a user's setup against the rows is analysis (orchestrator/prongs/reference/rules.py).

A parser never guesses: a table with no unit line, a column header it cannot read, a model or GPU name the sources
manifest does not map, or a value that is not a number is reported as a problem and the row is not made.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from importlib import resources
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ReferenceSource(_Strict):
    id: str
    title: str
    url: str
    """The file at a commit (or the page) the rows come from."""
    commit: str | None = None
    date: str | None = None
    method: str = ""
    """How the source measured: load, lengths, what is counted (what a fair comparison must match)."""


class ReferenceRow(_Strict):
    source: str
    """A ReferenceSource id."""
    gpu: str
    """nvidia-smi's name (knowledge/gpus.yaml)."""
    gpu_count: int = Field(ge=1)
    model: str
    """The model id of the manifest (`llama-3.3-70b`)."""
    model_published: str
    """The model as the source names it."""
    precision: str | None = None
    """fp4 / fp8 / bf16 as published; None when the source does not state it."""
    engine: str
    engine_version: str | None = None
    parallel: str | None = None
    """As published: TP2, DEP8 (attention data parallel + expert parallel), TP1,PP2 ..."""
    tp: int | None = None
    pp: int | None = None
    ep: int | None = None
    isl: int | None = None
    osl: int | None = None
    scenario: str
    """max-throughput (TRT-LLM: all requests at once), Offline / Server (MLPerf)."""
    concurrency: int | None = None
    output_tok_s_per_gpu: float
    """Output (generated) tokens per second per GPU; input tokens are not counted."""
    ttft_ms: dict[str, float] = Field(default_factory=dict)
    """Percentile name (p50, p99, mean) -> ms, where published."""
    tpot_ms: dict[str, float] = Field(default_factory=dict)
    limits: dict[str, float] = Field(default_factory=dict)
    """Latency constraints the run was held to (MLPerf Server: ttft_p99_ms, tpot_p99_ms)."""
    note: str = ""


class ReferenceData(_Strict):
    sources: list[ReferenceSource]
    rows: list[ReferenceRow]
    models: dict[str, list[str]]
    """Model id -> the names that mean it."""
    counts: dict[str, int] = Field(default_factory=dict)
    """Rows per source at the last build."""


def norm_model(name: str) -> str:
    """A model name as matching compares it: no org prefix, lower case, punctuation and spaces folded to `-`."""
    name = name.strip().rsplit("/", 1)[-1].lower()
    return re.sub(r"[^a-z0-9.]+", "-", name).strip("-")


_QUANT_SUFFIX = re.compile(r"(-(instruct|chat|hf|it|fp8|fp4|nvfp4|mxfp4|w4a16|w8a8|awq|gptq|int4|int8|bf16|fp16|"
                           r"dynamic|v\d+|quantized|hf))+$")


def model_id(name: str | None, models: dict[str, list[str]]) -> tuple[str | None, list[str]]:
    """The manifest's id for a model name, and the ids it could mean when it is ambiguous. An exact (normalized)
    alias wins; otherwise the name without its org prefix and its instruct/quantization suffixes is compared with
    the aliases stripped the same way; two or more ids left means ambiguous: (None, ids)."""
    if not name:
        return None, []
    key = norm_model(name)
    for mid, aliases in models.items():
        if key == mid or key in {norm_model(a) for a in aliases}:
            return mid, []
    base = _QUANT_SUFFIX.sub("", key)
    hits = sorted({mid for mid, aliases in models.items()
                   if base in {_QUANT_SUFFIX.sub("", norm_model(a)) for a in [mid, *aliases]}})
    if len(hits) == 1:
        return hits[0], []
    if hits:
        return None, hits
    # a name whose words are all words of an alias (`llama-70b`: Llama 2 70B and Llama 3.3 70B) matches only when
    # one model has them all, and only when it names a size; several is ambiguous, never guessed
    words = _words(base)
    if not any(re.fullmatch(r"\d+(\.\d+)?[bm]", w) for w in words):
        return None, []
    loose = sorted({mid for mid, aliases in models.items() for a in [mid, *aliases]
                    if words <= _words(_QUANT_SUFFIX.sub("", norm_model(a)))})
    return (loose[0], []) if len(loose) == 1 else (None, loose)


def _words(key: str) -> set[str]:
    """`llama2-70b-99` -> {llama, 2, 70b, 99}; `llama-v3.3-70b` -> {llama, 3, 3, 70b} (a version's `v` dropped)."""
    key = re.sub(r"(?<![a-z])v(?=\d)", "", key)
    return {w for w in re.split(r"[-.]|(?<=[a-z])(?=\d)(?!\d*[bm]\b)", key) if w}


# --------------------------------------------------------------------------------------------------------------
# TensorRT-LLM's perf-overview.md

_HEADING = re.compile(r"^# (?P<title>.+?)\s*$")
_TABLE_HEAD = re.compile(r"^\|\s*Sequence Length \(ISL/OSL\)\s*\|")
_UNIT = re.compile(r"^unit:\s*`(?P<unit>[^`]+)`")
_COL = re.compile(r"^(?:\*\*(?P<n>\d+) GPUs\*\*|(?P<gpu>[A-Za-z0-9 ]+?))<br/>(?P<par>[A-Z]+\d+(?:,[A-Z]+\d+)*) "
                  r"\((?P<prec>[A-Z]+\d+)\)$")
_PAR = re.compile(r"([A-Z]+)(\d+)")
_OUTPUT_PER_GPU = "output tokens per second per GPU"


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _degrees(par: str) -> dict[str, int]:
    """`DEP4` -> ep 4 (attention data parallel with expert parallel over 4 GPUs), `TP1,PP2` -> tp 1, pp 2."""
    out: dict[str, int] = {}
    for kind, n in _PAR.findall(par):
        key = {"TP": "tp", "PP": "pp", "EP": "ep", "DEP": "ep"}.get(kind)
        if key is None:
            raise ValueError(f"unknown parallelism {kind!r} in {par!r}")
        out[key] = int(n)
    return out


_NUMBER = re.compile(r"\d[\d,]*(\.\d+)?", re.ASCII)


def throughput(cell: str) -> float | None:
    """A published throughput figure: digits with thousands commas and a decimal part (`12,345.6`), above zero; None
    for anything else (float() also takes nan, inf, -5, 1e3 and 1_000, none of which a table publishes)."""
    cell = cell.strip()
    if not _NUMBER.fullmatch(cell):
        return None
    value = float(cell.replace(",", ""))
    return value if value > 0 else None


def parse_trtllm_perf_overview(text: str, source: dict[str, Any], models: dict[str, list[str]]
                               ) -> tuple[list[ReferenceRow], list[str]]:
    """Rows of every model table of the page, and the problems found (each names the line)."""
    rows: list[ReferenceRow] = []
    problems: list[str] = []
    gpus: dict[str, str] = source.get("gpus") or {}
    lines = text.splitlines()
    title: str | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        m = _HEADING.match(line)
        if m:
            title = m.group("title")
            i += 1
            continue
        if not _TABLE_HEAD.match(line):
            i += 1
            continue
        head_no = i + 1
        cols = _cells(line)[1:]
        body: list[tuple[int, list[str]]] = []
        i += 2  # the header and its |---| rule
        while i < len(lines) and lines[i].startswith("|"):
            body.append((i + 1, _cells(lines[i])))
            i += 1
        unit = None
        for j in range(i, min(i + 4, len(lines))):
            u = _UNIT.match(lines[j])
            if u:
                unit = u.group("unit")
                break
        where = f"{source['id']}:{head_no}"
        if unit != _OUTPUT_PER_GPU:
            problems.append(f"{where}: table under {title!r} has {'no unit line' if unit is None else f'unit {unit!r}'}"
                            f" (expected `{_OUTPUT_PER_GPU}`); its rows were not used")
            continue
        model_title, _, gpu_title = (title or "").partition(" - ")
        mid, amb = model_id(model_title, models)
        if mid is None:
            problems.append(f"{where}: model {model_title!r} is "
                            + (f"ambiguous ({', '.join(amb)})" if amb else "not in the manifest's models")
                            + "; its rows were not used")
            continue
        parsed_cols: list[tuple[str, int, str, dict[str, int], str] | None] = []
        for c in cols:
            cm = _COL.match(c)
            if not cm:
                problems.append(f"{where}: column {c!r} under {title!r} is not `GPU<br/>PAR (PREC)`; not used")
                parsed_cols.append(None)
                continue
            published_gpu = cm.group("gpu") or gpu_title.strip()
            gpu = gpus.get(published_gpu)
            if gpu is None:
                problems.append(f"{where}: GPU {published_gpu!r} under {title!r} is not mapped to an nvidia-smi name "
                                "in the sources manifest; column not used")
                parsed_cols.append(None)
                continue
            try:
                deg = _degrees(cm.group("par"))
            except ValueError as e:
                problems.append(f"{where}: {e}; column not used")
                parsed_cols.append(None)
                continue
            count = int(cm.group("n")) if cm.group("n") else (deg.get("tp", 1) * deg.get("pp", 1)
                                                                if "ep" not in deg else deg["ep"] * deg.get("pp", 1))
            parsed_cols.append((gpu, count, cm.group("par"), deg, cm.group("prec").lower()))
        for line_no, cells in body:
            isl_osl = cells[0]
            lm = re.fullmatch(r"(\d+)/(\d+)", isl_osl)
            if not lm:
                problems.append(f"{source['id']}:{line_no}: sequence lengths {isl_osl!r} are not ISL/OSL; row not used")
                continue
            for col, cell in zip(parsed_cols, cells[1:]):
                if col is None or not cell:
                    continue  # not measured for this GPU (an empty cell), or a column already reported
                value = throughput(cell)
                if value is None:
                    problems.append(f"{source['id']}:{line_no}: value {cell[:40]!r} is not a number above zero; not used")
                    continue
                gpu, count, par, deg, prec = col
                rows.append(ReferenceRow(
                    source=source["id"], gpu=gpu, gpu_count=count, model=mid, model_published=model_title,
                    precision=prec, engine=source.get("engine", "tensorrt-llm"), parallel=par,
                    tp=deg.get("tp"), pp=deg.get("pp"), ep=deg.get("ep"), isl=int(lm.group(1)), osl=int(lm.group(2)),
                    scenario="max-throughput", output_tok_s_per_gpu=value))
    return rows, problems


# --------------------------------------------------------------------------------------------------------------
# MLPerf Inference: mlperf_log_summary.txt (LoadGen's summary) + the system description JSON

_KV = re.compile(r"^\s*(?P<key>[^:]+?)\s*:\s*(?P<value>\S.*?)\s*$")


def _summary_fields(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in text.splitlines():
        m = _KV.match(line)
        if m and m.group("key") not in out:
            out[m.group("key")] = m.group("value")
    return out


def parse_mlperf_summary(text: str, system: dict[str, Any], source: dict[str, Any], models: dict[str, list[str]]
                         ) -> tuple[list[ReferenceRow], list[str]]:
    """One row from one LoadGen summary (a VALID performance run), or a problem saying why not."""
    f = _summary_fields(text)
    where = source["id"]
    if f.get("Result is") != "VALID":
        return [], [f"{where}: result is {f.get('Result is')!r}, not VALID; not used"]
    if f.get("Mode") != "PerformanceOnly":
        return [], [f"{where}: mode {f.get('Mode')!r} is not a performance run; not used"]
    scenario = f.get("Scenario")
    tok = f.get("Tokens per second") if scenario == "Offline" else f.get("Completed tokens per second")
    if scenario in ("Offline", "Server") and tok is not None and throughput(tok) is None:
        return [], [f"{where}: tokens per second {tok[:40]!r} is not a number above zero; not used"]
    if scenario not in ("Offline", "Server") or tok is None:
        return [], [f"{where}: no tokens-per-second figure for scenario {scenario!r} (only Offline and Server are "
                    "read); not used"]
    published_gpu = str(system.get("accelerator_model_name", ""))
    gpu = (source.get("gpus") or {}).get(published_gpu)
    if gpu is None:
        return [], [f"{where}: GPU {published_gpu!r} is not mapped to an nvidia-smi name in the sources manifest"]
    count = int(system.get("accelerators_per_node") or 0) * int(system.get("number_of_nodes") or 1)
    if count < 1:
        return [], [f"{where}: the system description gives no accelerator count"]
    mid, amb = model_id(source.get("model"), models)
    if mid is None:
        return [], [f"{where}: model {source.get('model')!r} is "
                    + (f"ambiguous ({', '.join(amb)})" if amb else "not in the manifest's models")]

    def ms(key: str) -> float | None:
        v = f.get(key)
        return round(float(v) / 1e6, 3) if v is not None else None

    ttft = {k: v for k, v in (("mean", ms("Mean First Token latency (ns)")),
                              ("p50", ms("50.00 percentile first token latency (ns)")),
                              ("p99", ms("99.00 percentile first token latency (ns)"))) if v is not None}
    tpot = {k: v for k, v in (("mean", ms("Mean Time to Output Token (ns)")),
                              ("p50", ms("50.00 percentile time to output token (ns)")),
                              ("p99", ms("99.00 percentile time to output token (ns)"))) if v is not None}
    limits: dict[str, float] = {}
    if scenario == "Server":
        for key, name in (("ttft_latency (ns)", "ttft_p99_ms"), ("tpot_latency (ns)", "tpot_p99_ms")):
            v = ms(key)
            if v is not None:
                limits[name] = v
    software = str(system.get("framework") or "")
    return [ReferenceRow(
        source=where, gpu=gpu, gpu_count=count, model=mid, model_published=str(source.get("model")),
        precision=None, engine=source.get("engine", "tensorrt-llm"), engine_version=software or None,
        scenario=scenario, output_tok_s_per_gpu=round(float(tok) / count, 1), ttft_ms=ttft, tpot_ms=tpot,
        limits=limits, note=f"{system.get('system_name', published_gpu)}; {count} GPUs; precision not stated in the "
                            "result log")], []


@lru_cache(maxsize=1)
def load() -> ReferenceData:
    """The built dataset shipped in the package."""
    text = resources.files("orchestrator.knowledge").joinpath("references.json").read_text(encoding="utf-8")
    return ReferenceData.model_validate(json.loads(text))


def source(source_id: str) -> ReferenceSource | None:
    return next((s for s in load().sources if s.id == source_id), None)
