"""The stager registry: how a scenario case's `stage:` block becomes a staged host (tests/scenarios/README.md).

Each key of `stage:` names a registered stager; its value is that stager's argument. A stager is a function

    @stager("name")                      # or @stager("name", before_host=True)
    def stage_name(ctx: StageContext, arg: Any) -> None: ...

`before_host=True` stagers run first and only set options on `ctx` (`ctx.variant`, `ctx.packages`, `ctx.caches`) that shape the base host `support.staged_host.stage_host` builds; the others run after it, in
the order the case lists them, and write into the staged tree: `ctx.path(p)` maps a host path into the staged root
(`~/x` into the staged HOME, `/var/log/x` under the root), `ctx.text(v)` reads a value as a file of the case
directory when one exists by that name, else as inline text, `ctx.env` is the environment every command on the host
runs under (the sshd's SetEnv), and `ctx.logs` the paths passed as `--log`; `ctx.cleanups.append(fn)` registers what to stop after the case
(`ctx.close()`). A stager raises `StageError` (one line) for a bad argument.

Node and serving-engine stagers live in tests/support/stage_node.py and stage_engine.py and are imported at the
bottom of this module once they exist in the tree (add the import there when you add the module).
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from support import staged_host as sh

StagerFn = Callable[["StageContext", Any], None]


class StageError(ValueError):
    """A case's `stage:` block names an unknown stager or gives one a bad argument."""


@dataclass
class Stager:
    name: str
    fn: StagerFn
    before_host: bool = False


STAGERS: dict[str, Stager] = {}


def stager(name: str, *, before_host: bool = False) -> Callable[[StagerFn], StagerFn]:
    """Register `fn(ctx, arg)` as the stager for `stage: {name: arg}`."""

    def deco(fn: StagerFn) -> StagerFn:
        if name in STAGERS and STAGERS[name].fn is not fn:
            raise StageError(f"stager {name!r} is registered twice ({STAGERS[name].fn.__module__} and {fn.__module__})")
        STAGERS[name] = Stager(name, fn, before_host)
        return fn

    return deco


@dataclass
class StageContext:
    case_dir: Path
    tmp: Path
    variant: str = "rtx-pro-6000x8"
    packages: dict[str, str] | None = None
    caches: list[str] = field(default_factory=lambda: ["flashinfer_jit"])
    staged: sh.StagedHost | None = None
    logs: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
    """Free space for stagers that cooperate (e.g. a fake nvidia-smi spec the node stagers edit)."""
    cleanups: list[Callable[[], None]] = field(default_factory=list)
    """Run by `close()` after the case (stop staged processes), last registered first."""

    def close(self) -> None:
        while self.cleanups:
            try:
                self.cleanups.pop()()
            except Exception:  # one failing cleanup must not leave the others' processes running
                pass
        if self.staged is not None and hasattr(self.staged, "cleanup"):
            self.staged.cleanup()
    cleanups: list[Callable[[], None]] = field(default_factory=list)
    """Called by the harness when the case is done (stagers that start processes stop them here)."""

    @property
    def root(self) -> Path:
        assert self.staged is not None, "the host is not built yet (use before_host=False)"
        return self.staged.root

    @property
    def home(self) -> Path:
        assert self.staged is not None
        return self.staged.home

    @property
    def env(self) -> dict[str, str]:
        assert self.staged is not None
        return self.staged.env

    def path(self, host_path: str) -> Path:
        """Where a host path lives in the staged tree: `~/...` under HOME, anything else under the root."""
        if host_path.startswith("~/"):
            return self.home / host_path[2:]
        return self.root / host_path.lstrip("/")

    def text(self, value: Any) -> str:
        """A value as text: a file of the case directory by that name, else the value itself."""
        if isinstance(value, str) and "\n" not in value and (self.case_dir / value).is_file():
            return (self.case_dir / value).read_text()
        if isinstance(value, (dict, list)):
            return json.dumps(value, indent=1)
        return str(value)

    def write(self, host_path: str, value: Any) -> Path:
        p = self.path(host_path)
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(value, str) and "\n" not in value and (self.case_dir / value).is_file():
            shutil.copy(self.case_dir / value, p)
        else:
            p.write_text(self.text(value))
        return p


