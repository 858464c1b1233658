"""How each program reads its environment variables' values (minimal version, issue 27; the `knowledge` branch owns
the full module with the same API).

- NCCL: `ncclGetEnv` + `strtoll(str, NULL, 0)` (src/misc/param.cc): leading whitespace, sign, 0x/0 prefixes, digits
  up to the first non-digit; no digits is 0.
- vLLM: `bool(int(os.getenv(NAME, "0")))` (vllm/envs.py), or `.lower() in ("1", "true")` for some.
- PyTorch (c10/util/env.cpp `check_env`): "1"/"true"/"y"/"yes"/"on" true, "0"/"false"/"n"/"no"/"off" false.
- CUDA: integer switches read like atoi.
"""

from __future__ import annotations

import re
from typing import Any, Callable

_INT = re.compile(r"^\s*([+-]?)(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)")


def nccl_int(value: str) -> int:
    """strtoll(value, NULL, 0): the leading integer, 0 when there is none."""
    m = _INT.match(value or "")
    if not m:
        return 0
    sign, digits = m.groups()
    n = int(digits, 16) if digits[:2].lower() == "0x" else int(digits, 8) if digits.startswith("0") and len(digits) > 1 \
        else int(digits)
    return -n if sign == "-" else n


def vllm_bool(value: str) -> bool:
    """vLLM's boolean switches: "1"/"true" (any case) true; other integers by their truth; anything else false."""
    v = (value or "").strip().lower()
    if v in ("true", "yes", "on"):
        return True
    try:
        return bool(int(v))
    except ValueError:
        return False


def torch_bool(value: str) -> bool | None:
    """c10's check_env: True/False for the recognised spellings, None for anything else (PyTorch warns and ignores)."""
    v = (value or "").strip().lower()
    if v in ("1", "true", "y", "yes", "on"):
        return True
    if v in ("0", "false", "n", "no", "off"):
        return False
    return None


def cuda_int(value: str) -> int:
    """CUDA's integer switches (atoi-like)."""
    m = re.match(r"^\s*([+-]?\d+)", value or "")
    return int(m.group(1)) if m else 0


PROGRAMS: dict[str, Callable[[str], Any]] = {"nccl": nccl_int, "vllm": vllm_bool, "torch": torch_bool,
                                              "cuda": cuda_int}
"""program -> how it reads a switch's value."""


def parse_env(program: str, value: str) -> Any:
    """The value as `program` reads it (the string itself for a program not listed)."""
    fn = PROGRAMS.get(program)
    return fn(value) if fn is not None else value
