"""Agent prompts cite the knowledge tables instead of restating them: a row of xids.yaml (an Xid code with its
meaning) or of gpus.yaml (a GPU's TFLOPS or bandwidth figure), or an nvidia-smi clocks-event reason the node analysis
judges, restated in a prompt is a second copy that goes stale when the table is corrected. The prompts point to the
tool that returns the row (`node_health`, `gpu_specs`)."""

from __future__ import annotations

import re

import pytest

from orchestrator import knowledge
from orchestrator.agentdefs import builtin_dir, load_agents

WINDOW = 160
"""An Xid code this close after the word "Xid" is that code being explained."""

CLOCKS_EVENT_REASONS = ("sw power cap", "hw slowdown", "hw thermal slowdown", "hw power brake", "sw thermal slowdown")
"""nvidia-smi's clocks-event reasons (`nvidia-smi -q -d PERFORMANCE`), which the node catalog entries judge."""


def restated(text: str) -> list[str]:
    out = []
    codes = {int(x["code"]) for x in knowledge.xid_rows()}
    for m in re.finditer(r"\bxids?\b", text, re.IGNORECASE):
        near = text[m.end():m.end() + WINDOW]
        out += [f"Xid {n}" for n in re.findall(r"\b(\d{1,3})\b", near) if int(n) in codes]
    low = " ".join(text.lower().split())
    out += [f"Xid {x['code']} name {x['name']!r}" for x in knowledge.xid_rows()
            if len(x["name"]) >= 12 and x["name"].lower() in low]
    for g in knowledge.gpus():
        figures = [v for v in g.tflops.values() if v] + ([g.mem_bw_gbs] if g.mem_bw_gbs else [])
        for v in figures:
            num = f"{v:,.0f}".replace(",", ",?")
            for u in re.finditer(rf"\b{num}(?:\.\d+)?\s*(TFLOPS|TOPS|GB/s|TB/s)", text):
                out.append(f"{g.name}: {u.group(0)}")
    out += [f"clocks-event reason {r!r}" for r in CLOCKS_EVENT_REASONS if r in low]
    return out


@pytest.mark.parametrize("name", sorted(load_agents()))
def test_no_agent_prompt_restates_a_knowledge_table(name):
    prompt = load_agents()[name].prompt
    assert not restated(prompt), f"agents/{name}.md restates: {restated(prompt)}"


def test_the_check_names_a_planted_row():
    xid = next(x for x in knowledge.xid_rows() if int(x["code"]) == 79)
    assert restated(f"- The kernel log: each Xid code means something (79 {xid['name']}, 48/94/95 ECC).")
    h100 = knowledge.gpu_spec("NVIDIA H100 80GB HBM3")
    assert h100 is not None and h100.tflops.get("bf16")
    assert restated(f"An H100 gives {h100.tflops['bf16']:,.0f} TFLOPS of BF16.")
    assert restated('"SW Power Cap" at the default limit is normal')
    assert not restated("Report each Xid with the meaning and action `node_health` returns from the Xid table.")


def test_the_prompts_that_judge_these_rows_point_to_their_tool():
    node = (builtin_dir("agents") / "node-health.md").read_text()
    specs = (builtin_dir("agents") / "tensor-core-specs.md").read_text()
    assert re.search(r"`node_health` gives every Xid .*meaning", " ".join(node.split()))
    assert "`gpu_specs`" in specs