def stage(case_dir: Path, tmp: Path, spec: dict[str, Any]) -> StageContext:
    """Build the staged host a case's `stage:` block describes."""
    unknown = [k for k in spec if k not in STAGERS]
    if unknown:
        raise StageError(f"unknown stager(s) {', '.join(unknown)}; registered: {', '.join(sorted(STAGERS))}")
    ctx = StageContext(case_dir=case_dir, tmp=tmp)
    for name, arg in spec.items():
        if STAGERS[name].before_host:
            STAGERS[name].fn(ctx, arg)
    ctx.staged = sh.stage_host(tmp, variant=ctx.variant, caches=ctx.caches, packages=ctx.packages)
    try:
        for name, arg in spec.items():
            if not STAGERS[name].before_host:
                STAGERS[name].fn(ctx, arg)
    except BaseException:
        ctx.close()
        raise
    return ctx


# --- the base host ------------------------------------------------------------------------------------------------

GPU_PRESETS: dict[str, dict[str, Any]] = {
    # model -> staged_host.GpuSpec fields (nvidia-smi names as the driver prints them)
    "rtx-pro-6000": dict(name=sh.RTX_PRO_6000, compute_cap="12.0", architecture="Blackwell", power_w=330.0,
                         power_limit_w=600.0, util_pct=98, sm_clock=2280, sm_clock_max=2617, memory_mib=97887),
    "rtx-pro-6000-server": dict(name="NVIDIA RTX PRO 6000 Blackwell Server Edition", compute_cap="12.0",
                                architecture="Blackwell", power_w=380.0, power_limit_w=600.0, util_pct=97,
                                sm_clock=2310, sm_clock_max=2617, memory_mib=97887),
    "rtx-5090": dict(name="NVIDIA GeForce RTX 5090", compute_cap="12.0", architecture="Blackwell", power_w=410.0,
                     power_limit_w=575.0, util_pct=95, sm_clock=2400, sm_clock_max=3090, memory_mib=32607),
    "rtx-4090": dict(name="NVIDIA GeForce RTX 4090", compute_cap="8.9", architecture="Ada Lovelace", power_w=300.0,
                     power_limit_w=450.0, util_pct=95, sm_clock=2520, sm_clock_max=2790, memory_mib=24564),
    "l40s": dict(name="NVIDIA L40S", compute_cap="8.9", architecture="Ada Lovelace", power_w=250.0,
                 power_limit_w=350.0, util_pct=90, sm_clock=2490, sm_clock_max=2520, memory_mib=46068),
    "b200": dict(name="NVIDIA B200", compute_cap="10.0", architecture="Blackwell", power_w=850.0, power_limit_w=1000.0,
                 util_pct=90, sm_clock=1965, sm_clock_max=1965, memory_mib=183359, nvlink=True),
    "a100": dict(name="NVIDIA A100-SXM4-80GB", compute_cap="8.0", architecture="Ampere", power_w=250.0,
                 power_limit_w=400.0, util_pct=80, sm_clock=1410, sm_clock_max=1410, memory_mib=81920, nvlink=True),
    "h100": dict(name="NVIDIA H100 80GB HBM3", compute_cap="9.0", architecture="Hopper", power_w=500.0,
                 power_limit_w=700.0, util_pct=90, sm_clock=1980, sm_clock_max=1980, memory_mib=81559, nvlink=True),
    "h100-pcie": dict(name="NVIDIA H100 PCIe", compute_cap="9.0", architecture="Hopper", power_w=250.0,
                      power_limit_w=350.0, util_pct=90, sm_clock=1755, sm_clock_max=1755, memory_mib=81559),
    "h200-synth": dict(name="NVIDIA H200", compute_cap="9.0", architecture="Hopper", power_w=520.0,
                       power_limit_w=700.0, util_pct=90, sm_clock=1980, sm_clock_max=1980, memory_mib=143771,
                       nvlink=True),
}


