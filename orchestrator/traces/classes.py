"""Kernel classes (GEMM, attention, MoE, norm/activation, communication, memcpy, memset, other) from the
catalog's name patterns (orchestrator/knowledge/kernel_classes.yaml, each with its sources)."""

from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources

import yaml

from orchestrator.traces.store import clip_name

OTHER = "other"
PRIORITY = ("gemm", "attention", "moe", "norm_act", OTHER, "communication", "memcpy", "memset")
"""Order in which a busy instant covered by several classes is credited: compute first (HTA's temporal breakdown
counts communication and copies that overlap compute as compute)."""
COMPUTE = frozenset({"gemm", "attention", "moe", "norm_act", OTHER})
COMM = "communication"
COPIES = frozenset({"memcpy", "memset"})
LABELS = {"gemm": "GEMM", "attention": "attention", "moe": "MoE", "norm_act": "norm/activation/elementwise",
          OTHER: "other compute", COMM: "communication", "memcpy": "memcpy", "memset": "memset"}


@lru_cache(maxsize=1)
def _patterns() -> tuple[tuple[str, re.Pattern[str]], ...]:
    raw = yaml.safe_load((resources.files("orchestrator.knowledge") / "kernel_classes.yaml").read_text("utf-8"))
    return tuple((row["class"], re.compile(row["pattern"], re.I)) for row in raw)


def sources() -> dict[str, list[str]]:
    raw = yaml.safe_load((resources.files("orchestrator.knowledge") / "kernel_classes.yaml").read_text("utf-8"))
    return {row["class"]: list(row.get("sources") or []) for row in raw}


@lru_cache(maxsize=65536)
def classify(name: str) -> str:
    name = clip_name(name)  # the readers clip already; a caller with its own names gets the same bound
    for cls, pat in _patterns():
        if pat.search(name):
            return cls
    return OTHER
