"""Does a diagnosis cite the right source for each recommendation, and does it read without noise? (issue 30
items 7, 8)

Citations: a fix that names a project's own switch (an environment variable such as TRITON_CACHE_AUTOTUNING, or the
project by name) cites that project's source, not another project's; advice about investigate itself (pass
`--observations`, `--host`) cites no external document. Noise: no gap (what + why) said twice; no Python value left
in the words (`None` where a number belongs, a dict repr `{'name': ...}`).
"""

from __future__ import annotations

import re

from orchestrator.diagnosis import Diagnosis

PROJECTS: dict[str, tuple[re.Pattern[str], tuple[str, ...]]] = {
    # project: (how a fix names it, where its own sources live)
    "triton": (re.compile(r"\bTRITON_[A-Z_]+|\bTriton\b"), ("github.com/triton-lang/triton", "triton-lang.org")),
    "vllm": (re.compile(r"\bVLLM_[A-Z_]+|\bvLLM\b|--enable-|--gpu-memory-utilization|--max-num-"),
             ("github.com/vllm-project/vllm", "docs.vllm.ai")),
    "sglang": (re.compile(r"\bSGLANG_[A-Z_]+|\bSGLang\b"), ("github.com/sgl-project/sglang", "docs.sglang.ai", "docs.sglang.io")),
    "tensorrt-llm": (re.compile(r"\bTLLM_[A-Z_]+|\bTRTLLM_[A-Z_]+|TensorRT-LLM"),
                     ("github.com/NVIDIA/TensorRT-LLM", "nvidia.github.io/TensorRT-LLM")),
    "flashinfer": (re.compile(r"\bFLASHINFER_[A-Z_]+|[Ff]lash[Ii]nfer"), ("github.com/flashinfer-ai/flashinfer",
                                                                         "docs.flashinfer.ai")),
    "nccl": (re.compile(r"\bNCCL_[A-Z_]+|\bNCCL\b"), ("github.com/NVIDIA/nccl", "docs.nvidia.com/deeplearning/nccl")),
    "pytorch": (re.compile(r"\bTORCHINDUCTOR_[A-Z_]+|\bPYTORCH_[A-Z_]+|\bTORCH_[A-Z_]+|\btorch\b|PyTorch"),
                ("github.com/pytorch/pytorch", "pytorch.org")),
}
TOOL_ADVICE = re.compile(r"`investigate\b|--observations\b|--measure\b|--bench\b|--trace\b|`--host\b|--host user@")
URL = re.compile(r"https?://[^\s;\]]+")
CITATION = re.compile(r" \[([^\[\]]*https?://[^\[\]]*)\]\.?$")


def project_of(url: str) -> str | None:
    """The project whose own source a URL is, if it is one of PROJECTS'."""
    for name, (_, homes) in PROJECTS.items():
        if any(h.lower() in url.lower() for h in homes):
            return name
    return None


def named_projects(text: str) -> set[str]:
    return {name for name, (pat, _) in PROJECTS.items() if pat.search(text)}


def citation_problem(text: str, cited: list[str]) -> str | None:
    """Why the sources cited for one recommendation are not the ones that say it, or None."""
    if TOOL_ADVICE.search(text) and cited:
        return f"{text[:90]!r} is advice about investigate itself but cites {cited[0]}"
    named = named_projects(text)
    for url in cited:
        owner = project_of(url)
        if named and owner is not None and owner not in named:
            return f"{text[:90]!r} names {', '.join(sorted(named))} but cites {owner}'s {url}"
    return None


def split_citation(action: str) -> tuple[str, list[str]]:
    """A recommendation's words and the URLs of its trailing [source] note."""
    m = CITATION.search(action)
    if not m:
        return action, []
    return action[: m.start()], URL.findall(m.group(1))


def citation_problems(d: Diagnosis) -> list[str]:
    out = []
    for r in d.recommendations:
        text, cited = split_citation(r.action)
        problem = citation_problem(text, cited)
        if problem:
            out.append(problem)
    return out


PYTHON_VALUE = re.compile(r"\bNone\b(?! of\b)|\{'")


def noise_problems(d: Diagnosis, rendered: str = "") -> list[str]:
    """Gaps said twice, and Python values (None, a dict repr) in the diagnosis's own words or a rendering of it."""
    out = []
    seen: set[tuple[str, str]] = set()
    for g in d.gaps:
        key = (g.what, g.why)
        if key in seen:
            out.append(f"gap said twice: {g.what}: {g.why}")
        seen.add(key)
    words = [d.verdict, d.bound_reasoning, *(c.title for c in d.causes), *(c.explanation for c in d.causes),
             *(n.title for n in d.also_noticed), *(n.note for n in d.also_noticed),
             *(r.action for r in d.recommendations), *(r.why for r in d.recommendations),
             *(g.what for g in d.gaps), *(g.why for g in d.gaps), rendered]
    for w in words:
        m = PYTHON_VALUE.search(w or "")
        if m:
            out.append(f"a Python value in the words: ...{w[max(0, m.start() - 60): m.end() + 40]!r}...")
    return out