@stager("gpu", before_host=True)
def stage_gpu(ctx: StageContext, arg: Any) -> None:
    """`gpu: {model: h200|rtx-pro-6000|b200|..., count: N, nvlink: bool, power_w: .., power_limit_w: .., ...}`;
    `h200` with count 1 or 2 is the real H200 capture; `none` stages a host without nvidia-smi."""
    arg = {"model": arg} if isinstance(arg, str) else dict(arg or {})
    model = str(arg.pop("model", "rtx-pro-6000")).lower()
    count = arg.pop("count", None)
    if model == "none":
        ctx.variant = "no-nvidia-smi"
        return
    if model == "h200" and count in (None, 1, 2) and not arg:
        ctx.variant = "h200" if count in (None, 1) else "h200x2"
        return
    if model == "h200":
        model = "h200-synth"
    if model not in GPU_PRESETS:
        raise StageError(f"gpu model {model!r} unknown; one of h200, {', '.join(sorted(GPU_PRESETS))}")
    fields = {**GPU_PRESETS[model], **arg}
    bad = [k for k in fields if k not in sh.GpuSpec.__dataclass_fields__]
    if bad:
        raise StageError(f"gpu: unknown field(s) {', '.join(bad)}")
    spec = sh.GpuSpec(count=int(count or 1), **fields)
    key = f"scenario:{json.dumps(spec.__dict__, sort_keys=True)}"
    sh.VARIANTS.setdefault(key, spec)
    ctx.variant = key


@stager("packages", before_host=True)
def stage_packages(ctx: StageContext, arg: Any) -> None:
    """`packages: {vllm: 0.11.2, flashinfer-python: 0.5.3}` (dist-info metadata in the staged site-packages;
    replaces the default set). `packages: default` keeps torch/triton/flashinfer/vllm."""
    if arg == "default":
        ctx.packages = None
        return
    if not isinstance(arg, dict):
        raise StageError("packages: expected a mapping of distribution name -> version")
    ctx.packages = {str(k): str(v) for k, v in arg.items()}


@stager("caches", before_host=True)
def stage_caches(ctx: StageContext, arg: Any) -> None:
    """`caches: [flashinfer_jit, flashinfer_autotune, ...]`, names from `staged_host.ALL_CACHES`."""
    caches = list(arg or [])
    bad = [c for c in caches if c not in sh.ALL_CACHES]
    if bad:
        raise StageError(f"caches: unknown {', '.join(bad)}; one of {', '.join(sh.ALL_CACHES)}")
    ctx.caches = caches


@stager("files")
def stage_files(ctx: StageContext, arg: Any) -> None:
    """`files: {"~/.cache/x.json": "file-in-case-dir-or-inline-text", "/etc/y": {...json...}}`."""
    for host_path, value in dict(arg or {}).items():
        ctx.write(host_path, value)


@stager("logs")
def stage_logs(ctx: StageContext, arg: Any) -> None:
    """`logs: {"/var/log/vllm.log": "vllm.log"}`: staged like files and passed as `--log`."""
    for host_path, value in dict(arg or {}).items():
        ctx.logs.append(str(ctx.write(host_path, value)))


@stager("env")
def stage_env(ctx: StageContext, arg: Any) -> None:
    """`env: {VLLM_FLASHINFER_AUTOTUNE_CACHE_DIR: "~/fi"}`: set for every command on the host (`~/` -> staged HOME)."""
    for k, v in dict(arg or {}).items():
        v = str(v)
        ctx.env[str(k)] = str(ctx.path(v)) if v.startswith("~/") else v


# Stager modules of the node and serving-engine prongs register theirs on import:
from support import stage_engine  # noqa: E402,F401
from support import stage_node  # noqa: E402,F401
from support import stage_account  # noqa: E402,F401
from support import stage_residual  # noqa: E402,F401
