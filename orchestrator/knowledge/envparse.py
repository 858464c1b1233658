"""Setting values read the way each program reads them: one parser per program, with what the program does with a
value it will not take.

`NCCL_P2P_DISABLE=true` disables nothing: NCCL reads its variables with `strtol`/`strtoll` (base 0), so `true` is 0.
vLLM reads most booleans with `bool(int(...))`, which raises on `true`. SGLang's `EnvBool` takes
`true/1/yes/y`, and a value it does not know only warns and keeps the default. PyTorch's c10d `getCvarBool` takes
`y/yes/1/t/true` and raises on anything else, while its `check_env` takes exactly `0`/`1` and ignores the rest. A
list of "truthy" words gets every one of these wrong somewhere. So each program has its reader here, and each reader
returns a `Reading`: the value the program works with, and, for a value it does not take, what happens (it refuses
to start, keeps the default, or raises when the value is first used). That is never the setting's effect.

The settings knowledge base (knowledge/settings: `read`, `typed`, `effect_applies`) and the catalog's environment
conditions (`{fact: env.X, program: nccl, ...}`, `parse_env`) both read values through these functions.

Pure functions, no I/O.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Callable, Literal

Outcome = Literal["ok", "default", "refuses_to_start", "raises", "undocumented"]
"""What the program does with a value: `ok` takes it; `default` ignores it (a warning at most) and keeps the default;
`refuses_to_start` exits at start-up; `raises` raises when the value is first read; `undocumented` means the program
documents the form it takes and its handling of any other value is not public."""


@dataclass(frozen=True)
class Reading:
    """A value as the program reads it."""

    value: Any
    """What the program works with: the parsed value, the default it keeps, or None when it fails."""
    outcome: Outcome = "ok"
    note: str = ""
    """For any outcome but `ok`: what the program does with the value, in its own terms, with the source."""

    @property
    def refused(self) -> bool:
        return self.outcome != "ok"


_INT64_MAX = 2**63 - 1
_INT64_MIN = -(2**63)
_DIGITS = "0123456789abcdefghijklmnopqrstuvwxyz"


# --- C library -------------------------------------------------------------------------------------------------------

def strtoll(value: str) -> tuple[int, bool]:
    """glibc `strtoll(value, NULL, 0)`: (the result, whether errno was set to ERANGE). Leading whitespace, a sign, a
    0x/0 prefix, then the longest run of digits. No digits gives 0 with errno unset. Overflow gives LLONG_MAX/LLONG_MIN
    with ERANGE."""
    s = value.lstrip(" \t\n\v\f\r")
    neg = False
    if s[:1] in ("+", "-"):
        neg, s = s[0] == "-", s[1:]
    base = 10
    if s[:2].lower() == "0x" and s[2:3] and s[2:3].lower() in _DIGITS[:16]:
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
        return 0, False
    n = -n if neg else n
    if n > _INT64_MAX:
        return _INT64_MAX, True
    if n < _INT64_MIN:
        return _INT64_MIN, True
    return n, False


def _strtol(value: str) -> int:
    """`strtoll` clamped (what strtol returns on a 64-bit Linux host, errno aside)."""
    return strtoll(value)[0]


def _to_int32(n: int) -> int:
    """`int x = (long)v`: the low 32 bits, as two's complement (gcc on x86-64 and aarch64)."""
    n &= 0xFFFFFFFF
    return n - (1 << 32) if n >= 1 << 31 else n


def _stoi(value: str) -> int:
    """C++ `std::stoi(value)`: strtol base 10 on the leading part (whitespace, sign, digits; the rest ignored);
    std::invalid_argument when there are no digits, std::out_of_range outside int."""
    s = value.lstrip(" \t\n\v\f\r")
    m = re.match(r"[+-]?\d+", s)
    if not m:
        raise ValueError(f"std::stoi: no conversion of {value!r}")
    n = int(m.group(0))
    if not -(2**31) <= n <= 2**31 - 1:
        raise ValueError(f"std::stoi: {value!r} is out of range")
    return n


