"""Environment values read the way each program reads them: one parser per program.

`NCCL_P2P_DISABLE=true` does not disable anything: NCCL reads its variables with `strtol`/`strtoll` (base 0), so
`true` is 0. vLLM's boolean variables mostly go through `bool(int(...))`, which rejects `true` outright; SGLang
accepts `true`/`1`; PyTorch's `check_env` accepts exactly `0` and `1`. Comparing the raw string with a list of
"truthy" words gets every one of them wrong somewhere, so the catalog's env conditions name the program
(`{fact: env.NCCL_P2P_DISABLE, program: nccl, eq: 1}`) and compare what that program would have made of the value.

Pure functions, no I/O; the settings knowledge base uses them too.
"""

from __future__ import annotations

from typing import Callable

_INT64_MAX = 2**63 - 1
_INT64_MIN = -(2**63)
_DIGITS = "0123456789abcdefghijklmnopqrstuvwxyz"


def _strtol(value: str) -> int:
    """C `strtoll(value, NULL, 0)`: leading whitespace, a sign, a 0x/0 prefix, the longest run of digits; 0 when no
    digits; clamped to the int64 range on overflow (as strtoll returns LLONG_MAX/LLONG_MIN)."""
    s = value.lstrip(" \t\n\v\f\r")
    neg = False
    if s[:1] in ("+", "-"):
        neg, s = s[0] == "-", s[1:]
    base = 10
    if s[:2].lower() == "0x" and s[2:3].lower() in _DIGITS[:16] and s[2:3]:
        base, s = 16, s[2:]
    elif s[:1] == "0":
        base = 8
    n, seen = 0, False
    for ch in s:
        d = _DIGITS.find(ch.lower())
        if d < 0 or d >= base:
            break
        n, seen = n * base + d, True
    if not seen:
        return 0
    n = -n if neg else n
    return max(_INT64_MIN, min(_INT64_MAX, n))


def nccl_int(value: str) -> int:
    """An NCCL integer variable as NCCL reads it: `strtoll(str, nullptr, 0)` on the leading part, 0 when the value
    starts with no digits (`true`, `yes` are 0).

    Source: NCCL src/misc/param.cc `ncclLoadParam` (v2.30.7-1, line 95:
    https://github.com/NVIDIA/nccl/blob/73cf112295c33aee2b895f329f592f2a9b4b0f97/src/misc/param.cc#L95), and for
    NCCL_P2P_DISABLE src/graph/paths.cc `ncclGetLevel` (`int disable = strtol(str, NULL, 0); if (disable == 1)`, line
    250: https://github.com/NVIDIA/nccl/blob/73cf112295c33aee2b895f329f592f2a9b4b0f97/src/graph/paths.cc#L250)."""
    return _strtol(value)


def vllm_bool(value: str) -> bool:
    """A vLLM boolean variable as vllm/envs.py reads most of them: `bool(int(os.getenv(NAME, default)))`.

    `int()` takes an optionally signed decimal with surrounding whitespace; anything else (`true`, `yes`) raises
    ValueError, as it does in vLLM when the variable is first read. Source: vllm/envs.py, e.g. VLLM_USE_RAY_SPMD_WORKER,
    VLLM_FLASHINFER_FORCE_TENSOR_CORES, VERBOSE at
    https://github.com/vllm-project/vllm/blob/f218f9c24d224800e0ea4488aa71bd8215c8bdcd/vllm/envs.py (and
    VLLM_USE_DEEP_GEMM, VLLM_DISABLE_COMPILE_CACHE in later releases). A few vLLM
    variables use `.lower() in ("1", "true")` instead (VLLM_ALLOW_LONG_MAX_MODEL_LEN, VLLM_USE_TRITON_FLASH_ATTN):
    those are `sglang_bool`'s rule."""
    return bool(int(value))


def sglang_bool(value: str) -> bool:
    """An SGLang boolean variable: `get_bool_env_var` lower-cases the value and accepts `true` or `1`; anything else
    is false. Source: python/sglang/srt/utils.py `get_bool_env_var`
    (https://github.com/sgl-project/sglang/blob/4ebfeba20145f80822040effc47d084dd3c0c56e/python/sglang/srt/utils.py)."""
    return value.lower() in ("true", "1")


def torch_bool(value: str) -> bool:
    """A PyTorch C++ boolean flag as `c10::utils::check_env` reads it: exactly `1` is true; `0` is false; any other
    value is ignored with a warning and the flag keeps its default (see `parse_env`, which returns None for those).
    Source: c10/util/env.cpp `check_env`
    (https://github.com/pytorch/pytorch/blob/1071fd260b7ed94b41eeaf1061399c51b8a4d3cd/c10/util/env.cpp#L83-L99)."""
    return value == "1"


def cuda_int(value: str) -> int:
    """A CUDA runtime/driver integer variable (CUDA_LAUNCH_BLOCKING, CUDA_DEVICE_MAX_CONNECTIONS, ...).

    The driver's parser is not public; NVIDIA documents these variables' values as decimal integers
    (https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#cuda-environment-variables). A decimal integer
    (surrounding whitespace allowed) is read; anything else raises ValueError rather than guessing."""
    s = value.strip()
    if not s or not (s.isdigit() or (s[0] in "+-" and s[1:].isdigit())):
        raise ValueError(f"not a decimal integer: {value!r}")
    return int(s)


def _torch(value: str) -> bool | None:
    return {"1": True, "0": False}.get(value)


PROGRAMS: dict[str, Callable[[str], int | bool | str | None]] = {
    "nccl": nccl_int,
    "vllm": vllm_bool,
    "sglang": sglang_bool,
    "torch": _torch,
    "cuda": cuda_int,
}
"""Program name -> how it parses its variables' values (`torch` returns None for a value check_env ignores)."""


def parse_env(program: str, value: str) -> int | bool | str | None:
    """What `program` makes of an environment value; None when the program rejects or ignores it (vLLM's `int()`
    raising on `true`, PyTorch's check_env ignoring `yes`, a CUDA value that is not an integer).

    An unknown program is a KeyError naming the known ones (a catalog entry must name a program listed here)."""
    try:
        parser = PROGRAMS[program]
    except KeyError:
        raise KeyError(f"no environment parser for program {program!r} (known: {', '.join(sorted(PROGRAMS))})") from None
    try:
        return parser(value)
    except ValueError:
        return None
