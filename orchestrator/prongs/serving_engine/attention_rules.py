"""MLA attention's backend against the context it serves: the Triton MLA kernels at long context on a GPU where a
faster MLA backend runs (catalog entry mla-triton-long-context in knowledge/failure_modes/rules.yaml, its words)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from orchestrator.analysis.templates import entry_words
from orchestrator.findings import Finding
from orchestrator.knowledge import mla_by_name

if TYPE_CHECKING:
    from orchestrator.analysis.evidence_view import EvidenceView

LONG_CONTEXT = 8192
"""Prompt tokens at or above which a context is long for MLA decode attention (the tool's line; SGLang's measurement
that made FlashInfer MLA the long-context backend used 32k-token prompts)."""

_TRITON_MLA = re.compile(r"triton[ _]?mla", re.IGNORECASE)
_SGL_MLA = re.compile(r"MLA optimization is turned on\. Use (\w+) backend")
_POTENTIAL = re.compile(r"out of potential backends: \[([^\]]*)\]")
_FASTER_VLLM = ("FLASHINFER_MLA", "CUTLASS_MLA", "FLASHMLA", "FLASH_ATTN_MLA", "TRTLLM_MLA")
_QUESTION_CONTEXT = re.compile(r"\b(\d{1,4})\s*[kK]\b[- ]?(?:tokens?|context|prompts?|inputs?|ctx)?|"
                               r"\b(\d{2,3}),?(\d{3})\s*(?:tokens?|token prompts?)")
_LONG_WORDS = re.compile(r"\blong[- ](?:context|prompts?|inputs?|documents?|sequences?)\b", re.IGNORECASE)


def _faster(engine: str, cc: str | None, listed: list[str]) -> tuple[list[str], str]:
    """(the faster MLA backends, how that is known): those the engine's own log listed, else those the engine runs on
    this compute capability."""
    if listed:
        return [b for b in listed if b in _FASTER_VLLM or b.lower() in ("flashinfer", "fa3", "flashmla", "cutlass_mla",
                                                                        "trtllm_mla")], "listed"
    try:
        major = int(str(cc).split(".")[0])
    except ValueError:
        return [], ""
    if engine == "sglang":
        names = (["flashinfer"] if major >= 8 else []) + (["fa3", "flashmla"] if major == 9 else []) + \
            (["flashmla", "cutlass_mla", "trtllm_mla"] if major == 10 else [])
    else:
        names = (["FLASHMLA", "FLASH_ATTN_MLA"] if major == 9 else []) + \
            (["CUTLASS_MLA", "FLASHINFER_MLA", "FLASHMLA"] if major == 10 else [])
    return names, "by_gpu"


def _context(v: "EvidenceView") -> tuple[int | None, str]:
    """The prompts' length the evidence gives (tokens, where from), or (None, '') when it gives none."""
    oe = v.observations_evidence
    if oe is not None:
        lens = [r.input_len for r in oe[1].runs if r.input_len] + [int(b.input_len) for b in oe[1].bench if b.input_len]
        if lens:
            return max(lens), "the observations"
    for m in _QUESTION_CONTEXT.finditer(v.question or ""):
        n = int(m.group(1)) * 1024 if m.group(1) else int(m.group(2) + m.group(3))
        if n >= 1024:
            return n, "the question"
    if _LONG_WORDS.search(v.question or ""):
        return LONG_CONTEXT, "the question says long context"
    return None, ""


def mla_triton_long_context(v: "EvidenceView") -> list[Finding]:
    """The engine's MLA attention runs on the Triton backend (vLLM's selector line, SGLang's 'MLA optimization ...
    Use triton backend.') on a GPU where a faster MLA backend runs: ranked at long context, said apart (with the
    condition) when the context is not known, nothing for short prompts."""
    g = v.gpu
    for ev, rep in v.probes("engine_config"):
        eng = rep.primary
        if eng is None:
            continue
        lines = [ln for ln in rep.lines if _TRITON_MLA.search(ln.line) or _SGL_MLA.search(ln.line)]
        sgl = [m.group(1) for ln in rep.lines for m in [_SGL_MLA.search(ln.line)] if m]
        if not sgl and eng.name == "sglang":
            # SGLang 0.5.x no longer prints 'MLA optimization is turned on': its attention backend is the one given
            # (--attention-backend) or resolved into the server_args line, and the model says whether it is MLA
            ab = eng.settings.get("attention_backend")
            if ab is not None and not ab.default and str(ab.value).lower() == "triton" and mla_by_name(eng.model):
                sgl = ["triton"]
        selected = (eng.log.selected_backend if eng.log else None) or ""
        if not (_TRITON_MLA.search(selected) or (sgl and sgl[-1].lower() == "triton")):
            continue
        listed = [x.strip(" '\"") for ln in lines for m in [_POTENTIAL.search(ln.line)] if m
                  for x in m.group(1).split(",") if x.strip(" '\"")]
        engine = "sglang" if sgl else eng.name
        names, how = _faster(engine, g.cc if g else None, listed)
        if not names:
            continue  # no faster MLA backend runs here: Triton is what there is
        tokens, where = _context(v)
        if tokens is not None and tokens < LONG_CONTEXT:
            continue  # short prompts: Triton's MLA does well there
        last = lines[-1] if lines else None
        faster = ", ".join(names[:3])
        ab = eng.settings.get("attention_backend")
        where_given = ab.source if ab is not None and not ab.default else engine
        values = {"engine": eng.label, "where": f"{last.path.rsplit('/', 1)[-1]}:{last.line_no}" if last else where_given,
                  "gpu": g.name if g else None, "cc": g.cc if g else None, "names": faster, "faster": faster,
                  "s": "" if len(names) > 1 else "s", "tokens": f"{tokens:,}" if tokens else None, "how": where,
                  "vllm_backend": next((n for n in names if n.isupper()), None),
                  "sglang_backend": next((n for n in names if n.islower()), None)}
        words = entry_words("mla-triton-long-context", values)["words"]
        values["context"] = words["context_known"] if tokens else words["context_unknown"]
        values["known"] = words[how]
        w = entry_words("mla-triton-long-context", values, flags={engine})
        return [Finding(
            id="mla-triton-long-context", category="engine", confidence=w["confidence"],
            evidence=[ev.id] + (g.evidence if g else []), title=w["title"], claim=w["claim"] + " " + w["explanation"],
            recommendations=w["recommendations"], entry=w["entry"], symptoms=["throughput", "itl", "ttft"],
            severity=w["severity"], unmet="" if tokens else w["words"]["unmet"],
            matched=[last.line.strip()[:200]] if last else [])]
    return []