# --- NCCL --------------------------------------------------------------------------------------------------------------

NCCL_PARAM_SOURCE = "https://github.com/NVIDIA/nccl/blob/v2.30.7-1/src/misc/param.cc#L78-L102"


def nccl_param(value: str, default: Any = None) -> Reading:
    """An `NCCL_PARAM` variable as `ncclLoadParam` reads it (NCCL 2.30.7-1 src/misc/param.cc L78-102).

    An empty value keeps the default. Otherwise `value = strtoll(str, nullptr, 0)`: a value with no leading digits
    (`true`, `yes`) is 0. `if (errno) { value = deftVal; INFO("Invalid value %s for %s, using default %lld.") }`, so
    a value out of the int64 range keeps the default; it is not clamped."""
    if value == "":
        return Reading(default, "default", "NCCL ignores an empty value and keeps the default (ncclLoadParam: "
                                           f"`if (str && strlen(str) > 0)`, {NCCL_PARAM_SOURCE})")
    n, erange = strtoll(value)
    if erange:
        return Reading(default, "default",
                       f"NCCL logs 'Invalid value {value} for ...' and keeps the default {default}: strtoll set "
                       f"ERANGE, and ncclLoadParam falls back on errno ({NCCL_PARAM_SOURCE})")
    return Reading(n)


def nccl_int(value: str) -> int:
    """An NCCL integer variable as `strtoll(str, nullptr, 0)` reads it, 0 when the value starts with no digits
    (`true`, `yes` are 0). Use `nccl_param` for what NCCL does on overflow (it keeps the default).

    Source: NCCL src/misc/param.cc `ncclLoadParam` (v2.30.7-1, line 95:
    https://github.com/NVIDIA/nccl/blob/73cf112295c33aee2b895f329f592f2a9b4b0f97/src/misc/param.cc#L95), and for
    NCCL_P2P_DISABLE src/graph/paths.cc `ncclGetLevel` (`int disable = strtol(str, NULL, 0); if (disable == 1)`, line
    250: https://github.com/NVIDIA/nccl/blob/73cf112295c33aee2b895f329f592f2a9b4b0f97/src/graph/paths.cc#L250)."""
    return _strtol(value)


def nccl_strtol_int(value: str, default: Any = None) -> Reading:
    """A variable NCCL reads with `int x = strtol(str, NULL, 0)` (NCCL_P2P_DISABLE in ncclGetLevel, src/graph/paths.cc
    L250; NCCL_COLLNET_ENABLE, src/init.cc L2150): strtol clamps on overflow, then the long is cut to an int."""
    return Reading(_to_int32(_strtol(value)))


NCCL_STRTOL_VARS = frozenset({"NCCL_P2P_DISABLE", "NCCL_COLLNET_ENABLE"})
"""ncclGetEnv variables NCCL parses with `(int)strtol(str, NULL, 0)` (v2.30.7-1: graph/paths.cc L250, init.cc L2150);
the other ncclGetEnv variables are strings (names, lists, paths)."""


# --- vLLM ------------------------------------------------------------------------------------------------------------

VLLM_ENVS_CACHE = ("vLLM reads every variable when EngineCore caches them at the end of its start-up "
                   "(envs.enable_envs_cache, v1/engine/core.py L248 in 0.33.0, L240 in 0.26.0), so `vllm serve` exits "
                   "during start-up")


