"""Kernel inventory: what the installed libraries carry for this GPU's architecture."""

from __future__ import annotations

import re
from typing import Any

from orchestrator.hosts.base import Host
from orchestrator.probes import interpreter
from orchestrator.prongs.autotune.probe import gpu_identity
from orchestrator.probes.results import KernelInventory, LibraryKernels
from orchestrator.probes.runner import ProbeUnavailable, run_script
from orchestrator.probes.session import LISTINGS, shared

HOW = {"fatbin": "fatbin headers read", "cuobjdump": "cuobjdump --list-elf", "cached": "unchanged since last listed"}


def arch_of(compute_cap: str | None) -> str | None:
    """"12.0" -> "sm_120"."""
    if not compute_cap or not re.fullmatch(r"\d+\.\d+", compute_cap.strip()):
        return None
    major, minor = compute_cap.strip().split(".")
    return f"sm_{major}{minor}"


def inventory_from_output(data: dict[str, Any]) -> KernelInventory:
    """Pure: a KernelInventory from the kernels script's output."""
    arch = data.get("arch")
    digits = re.sub(r"\D", "", arch or "")
    libs = []
    for lib in data.get("libraries") or []:
        notes = list(lib.get("notes") or [])
        if lib.get("tile_functions"):
            notes.append("tile candidates from " + ", ".join(lib["tile_functions"]))
        if lib.get("arch_files"):
            notes.append(f"{len(lib['arch_files'])} source file(s) mention {arch}: " + ", ".join(lib["arch_files"][:5]))
        if lib.get("so_scanned"):
            how = lib.get("listed_by") or {}
            detail = ", ".join(f"{HOW.get(k, k)}: {n}" for k, n in sorted(how.items()))
            notes.append(f"GPU code listed in {lib['so_scanned']} shared object(s)" + (f" ({detail})" if detail else ""))
        libs.append(LibraryKernels(name=lib["name"], path=lib.get("path"), tile_candidates=lib.get("tile_candidates") or [],
                                   compiled_archs=lib.get("compiled_archs") or [],
                                   backends_for_arch=lib.get("backends_for_arch") or [], notes=notes))
    jit = data.get("flashinfer_jit") or {}
    dirs = [f"{d['dir']} ({d['cached_ops']} cached ops)" for d in jit.get("dirs") or []]
    if dirs:
        fi = next((lib for lib in libs if lib.name == "flashinfer"), None)
        if fi is None:
            fi = LibraryKernels(name="flashinfer", notes=["package not importable from this interpreter"])
            libs.append(fi)
        fi.jit_arch_dirs = dirs
        if digits and not any(digits in d["dir"].split("/")[-1] for d in jit["dirs"]):
            fi.notes.append(f"no JIT-cache directory for {arch} under {jit.get('root')}")
    timings = {k: float(v) for k, v in (data.get("timings") or {}).items() if isinstance(v, (int, float))}
    return KernelInventory(arch=arch, libraries=libs, cuobjdump=bool(data.get("cuobjdump")), timings=timings)


async def collect_kernel_inventory(host: Host, arch: str | None = None, python: str | None = None) -> KernelInventory:
    """Per-arch tile candidates, JIT-cache arch dirs and compiled archs of the installed inference libraries.

    Shared objects listed before (this process, this host) and unchanged since (size and mtime, checked on the host)
    are not read again (`probes.session.LISTINGS`)."""
    if arch is None:
        _, cc = await gpu_identity(host)
        arch = arch_of(cc)
    try:
        interp = await resolve_interpreter(host, python)
        params = {"arch": arch, "budget_s": 60, "known": LISTINGS.known_for(host.name)}
        data = await run_script(host, interp.path, "kernels", interp.script_params(params), timeout_s=150,
                                isolated=True)
    except ProbeUnavailable as exc:
        return KernelInventory(host=host.name, available=False, reason=str(exc), arch=arch)
    LISTINGS.update(host.name, data.get("listings") or {})
    inv = inventory_from_output(data)
    inv.host = host.name
    inv.commands = [f"{interp.path} -I -S - < kernels.py ({interp.source})"]
    if arch is None:
        inv.reason = "GPU architecture unknown (no nvidia-smi): per-arch tiles not looked for"
    if interp.gap:
        inv.reason = "; ".join(filter(None, [inv.reason, interp.gap]))
    return inv


def interpreter_key(python: str | None) -> tuple[str, str | None]:
    """The probe session's key of the interpreter chosen for `python` (the host survey fills it for None)."""
    return ("interpreter", python)


async def resolve_interpreter(host: Host, python: str | None) -> interpreter.Interpreter:
    """interpreter.resolve, once per host and --python within a run (the kernel and Python-env probes share it)."""
    return await shared(host, interpreter_key(python), lambda: interpreter.resolve(host, python))
