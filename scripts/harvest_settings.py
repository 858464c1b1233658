#!/usr/bin/env python3
"""Harvest every documented setting of the serving stack from the projects' own definitions.

Two steps:

  gather  SRC   copy the defining files of each project at each release into SRC/<project>/<version>/<path>:
                `git show TAG:PATH` on a mirror of the repository (--mirror project=GITDIR), or the files of the
                released wheel / sdist (`pip download`), or a docs extract kept in the repository.
  build   SRC OUT   parse SRC/<project>/<version>/<path> into OUT/<project>.json (one file per project) and
                OUT/counts.json; a project whose count falls below 80 % of the count already in OUT fails the build.

Parsers: `ast` for Python (dataclass / pydantic / msgspec fields with their defaults and help, vLLM's `envs.py`
table, SGLang's `Envs` class, transformers' `GenerationConfig.__init__`), regexes for C/C++/Go/Rust (NCCL's
`NCCL_PARAM` macros, Ollama's `envconfig`, TGI's clap `Args`, llama.cpp's `common_arg`), Markdown tables for docs.

Per setting: name, kind (env | cli | config | generation), type, default per version (as change points: a changed
default is one more point), help (the newest version's), the versions it exists in, and its source (file + line, and
a URL at the release tag). CI runs `build` on the small extracts in tests/settings/extracts and compares the output
with tests/settings/expected (tests/settings/test_harvest.py); the full harvest's output is
orchestrator/knowledge/settings/.

stdlib + packaging only.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any, Callable, Iterable

from packaging.version import InvalidVersion, Version

MIN_RATIO = 0.8
"""A harvest that finds fewer than this fraction of the settings the previous one found fails."""


# --- projects -------------------------------------------------------------------------------------------------------

PROJECTS: dict[str, dict[str, Any]] = {
    "vllm": {"label": "vLLM", "url": "https://github.com/vllm-project/vllm/blob/v{version}/{path}#L{line}",
             "wheel": "vllm", "files": ["vllm/envs.py", "vllm/engine/arg_utils.py", "vllm/config/*.py",
                                        "vllm/config.py", "vllm/entrypoints/common/cli_args.py",
                                        "vllm/entrypoints/openai/cli_args.py"]},
    "sglang": {"label": "SGLang", "url": "https://github.com/sgl-project/sglang/blob/v{version}/python/{path}#L{line}",
               "wheel": "sglang", "files": ["sglang/srt/server_args.py", "sglang/srt/environ.py",
                                            "sglang/srt/arg_groups/fields/*.py"]},
    "transformers": {"label": "transformers",
                     "url": "https://github.com/huggingface/transformers/blob/v{version}/src/{path}#L{line}",
                     "wheel": "transformers", "files": ["transformers/generation/configuration_utils.py"]},
    "pytorch": {"label": "PyTorch", "url": "https://github.com/pytorch/pytorch/blob/v{version}/{path}#L{line}",
                "wheel": "torch", "files": ["torch/*.py", "torch/**/*.py", "torch/include/*.h", "torch/include/**/*.h",
                                            "torch/include/**/*.hpp"]},
    "ollama": {"label": "Ollama", "url": "https://github.com/ollama/ollama/blob/v{version}/{path}#L{line}",
               "git": ["envconfig/config.go"]},
    "nccl": {"label": "NCCL", "url": "https://github.com/NVIDIA/nccl/blob/v{version}/{path}#L{line}", "git": ["src"]},
    "tgi": {"label": "TGI",
            "url": "https://github.com/huggingface/text-generation-inference/blob/v{version}/{path}#L{line}",
            "git": ["launcher/src/main.rs"]},
    "triton_trtllm": {"label": "Triton TensorRT-LLM backend",
                      "url": "https://github.com/triton-inference-server/tensorrtllm_backend/blob/v{version}/{path}#L{line}",
                      "git": ["docs/model_config.md"]},
    "llamacpp": {"label": "llama.cpp server",
                 "url": "https://github.com/abetlen/llama-cpp-python/tree/v{version}/vendor/llama.cpp/{path}#L{line}",
                 "sdist": "llama-cpp-python", "files": ["vendor/llama.cpp/common/arg.cpp"]},
    "cuda": {"label": "CUDA runtime/driver", "url": "{doc}", "docs": True},
    # NVIDIA publishes the tensorrt_llm wheels on its own index (PyPI has a stub sdist) and the repository is over the
    # mirror's size limit here: `gather --wheel tensorrt_llm VERSIONS` needs a pip configured with that index; without
    # it, `gather --files tensorrt_llm main@SHA DIR` takes files read at a commit (the version label names the commit,
    # and the URLs point at it, without line numbers when the files are extracts: "lines": False).
    "tensorrt_llm": {"label": "TensorRT-LLM", "lines": False,
                     "url": "https://github.com/NVIDIA/TensorRT-LLM/blob/{ref}/{path}",
                     "wheel": "tensorrt_llm", "files": ["tensorrt_llm/llmapi/llm_args.py",
                                                         "tensorrt_llm/commands/serve.py", "tensorrt_llm/*.py",
                                                         "tensorrt_llm/**/*.py"]},
}


# --- helpers --------------------------------------------------------------------------------------------------------

def _json_value(v: Any) -> Any:
    if isinstance(v, (tuple, set, frozenset)):
        v = sorted(v, key=repr) if isinstance(v, (set, frozenset)) else list(v)
    if isinstance(v, list):
        return [_json_value(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _json_value(x) for k, x in v.items()}
    if isinstance(v, float) and v != v:
        return {"expr": "nan"}
    if isinstance(v, (str, int, float, bool)) or v is None:
        return v
    return {"expr": repr(v)[:200]}


def literal(node: ast.AST | None) -> Any:
    """A default as JSON: the literal value, or {"expr": source} when it is computed."""
    if node is None:
        return None
    try:
        return _json_value(ast.literal_eval(node))
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return {"expr": ast.unparse(node)[:200]}


def comments_above(lines: list[str], lineno: int) -> str:
    """The `#` comment block directly above 1-based line `lineno`."""
    out: list[str] = []
    i = lineno - 2
    while i >= 0 and lines[i].strip().startswith("#"):
        out.append(lines[i].strip().lstrip("#").strip())
        i -= 1
    return " ".join(reversed(out)).strip()


def first_sentences(text: str, limit: int = 400) -> str:
    text = re.sub(r"\s+", " ", text or "").strip()
    return text if len(text) <= limit else text[: limit - 1].rsplit(" ", 1)[0] + "…"


def py_type(node: ast.AST | None) -> str:
    if node is None:
        return ""
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id in ("A", "Annotated"):
        inner = node.slice.elts[0] if isinstance(node.slice, ast.Tuple) else node.slice
        return ast.unparse(inner)
    return ast.unparse(node)


def _kw(call: ast.Call, name: str) -> ast.AST | None:
    for k in call.keywords:
        if k.arg == name:
            return k.value
    return None


def _call_name(node: ast.AST) -> str:
    if isinstance(node, ast.Call):
        f = node.func
        return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
    return ""


def field_default(value: ast.AST | None) -> tuple[ast.AST | None, Any, str]:
    """(default node, literal default, help from Field(description=...)) of a class attribute's value."""
    if value is None:
        return None, None, ""
    name = _call_name(value)
    if name in ("field", "Field", "PydanticField"):
        assert isinstance(value, ast.Call)
        desc = _kw(value, "description")
        help_ = desc.value if isinstance(desc, ast.Constant) and isinstance(desc.value, str) else ""
        d = _kw(value, "default")
        if d is None and value.args:
            d = value.args[0]
        if d is not None and not (isinstance(d, ast.Constant) and d.value is Ellipsis):
            return d, literal(d), help_
        fac = _kw(value, "default_factory")
        if fac is not None:
            base = {"list": [], "dict": {}, "set": [], "tuple": []}.get(ast.unparse(fac))
            return fac, base if base is not None else {"expr": ast.unparse(fac) + "()"}, help_
        return None, None, help_
    return value, literal(value), ""