def vllm_env(value: str, default: Any, spec: dict[str, Any] | None) -> Reading:
    """A vLLM variable read by its own lambda in vllm/envs.py, as the harvest classified it (`spec`, per release:
    scripts/harvest_settings.py `vllm_parser`). Kinds: `int_bool` `bool(int(v))`, `int` `int(v)`, `float`,
    `in` (`v[.strip()][.lower()] in (...)`), `eq`/`ne` (`v[.lower()] == x`), `choices` (env_with_choices: anything
    else raises ValueError), `str`/`lower`/`upper`, `map` ({"1": True, "0": False}.get(v)), `expr` (anything else:
    the value as given, no claim)."""
    kind = (spec or {}).get("kind", "expr")
    s = value
    if spec and spec.get("strip"):
        s = s.strip()
    if spec and spec.get("lower"):
        s = s.lower()
    try:
        if kind == "int_bool":
            return Reading(bool(int(value)))
        if kind in ("int", "int_or_none"):
            return Reading(int(value))
        if kind == "float":
            return Reading(float(value))
    except ValueError:
        expr = {"int_bool": "bool(int(value))", "int": "int(value)", "int_or_none": "int(value)",
                "float": "float(value)"}[kind]
        return Reading(None, "refuses_to_start", f"vLLM's envs.py reads it with {expr}, which raises ValueError on "
                                                 f"{value!r}; {VLLM_ENVS_CACHE}")
    if kind == "in":
        return Reading(s in [str(x) for x in spec["values"]] if spec else False)
    if kind == "eq":
        return Reading(s == str(spec["value"]) if spec else False)
    if kind == "ne":
        return Reading(s != str(spec["value"]) if spec else True)
    if kind == "map":
        return Reading((spec or {}).get("map", {}).get(s))
    if kind == "choices" and spec:
        choices = [str(c) for c in spec.get("choices", [])]
        ok = s in choices if spec.get("case_sensitive", True) else s.lower() in [c.lower() for c in choices]
        if choices and not ok:
            return Reading(None, "refuses_to_start",
                           f"vLLM's env_with_choices raises ValueError (\"Invalid value '{value}'\"; valid: "
                           f"{', '.join(choices)}); {VLLM_ENVS_CACHE}")
        return Reading(value)
    if kind == "lower":
        return Reading(value.lower())
    if kind == "upper":
        return Reading(value.upper())
    return Reading(value)


def vllm_bool(value: str) -> bool:
    """A vLLM boolean variable as vllm/envs.py reads most of them: `bool(int(os.getenv(NAME, default)))`.

    `int()` takes an optionally signed decimal with surrounding whitespace; anything else (`true`, `yes`) raises
    ValueError, as it does in vLLM when the variable is read. Source: vllm/envs.py (v0.33.0), e.g.
    VLLM_ENABLE_V1_MULTIPROCESSING (L1444), VLLM_BATCH_INVARIANT; `vllm_env` reads any variable by its own lambda."""
    return bool(int(value))


# --- SGLang ------------------------------------------------------------------------------------------------------------

SGLANG_ENVIRON = "https://github.com/sgl-project/sglang/blob/v0.5.23/python/sglang/srt/environ.py"


def sglang_env(value: str, default: Any, kind: str) -> Reading:
    """A variable of SGLang's `Envs` registry (srt/environ.py, 0.5.18-0.5.23), read by its field class's `parse`:
    EnvBool lower-cases and takes `true/1/yes/y` and `false/0/no/n` (L143-150); EnvInt `int(value)` (L153-158);
    EnvFloat `float(value)` (L200-205); EnvStr as given. `EnvField.get` catches the ValueError of any other value,
    warns 'Invalid value for NAME: ..., using default' and keeps the default (L66-85)."""
    try:
        if kind == "bool":
            low = value.lower()
            if low in ("true", "1", "yes", "y"):
                return Reading(True)
            if low in ("false", "0", "no", "n"):
                return Reading(False)
            raise ValueError(value)
        if kind == "int":
            return Reading(int(value))
        if kind == "float":
            return Reading(float(value))
    except ValueError:
        return Reading(default, "default", f"SGLang warns 'Invalid value for ...' and keeps the default {default!r}: "
                                           f"its Env{kind.capitalize()}.parse refuses {value!r} and EnvField.get "
                                           f"falls back ({SGLANG_ENVIRON}#L66-L85)")
    return Reading(value)


def sglang_bool(value: str) -> bool:
    """SGLang's `get_bool_env_var` (srt/utils/common.py), used for variables outside the `Envs` registry: lower-cases
    the value and takes `true` or `1`; anything else is false. The registry's EnvBool is `sglang_env(..., "bool")`."""
    return value.lower() in ("true", "1")


