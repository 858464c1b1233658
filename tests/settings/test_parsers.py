"""Each setting's value is read by the parser of the program that reads it (knowledge/envparse.py through
knowledge/settings `read`), and a value the program refuses is reported as such, never as the setting's effect.

Each case is the program's own code path (cited in envparse.py): audit items #1, #5, #6, #7 of
../shared/KNOWLEDGE-AUDIT.md and the parsers of TGI (clap), Ollama (Go) and llama.cpp behind them.
"""

from __future__ import annotations

import pytest

from orchestrator.knowledge import envparse as ep
from orchestrator.knowledge import settings as kb


def _doc(name: str, project: str, kind: str = "env") -> kb.SettingDoc:
    docs = [d for d in kb.find(name, project) if d.kind == kind]
    assert docs, f"{project}:{name} is not in the harvested settings"
    return docs[0]


def _effect(name: str, project: str, raw: str, version: str | None = None) -> kb.Effect | None:
    d = _doc(name, project)
    default, _ = kb.default_at(d, version)
    return kb.effect_applies(d, raw, default, version)


# --- vLLM: each variable by its own lambda in envs.py (audit #1) ------------------------------------------------------

def test_vllm_refuses_false_for_a_bool_int_variable_and_says_it_does_not_start():
    d = _doc("VLLM_ENABLE_V1_MULTIPROCESSING", "vllm")
    for raw in ("false", "no", "off", "true"):
        r = kb.read(d, raw)
        assert r.outcome == "refuses_to_start" and r.value is None, raw
        eff = _effect("VLLM_ENABLE_V1_MULTIPROCESSING", "vllm", raw)
        assert eff is not None and "refuses this value" in eff.effect and "bool(int(value))" in eff.effect
        assert set(eff.symptoms) == {"errors", "startup"} and eff.bound is None
        assert not kb.same(d, raw, True)


def test_vllm_multiprocessing_off_is_the_offline_engine_only():
    eff = _effect("VLLM_ENABLE_V1_MULTIPROCESSING", "vllm", "0")
    assert eff is not None and "offline" in eff.effect and "vllm serve" in eff.effect
    assert eff.symptoms == [] and eff.bound is None  # a server is not affected: never a ranked cause


@pytest.mark.parametrize("name, raw, value", [
    ("VLLM_USE_STANDALONE_COMPILE", "true", False),  # `== "1"`: anything but "1" is False, nothing raises
    ("VLLM_USE_STANDALONE_COMPILE", "1", True),
    ("VLLM_BATCH_INVARIANT", " 1 ", True),  # int() strips whitespace
    ("VLLM_TRACE_FUNCTION", "2", 2),
])
def test_vllm_variables_follow_their_own_lambda(name, raw, value):
    r = kb.read(_doc(name, "vllm"), raw)
    assert (r.outcome, r.value) == ("ok", value)


def test_vllm_env_with_choices_refuses_an_unknown_choice():
    r = ep.vllm_env("fast", None, {"kind": "choices", "choices": ["fork", "spawn"], "case_sensitive": True})
    assert r.outcome == "refuses_to_start" and "Invalid value 'fast'" in r.note


def test_the_harvest_records_each_vllm_variable_parser_per_release():
    d = _doc("VLLM_ENABLE_V1_MULTIPROCESSING", "vllm")
    assert d.parsers and d.parsers[-1][1] == {"kind": "int_bool"}


# --- SGLang: EnvBool / EnvInt (audit #5) --------------------------------------------------------------------------------

@pytest.mark.parametrize("raw", ["true", "True", "TRUE", "yes", "y", "1"])
def test_sglang_envbool_takes_every_true_word(raw):
    eff = _effect("SGLANG_ENABLE_DETERMINISTIC_INFERENCE", "sglang", raw)
    assert eff is not None and "deterministic" in eff.effect


@pytest.mark.parametrize("raw", ["false", "no", "n", "0"])
def test_sglang_envbool_false_words_are_the_default(raw):
    d = _doc("SGLANG_ENABLE_DETERMINISTIC_INFERENCE", "sglang")
    assert kb.same(d, raw, False) and _effect("SGLANG_ENABLE_DETERMINISTIC_INFERENCE", "sglang", raw) is None


def test_sglang_keeps_the_default_for_a_word_envbool_does_not_know():
    d = _doc("SGLANG_ENABLE_DETERMINISTIC_INFERENCE", "sglang")
    r = kb.read(d, "on", None, False)
    assert (r.outcome, r.value) == ("default", False) and "Invalid value" in r.note
    eff = _effect("SGLANG_ENABLE_DETERMINISTIC_INFERENCE", "sglang", "on")
    assert eff is not None and "does not take this value" in eff.effect and eff.symptoms == []
    assert not kb.same(d, "on", False)  # listed, with what SGLang did with it


# --- PyTorch: c10d getCvarBool, c10 check_env (audit #6) ----------------------------------------------------------------

@pytest.mark.parametrize("raw", ["1", "true", "TRUE", "yes", "y", "t"])
def test_torch_nccl_flags_are_read_by_getcvarbool(raw):
    for name in ("TORCH_NCCL_BLOCKING_WAIT", "TORCH_NCCL_DESYNC_DEBUG", "TORCH_NCCL_ENABLE_TIMING"):
        assert _effect(name, "pytorch", raw) is not None, (name, raw)


