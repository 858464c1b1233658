"""The settings audit as a pure function: a process's argv, known env vars and files against the defaults of its
version (knowledge/settings), the asked symptom, the upgrade question, and the setting_doc tool."""

from __future__ import annotations

import json

import pytest

from orchestrator.prongs.settings_audit.audit import audit_process, upgrade_in
from orchestrator.prongs.settings_audit.rules import asked_symptoms
from orchestrator.knowledge import settings as kb
from orchestrator.prongs.settings_audit.models import ProcessSettings, SettingsFile
from orchestrator.tools.base import ToolFailure
from orchestrator.prongs.settings_audit.tool import SettingDocInput, SettingDocTool


def _rows(p: ProcessSettings) -> dict[str, tuple]:
    return {nd.name: (nd.value, nd.default, nd.origin, nd.effect is not None) for nd in audit_process(p).nondefaults}


def test_flags_at_their_default_are_not_listed_and_others_are_with_the_versions_default():
    p = ProcessSettings(pid=1, engine="vllm", version="0.30.0", argv=[
        "/usr/bin/python3", "/usr/bin/vllm", "serve", "m", "--enforce-eager", "--gpu-memory-utilization", "0.92",
        "--cpu-offload-gb=8", "--no-enable-prefix-caching", "--kv-cache-dtype", "auto", "--made-up-flag", "1"])
    rows = _rows(p)
    assert rows["--enforce-eager"] == (True, False, "flag --enforce-eager", True)
    assert rows["--cpu-offload-gb"][:3] == ("8", 0, "flag --cpu-offload-gb")
    assert rows["--enable-prefix-caching"][0] is False
    assert "--gpu-memory-utilization" not in rows and "--kv-cache-dtype" not in rows  # given at the default
    assert audit_process(p).unknown_flags == ["--made-up-flag"]


def test_env_values_are_read_as_the_program_reads_them():
    p = ProcessSettings(pid=1, engine="vllm", version="0.33.0",
                        env={"VLLM_ENABLE_V1_MULTIPROCESSING": "1", "CUDA_LAUNCH_BLOCKING": "0",
                             "NCCL_P2P_DISABLE": "1", "VLLM_BATCH_INVARIANT": "1"})
    rows = _rows(p)
    # "1" is vLLM's default True, "0" CUDA's default: neither listed; a set NCCL switch differs from "unset"
    assert set(rows) == {"NCCL_P2P_DISABLE", "VLLM_BATCH_INVARIANT"}
    assert rows["VLLM_BATCH_INVARIANT"][3] and rows["NCCL_P2P_DISABLE"][3]


def test_changed_default_is_compared_with_the_detected_version():
    doc = kb.find("VLLM_ALLREDUCE_USE_FLASHINFER", "vllm")[0]
    assert kb.default_at(doc, "0.28.0")[0] is False and kb.default_at(doc, "0.29.0")[0] is True
    old = ProcessSettings(pid=1, engine="vllm", version="0.28.0", env={"VLLM_ALLREDUCE_USE_FLASHINFER": "1"})
    new = ProcessSettings(pid=1, engine="vllm", version="0.29.0", env={"VLLM_ALLREDUCE_USE_FLASHINFER": "1"})
    assert "VLLM_ALLREDUCE_USE_FLASHINFER" in _rows(old) and "VLLM_ALLREDUCE_USE_FLASHINFER" not in _rows(new)


def test_config_file_and_generation_config_are_audited():
    p = ProcessSettings(pid=1, engine="vllm", version="0.32.0", argv=["vllm", "serve", "/m", "--config", "c.yaml"],
                        files={"c.yaml": SettingsFile(text="cpu-offload-gb: 4\nenforce_eager: false\n", role="--config"),
                               "/m/generation_config.json": SettingsFile(
                                   text=json.dumps({"num_beams": 4, "max_new_tokens": None}),
                                   role="generation_config.json")})
    rows = _rows(p)
    assert rows["--cpu-offload-gb"][2] == "config file c.yaml" and "--enforce-eager" not in rows
    # transformers 5.x's GenerationConfig.__init__ pops num_beams with None (its docstring says 1): the source wins
    assert rows["num_beams"][:3] == (4, None, "/m/generation_config.json")


def test_sglang_aliases_and_store_true_flags():
    p = ProcessSettings(pid=1, engine="sglang", version="0.5.22",
                        argv=["python3", "-m", "sglang.launch_server", "--model-path", "m", "--disable-cuda-graph",
                              "--enable-deterministic-inference"])
    rows = _rows(p)
    assert rows["--disable-cuda-graph"][0] is True and rows["--enable-deterministic-inference"][3]


