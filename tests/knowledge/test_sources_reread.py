"""Every catalog entry was checked against its cited sources: no `verified.what` says a source was "not re-read".

The allowlist below names the entries still waiting for that audit (issue 32, item 1); it only shrinks. An entry
removed from it must have been re-read; an entry re-read must leave it (the second test keeps the list honest).
"""

from __future__ import annotations

import re

from orchestrator.knowledge.catalog import catalog

NOT_YET_REREAD: frozenset[str] = frozenset({
    "jit-cache-dir-ephemeral",
    "tunableop-retuned-every-start",
    "vllm-cutlass-tma-ws-init",
    "vllm-b12x-sm120",
    "arch-smem-per-block",
    "lowp-no-native-mma",
    "no-gpu-on-host",
    "kernels-missing-arch",
    "autotune-not-persisted",
    "autotune-metadata-mismatch",
    "tuned-config-stale",
    "moe-config-missing",
    "moe-decode-roofline",
    "power-stall",
    "power-limited",
    "gemm-far-below-roofline",
    "gemm-memory-bound-near-roofline",
    "narrow-dtype-vs-bf16-at-decode",
    "gemm-low-peak-efficiency",
    "comm-vs-gemm",
    "pcie-tp-allreduce",
    "unclassified-log-lines",
    "decode-far-below-every-roof",
    "tp-scaling-rules-out-allreduce",
    "torch-arch-missing",
    "tp-scaling-implicates-allreduce",
})

_NOT_REREAD = re.compile(r"not\s+re-read", re.IGNORECASE)


def _unread() -> set[str]:
    return {e.id for e in catalog() if e.verified is not None and _NOT_REREAD.search(e.verified.what)}


def test_no_entry_says_its_sources_were_not_re_read():
    unread = _unread() - NOT_YET_REREAD
    assert not unread, f"entries whose `verified.what` says a source was not re-read: {sorted(unread)}"


def test_the_allowlist_names_only_entries_still_unread():
    stale = NOT_YET_REREAD - _unread()
    assert not stale, f"re-read (or removed) entries still in NOT_YET_REREAD; drop them: {sorted(stale)}"
