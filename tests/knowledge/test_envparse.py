"""Environment values as each program parses them (orchestrator/knowledge/envparse.py)."""

from __future__ import annotations

import ctypes
import ctypes.util

import pytest

from orchestrator.knowledge.envparse import PROGRAMS, cuda_int, nccl_int, parse_env, sglang_bool, torch_bool, vllm_bool

STRTOL_CASES = ["1", "0", "true", "yes", "TRUE", "", " 1", "\t2", "+1", "-1", "1abc", "1.", "0x10", "0X1f", "0x",
                "0xg", "010", "08", "019", "  -0x10", "9223372036854775807", "9223372036854775808",
                "-9223372036854775809", "99999999999999999999999", "abc1", "- 1", "+-1", "1 1"]


def _libc_strtoll():
    path = ctypes.util.find_library("c")
    if path is None:
        pytest.skip("no C library to compare with")
    libc = ctypes.CDLL(path)
    libc.strtoll.restype = ctypes.c_longlong
    libc.strtoll.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_int]
    return libc.strtoll


@pytest.mark.parametrize("value", STRTOL_CASES)
def test_nccl_int_is_the_c_librarys_strtoll_base_0(value):
    # the real strtoll of this machine's libc is the oracle, not a table we wrote
    assert nccl_int(value) == _libc_strtoll()(value.encode(), None, 0)


def test_nccl_reads_true_and_yes_as_zero_so_they_do_not_disable_anything():
    assert nccl_int("true") == 0 and nccl_int("yes") == 0 and nccl_int("1") == 1
    assert parse_env("nccl", "true") == 0


def test_vllm_bool_is_bool_of_int_and_rejects_words():
    assert vllm_bool("1") is True and vllm_bool(" 0 ") is False and vllm_bool("2") is True
    with pytest.raises(ValueError):
        vllm_bool("true")
    assert parse_env("vllm", "true") is None  # vLLM raises on first read: no value to compare


def test_sglang_bool_accepts_true_and_1_only():
    assert sglang_bool("TRUE") and sglang_bool("1")
    assert not sglang_bool("yes") and not sglang_bool("on") and not sglang_bool("0")


def test_torch_check_env_takes_exactly_0_and_1():
    assert torch_bool("1") is True and torch_bool("0") is False
    assert torch_bool("true") is False and torch_bool(" 1") is False
    assert parse_env("torch", "1") is True and parse_env("torch", "0") is False
    assert parse_env("torch", "true") is None  # ignored with a warning: the flag keeps its default


def test_cuda_int_reads_a_decimal_and_refuses_to_guess_otherwise():
    assert cuda_int("1") == 1 and cuda_int(" 32 ") == 32
    with pytest.raises(ValueError):
        cuda_int("true")
    assert parse_env("cuda", "yes") is None


def test_parse_env_names_the_known_programs_for_an_unknown_one():
    with pytest.raises(KeyError, match="nccl"):
        parse_env("tensorrt", "1")
    assert {"nccl", "vllm", "sglang", "torch", "cuda"} <= set(PROGRAMS)


def test_a_catalog_condition_naming_an_unknown_program_is_a_load_error():
    from orchestrator.knowledge.catalog import CatalogError, load_catalog

    text = """- id: x-entry
  area: interconnect
  title: t
  signals: [{when: [{fact: env.NCCL_P2P_DISABLE, program: ncc, eq: 1}]}]
  claim: c
  sources: [https://example.org/a]
"""
    with pytest.raises(CatalogError, match="unknown program 'ncc'"):
        load_catalog({"failure_modes/x.yaml": text})
