"""Every engine default the tool states comes from the harvested settings (knowledge/settings), at the installed
version, where the data holds it; a literal default in the probe beside data that holds it fails here.

Audit #9 (gpu_memory_utilization 0.92, written as 0.9) and #10 (vLLM's batch tiers and CUDA-graph cap by
release: 0.28.0 added a >= 160 GiB tier, 0.33.0 keeps GB10 on the small tier, the cap is 1024 on CC 10.x).
"""

from __future__ import annotations

import ast
import inspect

import pytest

from orchestrator.knowledge import settings as kb
from orchestrator.prongs.serving_engine import cmdline as ec

B200 = ("NVIDIA B200", 183 * 1024.0)
H100 = ("NVIDIA H100 80GB HBM3", 80 * 1024.0)
A100 = ("NVIDIA A100-SXM4-80GB", 80 * 1024.0)


def _vllm(gpu: tuple[str, float], version: str | None, argv: str = "vllm serve m") -> dict:
    s, _ = ec.effective_config("vllm", argv.split(), gpu_name=gpu[0], gpu_mem_mib=gpu[1], version=version)
    return {k: v.value for k, v in s.items()} | {"_src": {k: v.source for k, v in s.items()}}


def test_gpu_memory_utilization_default_is_the_harvested_one():
    v = _vllm(H100, "0.33.0")
    assert v["gpu_memory_utilization"] == 0.92 and "vllm/engine/arg_utils.py" in v["_src"]["gpu_memory_utilization"]


@pytest.mark.parametrize("version, tokens, seqs, cap", [
    ("0.26.0", 8192, 1024, 512),    # one large tier, cap 512 everywhere
    ("0.27.1", 8192, 1024, 512),
    ("0.28.0", 16384, 1024, 1024),  # >= 160 GiB tier; cap 1024 on CC 10.x
    ("0.33.0", 16384, 1024, 1024),
])
def test_vllm_b200_defaults_follow_the_release(version, tokens, seqs, cap):
    v = _vllm(B200, version)
    assert (v["max_num_batched_tokens"], v["max_num_seqs"], v["cuda_graph_max_bs"]) == (tokens, seqs, cap)
    assert f"vLLM {version}" in v["_src"]["max_num_batched_tokens"]


def test_vllm_h100_and_a100_tiers():
    assert (_vllm(H100, "0.33.0")["max_num_batched_tokens"], _vllm(H100, "0.33.0")["cuda_graph_max_bs"]) == (8192, 512)
    a = _vllm(A100, "0.33.0")
    assert (a["max_num_batched_tokens"], a["max_num_seqs"], a["cuda_graph_max_bs"]) == (2048, 256, 512)


def test_a_gb10_stays_on_the_small_tier_from_0_33():
    bd = kb.computed_defaults("vllm", "0.33.0")[0]["batch_defaults"]["tiers"]
    assert bd[1]["when"].get("not_ccs") == ["12.1"]
    assert "not_ccs" not in kb.computed_defaults("vllm", "0.32.0")[0]["batch_defaults"]["tiers"][1]["when"]
    s: dict = {}
    ec._vllm_batch_defaults(s, "NVIDIA GB10", 120 * 1024.0, "0.33.0")
    assert s == {} or s["max_num_seqs"].value == 256  # CC unknown: no claim; CC 12.1: the small tier


def test_the_cudagraph_cap_is_capped_by_the_batched_tokens():
    v = _vllm(B200, "0.33.0", "vllm serve m --max-num-batched-tokens 256")
    assert v["cuda_graph_max_bs"] == 256 and "min(max_num_batched_tokens" in v["_src"]["cuda_graph_max_bs"]


def test_sglang_defaults_are_harvested():
    s, _ = ec.effective_config("sglang", "python3 -m sglang.launch_server --model-path m".split(), version="0.5.23")
    assert s["max_num_batched_tokens"].value == 16384 and "schedule.py" in s["max_num_batched_tokens"].source
    assert s["cuda_graphs"].value is True and "exec_.py" in s["cuda_graphs"].source
    assert s["scheduler_policy"].value == "fcfs" and "sglang" in s["scheduler_policy"].source


# --- no literal default beside data that holds it ------------------------------------------------------------------------

def _literal_defaults(src: str) -> list[tuple[str, object]]:
    """(setting, literal) of every `s.setdefault("x", _default(<literal>, ...))` in a defaults function's source."""
    tree = ast.parse(src)
    out = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "setdefault" and \
                len(n.args) == 2 and isinstance(n.args[0], ast.Constant) and isinstance(n.args[1], ast.Call) and \
                isinstance(n.args[1].func, ast.Name) and n.args[1].func.id == "_default" and n.args[1].args and \
                isinstance(n.args[1].args[0], ast.Constant):
            out.append((n.args[0].value, n.args[1].args[0].value))
    return out


def _data_has(project: str, setting: str) -> bool:
    field = ec.HARVESTED.get(project, {}).get(setting) or ec.HARVESTED.get(project + "_not", {}).get(setting)
    if field is None:
        return False
    docs = [d for d in kb.find(field, project) if d.kind in ("cli", "config")]
    return bool(docs) and docs[0].latest_default is not None and not kb.is_computed(docs[0].latest_default)


@pytest.mark.parametrize("project, fn", [("vllm", ec._vllm_defaults), ("sglang", ec._sglang_defaults),
                                         ("tgi", ec._tgi_defaults), ("tensorrt_llm", ec._trtllm_defaults)])
def test_no_literal_default_where_the_harvested_settings_hold_one(project, fn):
    bad = [(k, v) for k, v in _literal_defaults(inspect.getsource(fn)) if _data_has(project, k)]
    assert not bad, f"{fn.__name__} writes defaults the harvested settings hold for {project}: {bad}"


def test_every_mapped_field_exists_in_the_harvest():
    missing = [(p.removesuffix("_not"), f) for p, m in ec.HARVESTED.items() for f in m.values()
               if not [d for d in kb.find(f, p.removesuffix("_not")) if d.kind in ("cli", "config")]]
    assert not missing


def test_a_planted_literal_is_caught():
    src = "def f(s):\n    s.setdefault('gpu_memory_utilization', _default(0.9, 'vllm/config/cache.py'))\n"
    bad = [(k, v) for k, v in _literal_defaults(src) if _data_has("vllm", k)]
    assert bad == [("gpu_memory_utilization", 0.9)]


def test_tensorrt_llm_defaults_come_from_its_llm_args():
    s, _ = ec.effective_config("trtllm", "trtllm-serve m".split())
    assert s["max_num_seqs"].value == 2048 and "llm_args.py" in s["max_num_seqs"].source
    assert s["gpu_memory_utilization"].value == 0.9 and s["prefix_caching"].value is True
    assert s["attention_backend"].value == "TRTLLM" and s["chunked_prefill"].value is False