def test_getcvarbool_raises_on_other_words():
    r = kb.read(_doc("TORCH_NCCL_BLOCKING_WAIT", "pytorch"), "on")
    assert r.outcome == "raises" and "Invalid value for environment variable" in r.note
    assert ep.torch_cvar_int("12abc").value == 12 and ep.torch_cvar_int("x").outcome == "raises"


def test_check_env_takes_exactly_0_and_1():
    assert ep.torch_check_env("1").value is True and ep.torch_check_env("true", False).outcome == "default"


@pytest.mark.parametrize("raw, version, applies", [
    ("1", "2.14.1", True), ("0", "2.14.1", False), ("true", "2.14.1", False),
    ("1", "2.5.1", True), ("0", "2.5.1", True), ("false", "2.6.0", True), ("0", "2.7.0", False),
])
def test_no_cuda_memory_caching_is_read_as_the_installed_allocator_reads_it(raw, version, applies):
    """c10/cuda/CUDACachingAllocator.cpp forceUncachedAllocator: before 2.7 the variable set at all (0 included)
    disables the caching allocator (pytorch#145661 on 2.5.1); from 2.7 (pytorch#145905) only check_env's true does."""
    e = _effect("PYTORCH_NO_CUDA_MEMORY_CACHING", "pytorch", raw, version)
    assert (e is not None and e.effect.startswith("disables")) is applies
    if raw == "true" and version == "2.14.1":  # check_env ignores it with a warning: reported as not taken
        assert e is not None and "does not take this value" in e.effect


# --- NCCL: ncclLoadParam, ncclGetLevel's strtol (audit #7) ---------------------------------------------------------------

@pytest.mark.parametrize("raw", ["1", "2", "0x1", "-1", "1abc"])
def test_nccl_ib_disable_is_any_nonzero(raw):
    assert _effect("NCCL_IB_DISABLE", "nccl", raw) is not None


@pytest.mark.parametrize("raw", ["0", "true", "yes", ""])
def test_nccl_ib_disable_zero_words(raw):
    assert _effect("NCCL_IB_DISABLE", "nccl", raw) is None or _effect("NCCL_IB_DISABLE", "nccl", raw).symptoms == []


def test_nccl_keeps_the_default_on_overflow():
    r = ep.nccl_param("99999999999999999999", 0)
    assert (r.outcome, r.value) == ("default", 0) and "Invalid value" in r.note
    assert ep.strtoll("99999999999999999999") == (2**63 - 1, True)
    assert _effect("NCCL_IB_DISABLE", "nccl", "99999999999999999999").symptoms == []


@pytest.mark.parametrize("raw, disabled", [("1", True), ("0x1", True), ("01", True), ("true", False), ("2", False),
                                           ("4294967297", True)])
def test_nccl_p2p_disable_is_int_strtol_equal_to_1(raw, disabled):
    assert (_effect("NCCL_P2P_DISABLE", "nccl", raw) is not None) is disabled
    assert (ep.parse_env("nccl_int32", raw) == 1) is disabled


# --- TGI (clap), Ollama (Go), llama.cpp, CUDA -------------------------------------------------------------------------------

def test_tgi_bool_env_takes_only_true_or_false():
    d = _doc("DISABLE_CUSTOM_KERNELS", "tgi")
    assert kb.read(d, "true").value is True
    r = kb.read(d, "1")
    assert r.outcome == "refuses_to_start" and "invalid value '1'" in r.note


def test_tgi_cuda_graphs_list():
    d = _doc("CUDA_GRAPHS", "tgi")
    assert kb.read(d, "1,2,4").value == [1, 2, 4]
    assert kb.read(d, "1, 2").outcome == "refuses_to_start"  # " 2" is not a usize
    assert _effect("CUDA_GRAPHS", "tgi", "0") is not None


def test_ollama_bool_and_uint():
    assert ep.ollama_env("yes", False, "bool").value is True  # ParseBool refuses it; BoolWithDefault returns true
    assert ep.ollama_env(" 'false' ", True, "bool").value is False
    r = ep.ollama_env("four", 1, "uint")
    assert (r.outcome, r.value) == ("default", 1)


def test_llamacpp_env_handlers():
    assert ep.llamacpp_env("yes", False, "void").outcome == "default"
    assert ep.llamacpp_env("on", False, "void").value is True
    assert ep.llamacpp_env("x", 4, "int").outcome == "refuses_to_start"
    assert ep.llamacpp_env("maybe", None, "bool").outcome == "refuses_to_start"


def test_cuda_documents_integers_only():
    d = _doc("CUDA_LAUNCH_BLOCKING", "cuda")
    assert kb.read(d, "1").value == 1 and kb.read(d, "yes").outcome == "undocumented"
    assert _effect("CUDA_LAUNCH_BLOCKING", "cuda", "yes").symptoms == []


def test_argparse_refuses_a_non_number_for_an_int_flag():
    d = _doc("max_num_seqs", "vllm", "cli")
    assert kb.read(d, "256").value == 256 and kb.read(d, "lots").outcome == "refuses_to_start"