# --- PyTorch -----------------------------------------------------------------------------------------------------------

TORCH_CVAR_SOURCE = "https://github.com/pytorch/pytorch/blob/v2.14.1/torch/csrc/distributed/c10d/Utils.hpp"
TORCH_CHECK_ENV_SOURCE = ("https://github.com/pytorch/pytorch/blob/1071fd260b7ed94b41eeaf1061399c51b8a4d3cd/c10/util/"
                          "env.cpp#L83-L99")

TORCH_CVAR: dict[str, str] = {
    "TORCH_NCCL_BLOCKING_WAIT": "bool", "TORCH_NCCL_ASYNC_ERROR_HANDLING": "int", "TORCH_NCCL_NAN_CHECK": "bool",
    "TORCH_NCCL_CUDA_EVENT_CACHE": "bool", "TORCH_NCCL_TRACE_BUFFER_SIZE": "int", "TORCH_NCCL_DESYNC_DEBUG": "bool",
    "TORCH_NCCL_ENABLE_TIMING": "bool", "TORCH_NCCL_AVOID_RECORD_STREAMS": "bool",
    "TORCH_NCCL_SHOW_EAGER_INIT_P2P_SERIALIZATION_WARNING": "bool",
}
"""TORCH_NCCL_* variables and the c10d reader ProcessGroupNCCL's constructor passes them to (getCvarBool /
getCvarInt; torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp, ProcessGroupNCCL::ProcessGroupNCCL, e.g.
`blockingWait_ = getCvarBool(TORCH_NCCL_BLOCKING_WAIT, false)`; the names and their NCCL_* aliases are the vectors of
ProcessGroupNCCL.hpp in the torch 2.14.1 wheel)."""


def torch_cvar_bool(value: str, default: Any = None) -> Reading:
    """c10d `getCvarBool` (torch 2.14.1 torch/include/torch/csrc/distributed/c10d/Utils.hpp L151-189): lower-cases the
    value; `y/yes/1/t/true` are true, `n/no/0/f/false` false; anything else is `TORCH_CHECK(false, "Invalid value for
    environment variable: ...")`, a c10::Error raised when the NCCL process group is created."""
    low = value.lower()
    if low in ("y", "yes", "1", "t", "true"):
        return Reading(True)
    if low in ("n", "no", "0", "f", "false"):
        return Reading(False)
    return Reading(None, "raises", "PyTorch raises 'Invalid value for environment variable' (c10d getCvarBool's "
                                   "TORCH_CHECK) when the NCCL process group is created, so the engine fails at "
                                   f"distributed start-up ({TORCH_CVAR_SOURCE}#L151-L189)")


def torch_cvar_int(value: str, default: Any = None) -> Reading:
    """c10d `getCvarInt` (Utils.hpp L119-148 in torch 2.14.1): `std::stoi(val)`, and `TORCH_CHECK(false, "Invalid value
    for environment variable")` when stoi throws (no leading digits, out of int range)."""
    try:
        return Reading(_stoi(value))
    except ValueError:
        return Reading(None, "raises", "PyTorch raises 'Invalid value for environment variable' (c10d getCvarInt's "
                                       "std::stoi failed) when the NCCL process group is created "
                                       f"({TORCH_CVAR_SOURCE})")


def torch_check_env(value: str, default: Any = None) -> Reading:
    """c10 `check_env` (c10/util/env.cpp L83-99): exactly `1` is true and `0` false; any other value is ignored with
    the warning 'Ignoring invalid value for boolean flag', and the flag keeps its default."""
    if value == "1":
        return Reading(True)
    if value == "0":
        return Reading(False)
    return Reading(default, "default", "PyTorch warns 'Ignoring invalid value for boolean flag' and keeps the default "
                                       f"(c10::utils::check_env takes exactly 0 or 1, {TORCH_CHECK_ENV_SOURCE})")