@pytest.mark.parametrize("question,expected", [
    ("why is inter-token latency high?", {"itl"}),
    ("TTFT is 3 s for long prompts", {"ttft"}),
    ("why does vLLM take so long to start up?", {"startup"}),
    ("slower after upgrading vllm from 0.28.0 to 0.29.0", {"regression", "throughput", "itl", "ttft"}),
])
def test_asked_symptoms(question, expected):
    assert expected <= asked_symptoms(question)


def test_upgrade_question_names_project_and_versions():
    assert upgrade_in("it got slower after upgrading vllm from 0.28.0 to 0.29.0", None) == ("vllm", "0.28.0", "0.29.0")
    assert upgrade_in("since we moved from 0.5.20 to 0.5.22", "sglang") == ("sglang", "0.5.20", "0.5.22")
    assert upgrade_in("why is it slow?", "vllm") is None
    assert upgrade_in("vLLM 0.6.3 -> 0.6.4 is slower", None) == ("vllm", "0.6.3", "0.6.4")
    # a figure that fell from one value to another is no version change
    assert upgrade_in("vLLM requests per second dropped from 1.9 to 0.8", "vllm") is None


async def test_setting_doc_looks_up_any_setting_by_name():
    out = await SettingDocTool().run(SettingDocInput(name="--enforce-eager", project="vllm"), None)
    assert "0.26.0: False" in out.text and "vllm/engine/arg_utils.py" in out.text and "effect (slower" in out.text
    out = await SettingDocTool().run(SettingDocInput(name="NCCL_P2P_DISABLE"), None)
    assert "NCCL" in out.text and "github.com/NVIDIA/nccl" in out.text
    with pytest.raises(ToolFailure, match="no setting named"):
        await SettingDocTool().run(SettingDocInput(name="NOT_A_SETTING_AT_ALL"), None)


def _view(question: str, *procs: ProcessSettings, observations=None):
    from orchestrator.analysis.evidence_view import EvidenceView
    from orchestrator.evidence import Evidence
    from orchestrator.prongs.settings_audit.models import SettingsReport

    rep = SettingsReport(host="h", processes=list(procs))
    ev = Evidence(id="ev-1.1", agent_id="a", tool="settings_audit", data=rep.model_dump(mode="json"))
    return EvidenceView([ev], observations, question=question)


def test_only_settings_whose_effect_explains_the_asked_symptom_become_causes():
    from orchestrator.prongs.settings_audit.rules import settings_rule

    p = ProcessSettings(pid=7, engine="vllm", version="0.31.0",
                        env={"CUDA_MODULE_LOADING": "EAGER", "CUDA_LAUNCH_BLOCKING": "1", "CUDA_VISIBLE_DEVICES": "0"})
    itl = {f.id: f for f in settings_rule(_view("why is inter-token latency high?", p))}
    assert "setting-cuda-cuda_launch_blocking" in itl and "setting-cuda-cuda_module_loading" not in itl
    assert itl["setting-cuda-cuda_launch_blocking"].symptoms == ["itl", "ttft", "throughput"]
    table = itl["settings-audit"]
    assert table.informational and {r["setting"] for r in table.data["rows"]} == {
        "CUDA_MODULE_LOADING", "CUDA_LAUNCH_BLOCKING", "CUDA_VISIBLE_DEVICES"}  # no effect: still listed
    start = {f.id for f in settings_rule(_view("why does the server take so long to start up?", p))}
    assert "setting-cuda-cuda_module_loading" in start and "setting-cuda-cuda_launch_blocking" not in start


def test_upgrade_question_ranks_changed_defaults_the_process_does_not_set():
    from orchestrator.prongs.settings_audit.rules import settings_rule

    q = "inter-token latency got worse after upgrading vllm from 0.28.0 to 0.29.0"
    p = ProcessSettings(pid=7, engine="vllm", version="0.29.0", argv=["vllm", "serve", "m"])
    found = {f.id: f for f in settings_rule(_view(q, p))}
    cause = found["changed-default-vllm-vllm_allreduce_use_flashinfer"]
    assert "regression" in cause.symptoms and "from False to True" in cause.claim
    assert found["changed-defaults-vllm"].informational
    pinned = ProcessSettings(pid=7, engine="vllm", version="0.29.0", argv=["vllm", "serve", "m"],
                             env={"VLLM_ALLREDUCE_USE_FLASHINFER": "1"})
    assert "changed-default-vllm-vllm_allreduce_use_flashinfer" not in {f.id for f in settings_rule(_view(q, pinned))}


def test_a_version_outside_the_harvest_says_which_release_the_default_is_from():
    from orchestrator.prongs.settings_audit.rules import settings_rule

    p = ProcessSettings(pid=7, engine="vllm", version="0.11.2", argv=["vllm", "serve", "m", "--enforce-eager"])
    f = {x.id: x for x in settings_rule(_view("why is ITL high?", p))}["setting-vllm-enforce_eager"]
    assert "the default (vLLM 0.26.0, the nearest harvested release to the running 0.11.2) is false" in f.claim