def class_fields(tree: ast.Module) -> dict[str, dict[str, dict[str, Any]]]:
    """{class: {field: {type, default_node, default, help, line, aliases}}} of every class's annotated fields."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        fields: dict[str, dict[str, Any]] = {}
        body = cls.body
        for i, st in enumerate(body):
            if not (isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name)):
                continue
            name = st.target.id
            if name.startswith("_") or name.isupper() and "ClassVar" in ast.unparse(st.annotation):
                continue
            if "ClassVar" in ast.unparse(st.annotation):
                continue
            node, default, help_ = field_default(st.value)
            aliases: list[str] = []
            ann = st.annotation
            if isinstance(ann, ast.Subscript) and isinstance(ann.value, ast.Name) and ann.value.id in ("A", "Annotated") \
                    and isinstance(ann.slice, ast.Tuple) and len(ann.slice.elts) > 1:
                meta = ann.slice.elts[1]
                if isinstance(meta, ast.Constant) and isinstance(meta.value, str):
                    help_ = meta.value
                elif isinstance(meta, (ast.Tuple, ast.JoinedStr, ast.BinOp)):
                    try:
                        help_ = str(ast.literal_eval(meta))
                    except (ValueError, TypeError, SyntaxError):
                        help_ = ""
                elif isinstance(meta, ast.Call):
                    h = _kw(meta, "help")
                    if isinstance(h, ast.Constant) and isinstance(h.value, str):
                        help_ = h.value
                    al = _kw(meta, "aliases")
                    if isinstance(al, (ast.List, ast.Tuple)):
                        aliases = [e.value for e in al.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
            nxt = body[i + 1] if i + 1 < len(body) else None
            if not help_ and isinstance(nxt, ast.Expr) and isinstance(nxt.value, ast.Constant) \
                    and isinstance(nxt.value.value, str):
                help_ = nxt.value.value
            fields[name] = {"type": py_type(ann), "default_node": node, "default": default,
                            "required": st.value is None, "help": first_sentences(help_), "line": st.lineno,
                            "aliases": aliases}
        if fields:
            out.setdefault(cls.name, {}).update(fields)
    return out


def entry(name: str, kind: str, type_: str, default: Any, help_: str, path: str, line: int, **extra: Any) -> dict:
    return {"name": name, "kind": kind, "type": type_, "default": default, "help": first_sentences(help_),
            "path": path, "line": line, **{k: v for k, v in extra.items() if v not in (None, [], "")}}


def read(root: Path, rel: str) -> str | None:
    p = root / rel
    return p.read_text(errors="replace") if p.is_file() else None


# --- Python projects --------------------------------------------------------------------------------------------------

def vllm_envs(text: str, path: str) -> list[dict]:
    tree = ast.parse(text)
    lines = text.splitlines()
    funcs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    typed: dict[str, tuple[str, Any]] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for st in node.body:
                if isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name):
                    typed[st.target.id] = (ast.unparse(st.annotation), literal(st.value))
    out = []
    for node in ast.walk(tree):
        target = node.target if isinstance(node, ast.AnnAssign) else (
            node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None)
        if not (isinstance(target, ast.Name) and target.id == "environment_variables"):
            continue
        value = node.value
        if not isinstance(value, ast.Dict):
            continue
        for k, v in zip(value.keys, value.values):
            if not (isinstance(k, ast.Constant) and isinstance(k.value, str)):
                continue
            raw = None
            for c in ast.walk(v):
                if isinstance(c, ast.Call) and ast.unparse(c.func) in ("os.getenv", "os.environ.get", "getenv") \
                        and c.args and isinstance(c.args[0], ast.Constant) and c.args[0].value == k.value \
                        and len(c.args) > 1:
                    raw = literal(c.args[1])
                    break
            type_, default = typed.get(k.value, ("str", raw))
            out.append(entry(k.value, "env", type_, default, comments_above(lines, k.lineno), path, k.lineno,
                             raw_default=raw if isinstance(raw, str) else None, parser=vllm_parser(v, funcs)))
    return out


def _strs(node: ast.AST) -> list[str] | None:
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)) and all(
            isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts):
        return [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return None


def _getenv_chain(node: ast.AST) -> tuple[bool, bool, bool]:
    """(an os.getenv/os.environ.get call at the bottom, .strip() applied, .lower() applied) of `x[.strip()][.lower()]`."""
    strip = lower = False
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("strip", "lower"):
        strip |= node.func.attr == "strip"
        lower |= node.func.attr == "lower"
        node = node.func.value
    ok = isinstance(node, ast.Call) and ast.unparse(node.func) in ("os.getenv", "os.environ.get", "getenv") or \
        isinstance(node, ast.Subscript) and ast.unparse(node.value) == "os.environ"
    return ok, strip, lower


def vllm_parser(value: ast.AST, funcs: dict[str, ast.FunctionDef] | None = None) -> dict[str, Any]:
    """How vllm/envs.py turns a variable's string into its value, from the variable's lambda (the parse the settings
    layer applies: orchestrator/knowledge/envparse.py `vllm_env`): `int_bool` bool(int(v)), `int`, `float`, `in` /
    `eq` / `ne` (with `.strip()` / `.lower()`), `map` ({"1": True, "0": False}.get(v)), `choices` (env_with_choices),
    `str` / `lower` / `upper`, else `expr` (kept as given, with the source)."""
    body = value.body if isinstance(value, ast.Lambda) else value
    if isinstance(body, ast.Name) and funcs and body.id in funcs:  # a named function: its return expression
        ret = [n.value for n in ast.walk(funcs[body.id]) if isinstance(n, ast.Return) and n.value is not None]
        if len(ret) == 1:
            body = ret[0]
    if isinstance(body, ast.IfExp) and isinstance(body.test, ast.Compare) and \
            isinstance(body.test.ops[0], ast.In) and ast.unparse(body.test.comparators[0]) == "os.environ":
        body = body.body  # `int(os.getenv(X, "0")) if "X" in os.environ else None`
    src = ast.unparse(value)[:200]
    name = _call_name(body) if isinstance(body, ast.Call) else ""
    if name == "bool" and isinstance(body, ast.Call) and body.args and _call_name(body.args[0]) == "int" and \
            isinstance(body.args[0], ast.Call) and len(body.args[0].args) == 1 and \
            _getenv_chain(body.args[0].args[0])[0]:
        return {"kind": "int_bool"}
    while name == "int" and isinstance(body, ast.Call) and len(body.args) == 1 and _call_name(body.args[0]) == "int":
        body = body.args[0]  # int(int(os.getenv(...)))
    if name in ("int", "float") and isinstance(body, ast.Call) and len(body.args) == 1 and \
            _getenv_chain(body.args[0])[0]:
        return {"kind": name}
    if name == "maybe_convert_bool":
        return {"kind": "int_bool"}
    if name == "maybe_convert_int":
        return {"kind": "int"}
    if name in ("env_with_choices", "env_list_with_choices", "env_set_with_choices") and isinstance(body, ast.Call):
        choices = _strs(body.args[2]) if len(body.args) > 2 else _strs(_kw(body, "choices") or ast.Constant(None))
        cs = _kw(body, "case_sensitive")
        out: dict[str, Any] = {"kind": "choices" if name == "env_with_choices" else "expr", "src": src}
        if choices is not None and name == "env_with_choices":
            out["choices"] = choices
            out["case_sensitive"] = not (isinstance(cs, ast.Constant) and cs.value is False)
        elif name == "env_with_choices":
            out["kind"] = "expr"
        return out
    if isinstance(body, ast.Compare) and len(body.ops) == 1:
        ok, strip, lower = _getenv_chain(body.left)
        rhs = body.comparators[0]
        if ok and isinstance(body.ops[0], ast.In) and _strs(rhs) is not None:
            return {"kind": "in", "values": _strs(rhs), "strip": strip, "lower": lower}
        if ok and isinstance(body.ops[0], (ast.Eq, ast.NotEq)) and isinstance(rhs, ast.Constant) \
                and isinstance(rhs.value, str):
            return {"kind": "eq" if isinstance(body.ops[0], ast.Eq) else "ne", "value": rhs.value, "strip": strip,
                    "lower": lower}
    if isinstance(body, ast.Call) and isinstance(body.func, ast.Attribute) and body.func.attr == "get" and \
            isinstance(body.func.value, ast.Dict) and body.args:
        ok, strip, lower = _getenv_chain(body.args[0])
        keys = [k.value if isinstance(k, ast.Constant) else None for k in body.func.value.keys]
        vals = [v.value if isinstance(v, ast.Constant) else None for v in body.func.value.values]
        if ok and all(isinstance(k, str) for k in keys):
            return {"kind": "map", "map": dict(zip(keys, vals)), "strip": strip, "lower": lower}
    ok, strip, lower = _getenv_chain(body)
    if ok:
        return {"kind": "lower" if lower else "str"}
    if isinstance(body, ast.Call) and isinstance(body.func, ast.Attribute) and body.func.attr == "upper" and \
            _getenv_chain(body.func.value)[0]:
        return {"kind": "upper"}
    return {"kind": "expr", "src": src}


def _tier_condition(test: ast.AST, ccs: dict[str, str]) -> dict[str, Any]:
    """A get_batch_defaults branch condition as data: `device_memory >= N * GiB_bytes` -> min_gib, `"a100" not in
    device_name` -> not_names, `not is_gb10` (is_gb10 = is_device_capability((12, 1))) -> not_ccs; anything else ->
    unparsed (the probe then says the default is unknown)."""
    parts = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
    out: dict[str, Any] = {}
    for p in parts:
        if isinstance(p, ast.Compare) and len(p.ops) == 1 and ast.unparse(p.left) == "device_memory" and \
                isinstance(p.ops[0], ast.GtE):
            m = re.fullmatch(r"(\d+) \* GiB_bytes", ast.unparse(p.comparators[0]))
            if m:
                out["min_gib"] = int(m.group(1))
                continue
        if isinstance(p, ast.Compare) and len(p.ops) == 1 and isinstance(p.ops[0], ast.NotIn) and \
                ast.unparse(p.comparators[0]) == "device_name" and isinstance(p.left, ast.Constant):
            out.setdefault("not_names", []).append(str(p.left.value))
            continue
        if isinstance(p, ast.UnaryOp) and isinstance(p.op, ast.Not) and isinstance(p.operand, ast.Name) and \
                p.operand.id in ccs:
            out.setdefault("not_ccs", []).append(ccs[p.operand.id])
            continue
        out.setdefault("unparsed", []).append(ast.unparse(p))
    return out


def _server_value(body: list[ast.stmt], var: str) -> int | None:
    """The OPENAI_API_SERVER entry of `var = {UsageContext.LLM_CLASS: .., UsageContext.OPENAI_API_SERVER: ..}`."""
    for st in body:
        if isinstance(st, ast.Assign) and isinstance(st.targets[0], ast.Name) and st.targets[0].id == var and \
                isinstance(st.value, ast.Dict):
            for k, v in zip(st.value.keys, st.value.values):
                if k is not None and ast.unparse(k).endswith("OPENAI_API_SERVER") and isinstance(v, ast.Constant):
                    return int(v.value)
    return None


def vllm_batch_defaults(text: str, path: str) -> dict[str, Any] | None:
    """EngineArgs.get_batch_defaults: the API server's max_num_batched_tokens / max_num_seqs per GPU tier, in
    branch order (the first tier whose condition holds applies; the last has no condition)."""
    tree = ast.parse(text)
    fn = next((n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "get_batch_defaults"), None)
    if fn is None:
        return None
    ccs: dict[str, str] = {}
    for n in ast.walk(fn):
        if isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Name) and isinstance(n.value, ast.Call) and \
                ast.unparse(n.value.func).endswith("is_device_capability") and n.value.args:
            try:
                cc = ast.literal_eval(n.value.args[0])
                ccs[n.targets[0].id] = f"{cc[0]}.{cc[1]}"
            except (ValueError, TypeError, IndexError):
                pass
    head = next((n for n in fn.body if isinstance(n, ast.If) and "device_memory" in ast.unparse(n.test)), None)
    if head is None:
        return None
    tiers: list[dict[str, Any]] = []
    node: ast.AST | None = head
    while node is not None:
        if isinstance(node, ast.If):
            body, cond = node.body, _tier_condition(node.test, ccs)
            nxt = node.orelse[0] if len(node.orelse) == 1 and isinstance(node.orelse[0], ast.If) else None
            rest = node.orelse if nxt is None else None
        else:
            body, cond, nxt, rest = node, {}, None, None  # type: ignore[assignment]
        tiers.append({"when": cond, "max_num_batched_tokens": _server_value(body, "default_max_num_batched_tokens"),
                      "max_num_seqs": _server_value(body, "default_max_num_seqs")})
        if nxt is not None:
            node = nxt
        elif rest:
            tiers.append({"when": {}, "max_num_batched_tokens": _server_value(rest, "default_max_num_batched_tokens"),
                          "max_num_seqs": _server_value(rest, "default_max_num_seqs")})
            node = None
        else:
            node = None
    return {"source": f"{path}:{head.lineno}", "tiers": tiers}


def vllm_cudagraph_default(text: str, path: str) -> dict[str, Any] | None:
    """VllmConfig._set_cudagraph_sizes: the largest CUDA-graph capture size when none is given, as
    min(max_num_seqs x decode_query_len x factor, cap), cap per compute-capability family, and whether it is then
    capped by max_num_batched_tokens."""
    tree = ast.parse(text)
    fn = next((n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "_set_cudagraph_sizes"), None)
    if fn is None:
        return None
    out: dict[str, Any] = {"source": f"{path}:{fn.lineno}", "factor": None, "caps": [],
                           "min_batched_tokens": False}
    for n in ast.walk(fn):
        if isinstance(n, ast.IfExp) and isinstance(n.test, ast.Call) and \
                ast.unparse(n.test.func).endswith("is_device_capability_family") and n.test.args and \
                isinstance(n.body, ast.Constant) and isinstance(n.orelse, ast.Constant) and not out["caps"]:
            fam = ast.literal_eval(n.test.args[0])
            out["caps"] = [{"when": {"cc_major": int(fam) // 10}, "value": n.body.value}, {"when": {}, "value": n.orelse.value}]
            out["source"] = f"{path}:{n.lineno}"
        if isinstance(n, ast.Call) and _call_name(n) == "min" and len(n.args) == 2:
            a, b = (ast.unparse(x) for x in n.args)
            m = re.search(r"max_num_seqs \* decode_query_len \* (\d+)$", a)
            if m and out["factor"] is None:
                out["factor"] = int(m.group(1))
                if isinstance(n.args[1], ast.Constant) and not out["caps"]:
                    out["caps"] = [{"when": {}, "value": n.args[1].value}]
                    out["source"] = f"{path}:{n.lineno}"
            if a == "max_num_tokens" and b == "max_cudagraph_capture_size":
                out["min_batched_tokens"] = True
    return out if out["factor"] and out["caps"] else None


def vllm_computed(root: Path) -> dict[str, Any]:
    """Defaults vLLM computes at start-up (not a literal of any field): the batch tiers and the CUDA-graph cap."""
    out: dict[str, Any] = {}
    text = read(root, "vllm/engine/arg_utils.py")
    if text:
        b = vllm_batch_defaults(text, "vllm/engine/arg_utils.py")
        if b:
            out["batch_defaults"] = b
    text = read(root, "vllm/config/vllm.py")
    if text:
        c = vllm_cudagraph_default(text, "vllm/config/vllm.py")
        if c:
            out["cudagraph_max"] = c
    return out


def vllm_cli(root: Path) -> list[dict]:
    configs: dict[str, dict[str, dict[str, Any]]] = {}
    cfg_files = sorted((root / "vllm/config").glob("*.py")) + ([root / "vllm/config.py"]
                                                               if (root / "vllm/config.py").is_file() else [])
    for f in cfg_files:
        try:
            configs.update(class_fields(ast.parse(f.read_text(errors="replace"))))
        except SyntaxError:
            continue
    path = "vllm/engine/arg_utils.py"
    text = read(root, path)
    if text is None:
        return []
    fields = class_fields(ast.parse(text)).get("EngineArgs", {})
    out = []
    for name, f in fields.items():
        node, default, help_ = f["default_node"], f["default"], f["help"]
        ref = None
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            ref = (node.value.id, node.attr)
        elif isinstance(node, ast.Call) and _call_name(node) == "get_field" and len(node.args) == 2 \
                and isinstance(node.args[0], ast.Name) and isinstance(node.args[1], ast.Constant):
            ref = (node.args[0].id, str(node.args[1].value))
        if ref and ref[0] in configs and ref[1] in configs[ref[0]]:
            cf = configs[ref[0]][ref[1]]
            default, help_ = cf["default"], help_ or cf["help"]
        elif not help_:  # `x: T = None` resolved later from the config of the same name: its help is there
            help_ = next((c[name]["help"] for c in configs.values() if name in c and c[name]["help"]), "")
        out.append(entry(name, "cli", f["type"], default, help_, path, f["line"],
                         flag="--" + name.replace("_", "-")))
    # the API server's own flags (--port, --api-key, --served-model-name ...): FrontendArgs
    for rel in ("vllm/entrypoints/common/cli_args.py", "vllm/entrypoints/openai/cli_args.py"):
        text = read(root, rel)
        if text is None:
            continue
        classes = class_fields(ast.parse(text))
        for cls in ("BaseFrontendArgs", "FrontendArgs"):
            for name, f in classes.get(cls, {}).items():
                if name not in fields:
                    out.append(entry(name, "cli", f["type"], f["default"], f["help"], rel, f["line"],
                                     flag="--" + name.replace("_", "-")))
    return out


def sglang_cli(root: Path) -> list[dict]:
    out: list[dict] = []
    files = ["sglang/srt/server_args.py"] + sorted(
        str(p.relative_to(root)) for p in (root / "sglang/srt/arg_groups/fields").glob("*.py"))
    for path in files:
        text = read(root, path)
        if text is None:
            continue
        classes = class_fields(ast.parse(text))
        picked = {"ServerArgs": classes["ServerArgs"]} if path.endswith("server_args.py") and "ServerArgs" in classes \
            else {} if path.endswith("server_args.py") else classes
        for fields in picked.values():
            for name, f in fields.items():
                out.append(entry(name, "cli", f["type"], f["default"], f["help"], path, f["line"],
                                 flag="--" + name.replace("_", "-"), aliases=f["aliases"],
                                 required=True if f["required"] else None))
    return out


_ENV_TYPES = {"EnvBool": "bool", "EnvInt": "int", "EnvFloat": "float", "EnvStr": "str", "EnvTuple": "tuple",
              "EnvJSON": "json"}


def sglang_envs(text: str, path: str) -> list[dict]:
    tree = ast.parse(text)
    lines = text.splitlines()
    out = []
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
        for st in cls.body:
            if not (isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name)):
                continue
            fn = _call_name(st.value)
            if not fn.startswith("Env"):
                continue
            assert isinstance(st.value, ast.Call)
            type_ = next((t for k, t in _ENV_TYPES.items() if fn.startswith(k)), "str")
            default = literal(st.value.args[0]) if st.value.args else literal(_kw(st.value, "default"))
            out.append(entry(st.targets[0].id, "env", type_, default, comments_above(lines, st.lineno), path,
                             st.lineno))
    return out


def transformers_generation(text: str, path: str) -> list[dict]:
    tree = ast.parse(text)
    cls = next((n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == "GenerationConfig"), None)
    if cls is None:
        return []
    doc = ast.get_docstring(cls) or ""
    out = []
    init = next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
    seen = set()
    for node in ast.walk(init) if init else []:
        if not (isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Attribute)
                and isinstance(node.value, ast.Call) and ast.unparse(node.value.func) == "kwargs.pop"
                and node.value.args and isinstance(node.value.args[0], ast.Constant)):
            continue
        name = str(node.value.args[0].value)
        if name in seen:
            continue
        seen.add(name)
        default = literal(node.value.args[1]) if len(node.value.args) > 1 else None
        m = re.search(r"^\s*" + re.escape(name) + r" \(`([^`]*)`[^)]*\):\s*\n(.*?)(?=^\s*\w+ \(`|\Z)", doc, re.M | re.S)
        out.append(entry(name, "generation", m.group(1) if m else "", default, m.group(2) if m else "", path,
                         node.lineno))
    return out


_ENV_CALL = re.compile(r"""os\.(?:environ\.get|getenv)\(\s*["']((?:TORCH|PYTORCH|TORCHINDUCTOR|TORCHDYNAMO)\w*)["']"""
                       r"""(?:\s*,\s*([^()\n]*?|[\w.]+\([^()\n]*\)))?\s*\)""")
_CPP_ENV = re.compile(r'\b(check_env|get_env|getenv)\(\s*"((?:PYTORCH|TORCH)_\w+)"')
_NCCL_HPP = re.compile(r'static std::vector<std::string> (\w+)\s*=\s*\{\s*"(TORCH_\w+)"', re.S)


def _env_reads(rx: re.Pattern[str], text: str, rel: str, out: dict[str, dict]) -> None:
    """Each environment variable `rx` finds read in `text` (name in group 1, the default's source in group 2), the
    first read of a name kept: its default as a literal (or the expression), the comment above it, file and line."""
    lines = None
    for m in rx.finditer(text):
        name = m.group(1)
        if name in out:
            continue
        raw = m.group(2)
        try:
            default = _json_value(ast.literal_eval(raw)) if raw else None
        except (ValueError, SyntaxError):
            default = {"expr": raw.strip()[:200]}
        line = text.count("\n", 0, m.start()) + 1
        lines = lines if lines is not None else text.splitlines()
        out[name] = entry(name, "env", "str", default, comments_above(lines, line), rel, line)


def pytorch_envs(root: Path) -> list[dict]:
    out: dict[str, dict] = {}
    for f in sorted(root.glob("torch/**/*.py")):
        rel = str(f.relative_to(root))
        _env_reads(_ENV_CALL, f.read_text(errors="replace"), rel, out)
    # C++ switches in the headers the wheel ships: c10's check_env (a boolean) and get_env / getenv (a string)
    for f in sorted(p for p in (root / "torch/include").rglob("*") if p.suffix in (".h", ".hpp")):
        rel = str(f.relative_to(root))
        text = f.read_text(errors="replace")
        for m in _CPP_ENV.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            help_ = " ".join(ln.strip().lstrip("/").strip() for ln in _comment_block(text.splitlines(), line, "//"))
            out.setdefault(m.group(2), entry(m.group(2), "env", "bool" if m.group(1) == "check_env" else "str", None,
                                             help_, rel, line))
    hpp = "torch/include/torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp"
    text = read(root, hpp)
    if text:
        lines = text.splitlines()
        for m in _NCCL_HPP.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            help_ = " ".join(ln.strip().lstrip("/").strip() for ln in _comment_block(lines, line, "//"))
            out.setdefault(m.group(2), entry(m.group(2), "env", "str", None, help_, hpp, line))
    return list(out.values())


def _comment_block(lines: list[str], lineno: int, mark: str) -> list[str]:
    block: list[str] = []
    i = lineno - 2
    while i >= 0 and lines[i].strip().startswith(mark):
        block.append(lines[i])
        i -= 1
    return list(reversed(block))


_TRT_TOP = ("BaseLlmArgs", "TorchLlmArgs", "TrtLlmArgs", "LlmArgs")


def trtllm_llm_args(text: str, path: str) -> list[dict]:
    """llm_args.py: the LLM API's pydantic fields (the keys of an --extra_llm_api_options / --config YAML); a nested
    config class's fields as `attr.field`, attr being the top-level field whose type names the class."""
    classes = class_fields(ast.parse(text))
    out: list[dict] = []
    top = {n: f for c in _TRT_TOP for n, f in classes.get(c, {}).items()}
    for name, f in top.items():
        out.append(entry(name, "config", f["type"], f["default"], f["help"], path, f["line"]))
    for cls, fields in classes.items():
        if cls in _TRT_TOP:
            continue
        for attr, tf in top.items():
            if re.search(r"\b" + re.escape(cls) + r"\b", tf["type"]):
                for name, f in fields.items():
                    out.append(entry(f"{attr}.{name}", "config", f["type"], f["default"], f["help"], path, f["line"]))
    return out


_TRT_ENV = re.compile(r"""os\.(?:environ\.get|getenv)\(\s*["']((?:TRTLLM|TLLM)_\w+)["']"""
                      r"""(?:\s*,\s*([^()\n]*?|[\w.]+\([^()\n]*\)))?\s*\)""")


def trtllm_envs(root: Path) -> list[dict]:
    """TensorRT-LLM's environment switches as its Python reads them: `os.environ.get("TRTLLM_ENABLE_PDL", "1")`,
    `os.getenv("TRTLLM_SERVER_DISABLE_GC", "0")` (TRTLLM_* and TLLM_*), the first read of each name with its default
    and the comment above it."""
    out: dict[str, dict] = {}
    for f in sorted((root / "tensorrt_llm").rglob("*.py")):
        rel = str(f.relative_to(root))
        _env_reads(_TRT_ENV, f.read_text(errors="replace"), rel, out)
    return list(out.values())


def click_options(text: str, path: str) -> list[dict]:
    """A click command's options (trtllm-serve): `@click.option("--name", ..., default=..., help=...)`."""
    out = []
    for node in ast.walk(ast.parse(text)):
        if not (isinstance(node, ast.Call) and ast.unparse(node.func).endswith("click.option")):
            continue
        names = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        longs = [n for n in names if n.startswith("--")]
        if not longs:
            continue
        help_ = _kw(node, "help")
        type_ = _kw(node, "type")
        flag = longs[0]
        is_flag = _kw(node, "is_flag")
        default = literal(_kw(node, "default")) if _kw(node, "default") is not None else (
            False if isinstance(is_flag, ast.Constant) and is_flag.value else None)
        out.append(entry(flag.lstrip("-").replace("-", "_"), "cli", ast.unparse(type_) if type_ is not None else "",
                         default, help_.value if isinstance(help_, ast.Constant) and isinstance(help_.value, str)
                         else "", path, node.lineno, flag=flag, aliases=names))
    return out


# --- C, C++, Go, Rust, Markdown -----------------------------------------------------------------------------------------

_NCCL_PARAM = re.compile(r"NCCL_PARAM\(\s*(\w+)\s*,\s*\"(\w+)\"\s*,\s*([^;\n]+?)\)\s*;?\s*$", re.M)
_NCCL_GETENV = re.compile(r"(?:ncclGetEnv|getenv|ncclGetLevel)\([^;]*?\"(NCCL_\w+)\"(?:\s*,\s*\"(NCCL_\w+)\")?\s*\)")


def nccl_params(root: Path) -> list[dict]:
    out: dict[str, dict] = {}
    for f in sorted(p for p in (root / "src").rglob("*") if p.suffix in (".cc", ".h", ".cu", ".cpp", ".in")):
        rel = str(f.relative_to(root))
        text = f.read_text(errors="replace")
        for m in _NCCL_PARAM.finditer(text):
            name = "NCCL_" + m.group(2)
            raw = m.group(3).strip()
            try:
                default: Any = int(raw, 0)
            except ValueError:
                default = {"expr": raw}
            line = text.count("\n", 0, m.start()) + 1
            out.setdefault(name, entry(name, "env", "int64", default, "", rel, line))
        for m in _NCCL_GETENV.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            for name in filter(None, m.groups()):
                out.setdefault(name, entry(name, "env", "str", None, "", rel, line))
    return list(out.values())


_OLLAMA_VAR = re.compile(r"^\s*(\w+)\s*=\s*(Bool|BoolWithDefault|Uint|Uint64|String|Int|Float)\(\"(\w+)\"(?:,\s*([^)\n]+))?\)",
                         re.M)
_OLLAMA_MAP = re.compile(r"\"(\w+)\":\s*\{\"\1\",\s*(.+?),\s*\"((?:[^\"\\]|\\.)*)\"\}")


def ollama_env(text: str, path: str) -> list[dict]:
    types = {"Bool": "bool", "BoolWithDefault": "bool", "Uint": "uint", "Uint64": "uint64", "String": "string",
             "Int": "int", "Float": "float"}
    decl: dict[str, tuple[str, Any]] = {}
    for m in _OLLAMA_VAR.finditer(text):
        raw = m.group(4)
        default: Any = {"Bool": False, "String": ""}.get(m.group(2))
        if raw is not None:
            try:
                default = json.loads(raw.strip())
            except ValueError:
                default = {"expr": raw.strip()}
        decl[m.group(3)] = (types[m.group(2)], default)
    out = []
    for m in _OLLAMA_MAP.finditer(text):
        name, value, help_ = m.group(1), m.group(2), m.group(3)
        type_, default = decl.get(name, ("string", None))
        arg = re.search(r"\w+\((true|false|\d+)\)$", value.strip())
        if arg:
            default = json.loads(arg.group(1))
        dm = re.search(r"\(default:? ([^)]+)\)", help_)
        if default in (None, "") and dm:
            default = dm.group(1).strip()
        line = text.count("\n", 0, m.start()) + 1
        out.append(entry(name, "env", type_, default, help_, path, line))
    return out


def tgi_args(text: str, path: str) -> list[dict]:
    start = text.find("struct Args {")
    if start < 0:
        return []
    end = text.find("\n}", start)
    body = text[start:end]
    base_line = text.count("\n", 0, start) + 1
    out: list[dict] = []
    doc: list[str] = []
    attr = ""
    for i, ln in enumerate(body.splitlines()):
        s = ln.strip()
        if s.startswith("///"):
            doc.append(s[3:].strip())
            continue
        if s.startswith("#["):
            attr += s
            continue
        m = re.match(r"(?:pub\s+)?(\w+):\s*(.+?),?$", s)
        if m and attr:
            name, type_ = m.group(1), m.group(2).rstrip(",")
            dv = re.search(r"default_value(?:_t)?\s*=\s*(\"[^\"]*\"|[^,)\]]+)", attr)
            default: Any = None
            if dv:
                raw = dv.group(1).strip()
                default = raw.strip('"') if raw.startswith('"') else _rust_literal(raw)
            elif type_ == "bool":
                default = False
            help_ = " ".join(doc)
            line = base_line + i
            if "long" in attr:
                out.append(entry(name, "cli", type_, default, help_, path, line, flag="--" + name.replace("_", "-")))
            if re.search(r"\benv\b", attr):
                out.append(entry(name.upper(), "env", type_, default, help_, path, line, flag_of=name))
        if not s.startswith("#[") and not s.startswith("///"):
            doc, attr = [], ""
    return out


def _rust_literal(raw: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return {"expr": raw}


def _c_strings(text: str) -> str:
    return "".join(bytes(m, "utf-8").decode("unicode_escape", "replace")
                   for m in re.findall(r'"((?:[^"\\]|\\.)*)"', text))


def llamacpp_args(text: str, path: str) -> list[dict]:
    out = []
    for m in re.finditer(r"add_opt\(common_arg\(\s*\{([^}]*)\}\s*,", text):
        flags = re.findall(r'"([^"]+)"', m.group(1))
        rest = text[m.end(): m.end() + 4000]
        nxt = rest.find("add_opt(common_arg(")
        chunk = rest if nxt < 0 else rest[:nxt]
        # the value hint ("N") and the help: string literals before the handler lambda
        head = chunk.split("[](", 1)[0]
        strings = re.findall(r'"((?:[^"\\]|\\.)*)"', head)
        help_ = strings[-1] if strings else ""
        if len(strings) > 1 and re.fullmatch(r"[A-Z0-9_|<>{},.\- ]+", strings[0] or ""):
            help_ = " ".join(strings[1:])
        env = re.search(r'\.set_env\("(\w+)"\)', chunk)
        long_flags = [f for f in flags if f.startswith("--")]
        name = (long_flags or flags or ["?"])[0]
        dm = re.search(r"default: ([^)%]+)\)", help_)
        default: Any = dm.group(1).strip() if dm else None
        line = text.count("\n", 0, m.start()) + 1
        out.append(entry(name, "cli", "", default, help_, path, line, flag=name, aliases=flags,
                         env=env.group(1) if env else None))
        if env:
            out.append(entry(env.group(1), "env", "", default, help_, path, line, flag_of=name))
    return out


def triton_model_config(text: str, path: str) -> list[dict]:
    out: dict[str, dict] = {}
    section = ""
    for i, ln in enumerate(text.splitlines(), 1):
        if ln.startswith("#"):
            section = ln.strip("# ").strip()
        m = re.match(r"\|\s*`(\w+)`\s*\|\s*(.*?)\s*\|\s*$", ln)
        if not m:
            continue
        name, help_ = m.group(1), m.group(2)
        dm = re.search(r"[Dd]efault (?:is|value is|=|:)\s*`?([\w.\-]+)`?", help_)
        out.setdefault(name, entry(name, "config", "", dm.group(1) if dm else None, help_, path, i,
                                   section=section or None))
    return list(out.values())


_CUDA_LINE = re.compile(r"^(\w+)\t([^\t]*)\t([^\t]*)\t(.*)$")


def cuda_doc(text: str, path: str) -> list[dict]:
    """docs extract: `NAME<TAB>type<TAB>default<TAB>description` lines under a `# url: URL` header."""
    url = ""
    out = []
    for i, ln in enumerate(text.splitlines(), 1):
        if ln.startswith("# url:"):
            url = ln.split(":", 1)[1].strip()
            continue
        m = _CUDA_LINE.match(ln)
        if m:
            default: Any = m.group(3) if m.group(3) != "-" else None
            out.append(entry(m.group(1), "env", m.group(2), default, m.group(4), path, i, doc=url))
    return out


# --- per project: which parser reads which file -------------------------------------------------------------------------

def harvest_version(project: str, root: Path) -> list[dict]:
    out: list[dict] = []

    def one(rel: str, fn: Callable[[str, str], list[dict]]) -> None:
        text = read(root, rel)
        if text is not None:
            out.extend(fn(text, rel))

    if project == "vllm":
        one("vllm/envs.py", vllm_envs)
        out.extend(vllm_cli(root))
    elif project == "sglang":
        one("sglang/srt/environ.py", sglang_envs)
        out.extend(sglang_cli(root))
    elif project == "transformers":
        one("transformers/generation/configuration_utils.py", transformers_generation)
    elif project == "pytorch":
        out.extend(pytorch_envs(root))
    elif project == "ollama":
        one("envconfig/config.go", ollama_env)
    elif project == "nccl":
        out.extend(nccl_params(root))
    elif project == "tgi":
        one("launcher/src/main.rs", tgi_args)
    elif project == "triton_trtllm":
        one("docs/model_config.md", triton_model_config)
    elif project == "llamacpp":
        for rel in ("common/arg.cpp", "vendor/llama.cpp/common/arg.cpp"):
            one(rel, llamacpp_args)
    elif project == "tensorrt_llm":
        one("tensorrt_llm/llmapi/llm_args.py", trtllm_llm_args)
        one("tensorrt_llm/commands/serve.py", click_options)
        out.extend(trtllm_envs(root))
    elif project == "cuda":
        for f in sorted(root.glob("*.tsv")):
            one(f.name, cuda_doc)
    return out


def _vkey(v: str) -> Any:
    try:
        return (0, Version(v.lstrip("v").split("-")[0]))
    except InvalidVersion:
        return (1, v)


def build_project(project: str, src: Path) -> dict:
    spec = PROJECTS[project]
    base = src / project
    versions = sorted((d.name for d in base.iterdir() if d.is_dir()), key=_vkey) if base.is_dir() else []
    settings: dict[str, dict] = {}
    for v in versions:
        for e in harvest_version(project, base / v):
            key = e["name"] if e["kind"] != "cli" or e["name"].startswith("-") else e["name"]
            key = f"{e['kind']}:{key}"
            s = settings.get(key)
            if s is None:
                s = settings[key] = {"name": e["name"], "kind": e["kind"], "defaults": [], "versions": []}
            if not s["versions"] or s["versions"][-1] != v:
                s["versions"].append(v)
            if not s["defaults"] or s["defaults"][-1][1] != e["default"]:
                s["defaults"].append([v, e["default"]])
            if "parser" in e:
                pts = s.setdefault("parsers", [])
                if not pts or pts[-1][1] != e["parser"]:
                    pts.append([v, e["parser"]])
            for k in ("type", "help", "flag", "aliases", "env", "flag_of", "raw_default", "section", "required"):
                if e.get(k) not in (None, "", []):
                    s[k] = e[k]
                elif k in s and k in ("raw_default", "required"):
                    del s[k]
            lines = spec.get("lines", True)
            s["source"] = f"{e['path']}:{e['line']}" if lines else e["path"]
            ref = v.split("@", 1)[1] if "@" in v else "v" + v.lstrip("v")
            s["url"] = (e.get("doc") or spec["url"].format(version=v.lstrip("v"), ref=ref, path=e["path"],
                                                          line=e["line"])) \
                if "{doc}" != spec["url"] or e.get("doc") else ""
    rows = []
    for key in sorted(settings):
        s = settings[key]
        vs = s.pop("versions")
        s["since"], s["until"] = vs[0], vs[-1]
        if len(vs) != versions.index(vs[-1]) - versions.index(vs[0]) + 1:
            s["present_in"] = vs  # gaps: removed and re-added
        rows.append(s)
    provenance = (Path(base / "PROVENANCE").read_text().strip() if (base / "PROVENANCE").is_file() else "")
    out = {"project": project, "label": spec["label"], "versions": versions, "count": len(rows),
           "provenance": provenance}
    if project == "vllm":
        computed = {v: vllm_computed(base / v) for v in versions}
        if any(computed.values()):
            out["computed"] = computed
    out["settings"] = rows
    return out


def build(src: Path, out: Path, projects: Iterable[str] | None = None, check: bool = True) -> dict[str, int]:
    out.mkdir(parents=True, exist_ok=True)
    prev_path = out / "counts.json"
    prev: dict[str, int] = json.loads(prev_path.read_text()) if prev_path.is_file() else {}
    counts: dict[str, int] = {}
    failures = []
    for project in projects or PROJECTS:
        if not (src / project).is_dir():
            continue
        data = build_project(project, src)
        counts[project] = data["count"]
        if check and prev.get(project) and data["count"] < MIN_RATIO * prev[project]:
            failures.append(f"{project}: {data['count']} settings, the previous harvest found {prev[project]}")
            continue
        (out / f"{project}.json").write_text(json.dumps(data, indent=1, sort_keys=False, ensure_ascii=False) + "\n")
    if failures:
        raise SystemExit("harvest found far fewer settings than last time (kept the previous files):\n  "
                         + "\n  ".join(failures))
    merged = {**prev, **counts}
    prev_path.write_text(json.dumps(dict(sorted(merged.items())), indent=1) + "\n")
    return counts


# --- gather (network: a release's files into SRC) ---------------------------------------------------------------------

def gather_git(project: str, gitdir: str, tags: list[str], src: Path) -> None:
    for tag in tags:
        dest = src / project / tag.lstrip("v").split("-")[0] if project != "nccl" else src / project / tag.lstrip("v")
        for path in PROJECTS[project]["git"]:
            listing = subprocess.run(["git", "--git-dir", gitdir, "ls-tree", "-r", "--name-only", tag, path],
                                     capture_output=True, text=True, check=True).stdout.split()
            for rel in listing:
                blob = subprocess.run(["git", "--git-dir", gitdir, "show", f"{tag}:{rel}"], capture_output=True,
                                      check=True).stdout
                (dest / rel).parent.mkdir(parents=True, exist_ok=True)
                (dest / rel).write_bytes(blob)
        (src / project / "PROVENANCE").write_text(f"git show TAG:PATH on a mirror of the repository, tags {', '.join(tags)}\n")


def gather_files(project: str, version: str, folder: Path, src: Path) -> None:
    """Files read by other means (the stored-file index at a commit) into SRC/<project>/<version>/, each checked to
    stay under it."""
    for f in sorted(p for p in folder.rglob("*") if p.is_file()):
        rel = str(f.relative_to(folder))
        dest = safe_member_path(src / project / version, rel)
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(f.read_bytes())


def safe_member_path(root: Path, name: str) -> Path:
    """Where an archive member `name` goes under `root`; an absolute name, a `..` part or a path that resolves
    outside `root` (a symlink already there) is refused: a wheel is someone else's file, and fnmatch's `*` matches
    `../`, so `torch/*.py` would otherwise let `torch/../../usercustomize.py` land anywhere."""
    parts = name.replace("\\", "/").split("/")
    if name.startswith(("/", "\\")) or (len(name) > 1 and name[1] == ":") or ".." in parts:
        raise ValueError(f"refusing archive member {name!r}: absolute, or with a '..' part")
    dest = (root / name).resolve()
    base = root.resolve()
    if dest != base and base not in dest.parents:
        raise ValueError(f"refusing archive member {name!r}: it resolves outside {root}")
    return root / name


def gather_wheel(project: str, versions: list[str], src: Path) -> None:
    import fnmatch

    spec = PROJECTS[project]
    for v in versions:
        with tempfile.TemporaryDirectory() as tmp:
            subprocess.run([sys.executable, "-m", "pip", "download", f"{spec['wheel']}=={v}", "--no-deps",
                            "--only-binary", ":all:", "-d", tmp, "-q"], check=True)
            wheel = next(Path(tmp).glob("*.whl"))
            with zipfile.ZipFile(wheel) as z:
                for name in z.namelist():
                    if any(fnmatch.fnmatch(name, pat) for pat in spec["files"]):
                        dest = safe_member_path(src / project / v, name)
                        dest.parent.mkdir(parents=True, exist_ok=True)
                        dest.write_bytes(z.read(name))
    (src / project / "PROVENANCE").write_text(f"files of the released wheels ({spec['wheel']} {', '.join(versions)})\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="parse SRC/<project>/<version>/... into OUT/<project>.json")
    b.add_argument("src", type=Path)
    b.add_argument("out", type=Path)
    b.add_argument("--project", action="append")
    b.add_argument("--no-check", action="store_true", help="skip the 'far fewer than last time' check")
    g = sub.add_parser("gather", help="copy the defining files of each release into SRC")
    g.add_argument("src", type=Path)
    g.add_argument("--git", nargs=3, action="append", metavar=("PROJECT", "GITDIR", "TAGS"), default=[],
                   help="TAGS: comma-separated")
    g.add_argument("--wheel", nargs=2, action="append", metavar=("PROJECT", "VERSIONS"), default=[])
    g.add_argument("--files", nargs=3, action="append", metavar=("PROJECT", "VERSION", "DIR"), default=[],
                   help="copy the files under DIR (read by hand at a release or commit) into SRC/PROJECT/VERSION")
    a = ap.parse_args(argv)
    if a.cmd == "build":
        if not a.src.is_dir():
            print(f"error: {a.src} is not a directory of extracts (SRC/<project>/<version>/<path>)", file=sys.stderr)
            return 2
        counts = build(a.src, a.out, a.project, check=not a.no_check)
        for k, n in counts.items():
            print(f"{k:16} {n:6}")
        return 0
    for project, gitdir, tags in a.git:
        gather_git(project, gitdir, tags.split(","), a.src)
    for project, versions in a.wheel:
        gather_wheel(project, versions.split(","), a.src)
    for project, version, folder in a.files:
        gather_files(project, version, Path(folder), a.src)
    return 0


if __name__ == "__main__":
    sys.exit(main())