TORCH_NO_CACHING_VARS = ("PYTORCH_NO_CUDA_MEMORY_CACHING", "PYTORCH_NO_HIP_MEMORY_CACHING")
TORCH_NO_CACHING_CHECK_ENV_SINCE = "2.7.0"
"""c10/cuda/CUDACachingAllocator.cpp forceUncachedAllocator reads these. Up to 2.6 it disables the caching allocator
when the variable is set at all (`getenv(...) != nullptr`, later `c10::utils::has_env`), so `=0` disables it too
(pytorch#145661, reported on 2.5.1); pytorch#145905 (merged 2025-01-30, first in 2.7.0) reads it with check_env, so
only a true value does."""
TORCH_NO_CACHING_SOURCES = ("https://github.com/pytorch/pytorch/issues/145661, "
                            "https://github.com/pytorch/pytorch/pull/145905")


def torch_no_memory_caching(value: str, default: Any = None, *, before_check_env: bool = False) -> Reading:
    """PYTORCH_NO_CUDA_MEMORY_CACHING as the installed caching allocator reads it (TORCH_NO_CACHING_VARS):
    set at all before 2.7, check_env's `1` from 2.7."""
    if before_check_env:
        return Reading(True, "ok", "PyTorch before 2.7 disables its caching allocator when the variable is set at all, "
                                   f"0 included ({TORCH_NO_CACHING_SOURCES})")
    return torch_check_env(value, False if default in (None, 0, "0", "") else default)


def torch_bool(value: str) -> bool:
    """c10 `check_env` as a boolean: exactly `1` is true (see `torch_check_env` for what other values do)."""
    return value == "1"


# --- CUDA --------------------------------------------------------------------------------------------------------------

CUDA_ENV_DOC = "https://docs.nvidia.com/cuda/cuda-programming-guide/05-appendices/environment-variables.html"


def cuda_int(value: str) -> int:
    """A CUDA runtime/driver integer variable (CUDA_LAUNCH_BLOCKING, CUDA_DEVICE_MAX_CONNECTIONS, ...).

    The driver's parser is not public; NVIDIA documents these variables' values as decimal integers
    (https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#cuda-environment-variables). A decimal integer
    (surrounding whitespace allowed) is read; anything else raises ValueError rather than guessing."""
    s = value.strip()
    if not s or not (s.isdigit() or (s[0] in "+-" and s[1:].isdigit())):
        raise ValueError(f"not a decimal integer: {value!r}")
    return int(s)


def cuda_env(value: str, default: Any, kind: str) -> Reading:
    """A CUDA variable in the form NVIDIA documents (integers for `int`, the listed words for `enum`); what the
    driver does with any other value is not documented, so such a value is `undocumented`, never an effect."""
    if kind == "int":
        try:
            return Reading(cuda_int(value))
        except ValueError:
            return Reading(None, "undocumented", f"NVIDIA documents decimal integers for this variable; what the "
                                                 f"driver does with {value!r} is not public ({CUDA_ENV_DOC})")
    return Reading(value.strip())


# --- TGI (Rust, clap 4) -------------------------------------------------------------------------------------------------

TGI_CLAP_SOURCE = ("https://github.com/clap-rs/clap/blob/v4.5.32/clap_builder/src/builder/value_parser.rs#L1693-L1721 "
                   "(BoolValueParser), parser/parser.rs L1406-1434 (add_env) and L1236-1256 (SetTrue)")
_RUST_UINT = re.compile(r"^\+?[0-9]+$")
_RUST_INT = re.compile(r"^[+-]?[0-9]+$")
_RUST_FLOAT = re.compile(r"^[+-]?(?:inf|infinity|nan|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)$", re.I)
_RUST_RANGE = {"u8": 8, "u16": 16, "u32": 32, "u64": 64, "usize": 64}


def _rust_one(value: str, rtype: str) -> tuple[bool, Any]:
    t = rtype.strip()
    if t == "bool":  # clap's BoolValueParser (bool fields: ArgAction::SetTrue; Option<bool>): exactly true/false
        return (value in ("true", "false")), value == "true"
    if t in _RUST_RANGE:
        ok = bool(_RUST_UINT.match(value)) and int(value) < 2 ** _RUST_RANGE[t]
        return ok, int(value) if ok else None
    if t in ("i8", "i16", "i32", "i64", "isize"):
        return bool(_RUST_INT.match(value)), int(value) if _RUST_INT.match(value) else None
    if t in ("f32", "f64"):
        ok = bool(_RUST_FLOAT.match(value))
        return ok, float(value) if ok else None
    return True, value


def tgi_clap(value: str, default: Any, rtype: str) -> Reading:
    """A TGI launcher setting given as its environment variable: clap 4.5 (TGI v3.3.7 Cargo.lock) passes the env value
    through the field's value parser as if typed on the command line (Parser::add_env). `bool` fields take exactly
    `true` or `false` (BoolValueParser; `1` and `yes` are refused), integers Rust's `str::parse` (no whitespace, no
    hex), floats Rust's float syntax; `Vec<T>` fields split on their `value_delimiter` (`,`). A refused value is a
    clap 'invalid value' error: the launcher exits before it starts anything."""
    t = rtype.strip()
    m = re.fullmatch(r"Option<(.+)>", t)
    t = m.group(1) if m else t
    v = re.fullmatch(r"Vec<(.+)>", t)
    parts = value.split(",") if v else [value]
    inner = v.group(1) if v else t
    out = []
    for p in parts:
        ok, got = _rust_one(p, inner)
        if not ok:
            return Reading(None, "refuses_to_start", f"the TGI launcher exits with clap's \"invalid value '{p}'\" "
                                                     f"error before starting: the {inner} value parser refuses it "
                                                     f"({TGI_CLAP_SOURCE})")
        out.append(got)
    return Reading(out if v else out[0])


# --- Ollama (Go) ----------------------------------------------------------------------------------------------------------

OLLAMA_ENVCONFIG = "https://github.com/ollama/ollama/blob/v0.32.15/envconfig/config.go"


def ollama_env(value: str, default: Any, kind: str) -> Reading:
    """An Ollama variable as envconfig/config.go (v0.32.15) reads it. `Var` trims spaces, then quotes (L375-377); an
    empty result is unset. `Bool`/`BoolWithDefault` (L177-197): strconv.ParseBool, and a value it refuses counts as
    TRUE. `Uint`/`Uint64` (L259-300): strconv.ParseUint base 10, and a value it refuses logs 'invalid environment
    variable, using default' and keeps the default. `String` is the trimmed value."""
    s = value.strip().strip("\"'")
    if s == "":
        return Reading(default, "default", f"Ollama treats an empty value as unset ({OLLAMA_ENVCONFIG}#L375-L377)")
    if kind == "bool":
        if s in ("1", "t", "T", "TRUE", "true", "True"):
            return Reading(True)
        if s in ("0", "f", "F", "FALSE", "false", "False"):
            return Reading(False)
        return Reading(True, "ok", f"strconv.ParseBool refuses {s!r} and Ollama's BoolWithDefault then returns "
                                   f"true ({OLLAMA_ENVCONFIG}#L177-L190)")
    if kind in ("uint", "uint64"):
        if re.fullmatch(r"[0-9]+", s) and int(s) < 2**64:
            return Reading(int(s))
        return Reading(default, "default", "Ollama logs 'invalid environment variable, using default' and keeps "
                                           f"{default!r} (strconv.ParseUint, {OLLAMA_ENVCONFIG}#L259-L270)")
    return Reading(s)


# --- llama.cpp ----------------------------------------------------------------------------------------------------------

LLAMACPP_ARG = ("https://github.com/abetlen/llama-cpp-python/tree/v0.3.36/vendor/llama.cpp/common/arg.cpp "
                "(common_params_parse_ex: the environment loop; common_arg_utils::is_truthy / is_falsey)")


def llamacpp_env(value: str, default: Any, handler: str) -> Reading:
    """A llama.cpp server option given as its LLAMA_ARG_* variable (common/arg.cpp as vendored in llama-cpp-python
    0.3.36). A flag (`handler_void`) is set only when the value is truthy (`on/enabled/true/1`), and any other value
    is ignored. `handler_int` is `std::stoi(value)`. `handler_bool` takes truthy or falsey (`off/disabled/false/0`)
    values and throws on anything else. A throw becomes 'error while handling environment variable' and the server
    exits before loading anything."""
    truthy, falsey = ("on", "enabled", "true", "1"), ("off", "disabled", "false", "0")
    if handler == "void":
        if value in truthy:
            return Reading(True)
        return Reading(default, "default", f"llama.cpp sets this flag from its variable only for on/enabled/true/1; "
                                           f"{value!r} is ignored ({LLAMACPP_ARG})")
    if handler == "bool":
        if value in truthy or value in falsey:
            return Reading(value in truthy)
        return Reading(None, "refuses_to_start", "llama.cpp throws 'invalid boolean value' and the server exits with "
                                                 f"'error while handling environment variable' ({LLAMACPP_ARG})")
    if handler == "int":
        try:
            return Reading(_stoi(value))
        except ValueError:
            return Reading(None, "refuses_to_start", "llama.cpp's std::stoi throws and the server exits with 'error "
                                                     f"while handling environment variable' ({LLAMACPP_ARG})")
    return Reading(value)


# --- command lines (argparse) ----------------------------------------------------------------------------------------------

def argparse_value(value: str, kind: str, program: str) -> Reading:
    """A vLLM / SGLang command-line value of an int or float option: argparse applies `int`/`float` and a value they
    refuse is a usage error (exit 2) before the server starts."""
    try:
        if kind == "int":
            return Reading(int(value))
        if kind == "float":
            f = float(value)
            return Reading(f if not math.isnan(f) else f)
    except ValueError:
        return Reading(None, "refuses_to_start", f"{program}'s argument parser rejects {value!r} ({kind}() raises), "
                                                 f"so the server exits with a usage error before starting")
    return Reading(value)


# --- the catalog's environment conditions ---------------------------------------------------------------------------------

def _nccl(value: str) -> int | None:
    r = nccl_param(value, None)
    return r.value if not r.refused else None


def _vllm(value: str) -> bool | None:
    try:
        return vllm_bool(value)
    except ValueError:
        return None


def _sglang(value: str) -> bool | None:
    r = sglang_env(value, None, "bool")
    return r.value if not r.refused else None


def _torch(value: str) -> bool | None:
    return {"1": True, "0": False}.get(value)


def _torch_cvar(value: str) -> bool | None:
    r = torch_cvar_bool(value)
    return r.value if not r.refused else None


PROGRAMS: dict[str, Callable[[str], int | bool | str | None]] = {
    "nccl": _nccl,
    "vllm": _vllm,
    "sglang": _sglang,
    "torch": _torch,
    "torch_cvar": _torch_cvar,
    "nccl_int32": lambda value: nccl_strtol_int(value).value,
    "cuda": cuda_int,
}
"""Program name -> how it parses a variable's value in a catalog condition. `nccl`: ncclLoadParam (overflow keeps the
default, so no comparison holds). `nccl_int32`: `(int)strtol()` (NCCL_P2P_DISABLE). `vllm`: `bool(int())`. `sglang`: EnvBool. `torch`: check_env. `torch_cvar`: c10d
getCvarBool. `cuda`: documented decimal. None means the program rejects or ignores the value."""


def parse_env(program: str, value: str) -> int | bool | str | None:
    """What `program` makes of an environment value; None when the program rejects or ignores it (vLLM's `int()`
    raising on `true`, PyTorch's check_env ignoring `yes`, NCCL keeping its default on overflow, a CUDA value that is
    not an integer).

    An unknown program is a KeyError naming the known ones (a catalog entry must name a program listed here)."""
    try:
        parser = PROGRAMS[program]
    except KeyError:
        raise KeyError(f"no environment parser for program {program!r} (known: {', '.join(sorted(PROGRAMS))})") from None
    try:
        return parser(value)
    except ValueError:
        return None


Reader = Callable[[str, Any], Reading]
