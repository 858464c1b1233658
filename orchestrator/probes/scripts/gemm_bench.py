"""Time GEMMs over a sweep of M on this host's GPU, in the dtypes it runs natively; print one JSON document.

stdlib + torch, Python >= 3.8. Run as `python - PARAMS_JSON` with this file on stdin (or as a file with flags, see
`parse_args`). Params: {"shapes": [{"name", "n", "k"}], "m": [...], "dtypes": ["bf16", "fp8", "nvfp4", "mxfp4"],
"budget_s": 60, "repeats": 15, "warmup": 3, "device_index": 0, "sample_interval_s": 0.2, "l2_bytes": null,
"max_buffer_bytes": 4e9, "cpu_sanity": false, "hold_m": [...], "hold_s": 1.0}.

Held points: after its timing, each point whose M is in `hold_m` (the decode-sized Ms the question is about) runs
on, the same pass replayed back to back, for `hold_s` seconds: long enough for the power sampler to see it, so the
point reports the mean power (against the GPU's enforced power limit, read once) and SM clock during that GEMM, and
the mean time per GEMM over the hold (a second timing of the same point).

Timing: CUDA events around one pass over several input sets (rotated so the L2 cannot keep the operands between
calls), the median of `repeats` passes. Inputs are random (never zeros: power and clocks depend on the data).
fp8 is e4m3 through torch._scaled_mm with per-tensor fp32 scales; NVFP4/MXFP4 are E2M1 (float4_e2m1fn_x2) with
block scales in the blocked layout torch._scaled_mm checks (torch/_meta_registrations.py, _check_scaled_mm_sizes).
Power and SM clocks are sampled in a background thread (pynvml if importable, else `nvidia-smi -lms`).
No GPU or no torch: {"available": false, "reason": ...}; with cpu_sanity a few tiny CPU points are still timed
(device "cpu") so the arithmetic can be checked, and available stays false.
"""
import json
import math
import shutil
import subprocess
import sys
import threading
import time

BYTES = {"fp32": 4.0, "bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "nvfp4": 0.5625, "mxfp4": 0.53125}
DEFAULT_M = [16 << i for i in range(11)]  # 16 .. 16384
DEFAULT_SHAPES = [{"name": "square", "n": 8192, "k": 8192}, {"name": "wide", "n": 4096, "k": 7168}]
# Hopper's L2 is 50 MB (H100) / 60 MB (H200) (NVIDIA Hopper whitepaper); used when torch does not say.
DEFAULT_L2 = 60 * 1024 * 1024


def parse_args(argv):
    """JSON in argv[1], or flags: --n N --k K --m 16,32 --dtypes bf16,fp8 --budget-s S --cpu-sanity."""
    if len(argv) > 1 and argv[1].lstrip().startswith("{"):
        return json.loads(argv[1])
    import argparse

    ap = argparse.ArgumentParser(prog="gemm_bench")
    ap.add_argument("--n", type=int, action="append")
    ap.add_argument("--k", type=int, action="append")
    ap.add_argument("--name", action="append")
    ap.add_argument("--m", type=str)
    ap.add_argument("--dtypes", type=str)
    ap.add_argument("--budget-s", type=float)
    ap.add_argument("--repeats", type=int)
    ap.add_argument("--device-index", type=int)
    ap.add_argument("--cpu-sanity", action="store_true")
    ns = ap.parse_args(argv[1:])
    params = {}
    if ns.n:
        ks = ns.k or []
        names = ns.name or []
        params["shapes"] = [{"name": names[i] if i < len(names) else "shape%d" % i, "n": n, "k": ks[i]}
                            for i, n in enumerate(ns.n)]
    if ns.m:
        params["m"] = [int(x) for x in ns.m.split(",") if x]
    if ns.dtypes:
        params["dtypes"] = [x for x in ns.dtypes.split(",") if x]
    for key in ("budget_s", "repeats", "device_index"):
        if getattr(ns, key) is not None:
            params[key] = getattr(ns, key)
    if ns.cpu_sanity:
        params["cpu_sanity"] = True
    return params


def min_bytes(m, n, k, dtype):
    b = BYTES[dtype]
    out = 4.0 if dtype == "fp32" else 2.0
    return m * k * b + k * n * b + m * n * out


def ceil_div(a, b):
    return -(-a // b)


def median(xs):
    s = sorted(xs)
    h = len(s) // 2
    return s[h] if len(s) % 2 else (s[h - 1] + s[h]) / 2.0


class Sampler(object):
    """Power, SM clock and utilization of one GPU, read in a background thread until stop()."""

    def __init__(self, index, interval_s, t0):
        self.index, self.interval_s, self.t0 = index, interval_s, t0
        self.samples, self.how, self.error = [], None, None
        self._stop = threading.Event()
        self._thread = None
        self._proc = None

    def start(self):
        try:
            import pynvml  # noqa: F401

            self.how = "pynvml"
            self._thread = threading.Thread(target=self._nvml, daemon=True)
        except Exception:
            if shutil.which("nvidia-smi") is None:
                self.error = "neither pynvml nor nvidia-smi available"
                return
            self.how = "nvidia-smi"
            self._thread = threading.Thread(target=self._smi, daemon=True)
        self._thread.start()

    def _nvml(self):
        import pynvml

        try:
            pynvml.nvmlInit()
            h = pynvml.nvmlDeviceGetHandleByIndex(self.index)
            while not self._stop.is_set():
                s = {"t_s": round(time.monotonic() - self.t0, 3), "gpu": self.index}
                try:
                    s["power_w"] = pynvml.nvmlDeviceGetPowerUsage(h) / 1000.0
                    s["sm_clock_mhz"] = float(pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM))
                    s["utilization_pct"] = float(pynvml.nvmlDeviceGetUtilizationRates(h).gpu)
                except Exception as exc:  # one bad read should not end the sampling
                    self.error = str(exc)
                self.samples.append(s)
                self._stop.wait(self.interval_s)
            pynvml.nvmlShutdown()
        except Exception as exc:
            self.error = "pynvml: %s" % exc

    def _smi(self):
        # The device's index as nvidia-smi numbers it can differ from CUDA's under CUDA_VISIBLE_DEVICES; the
        # caller passes the index nvidia-smi uses (see main).
        argv = ["nvidia-smi", "--query-gpu=index,power.draw,clocks.sm,utilization.gpu",
                "--format=csv,noheader,nounits", "-i", str(self.index),
                "-lms", str(max(int(self.interval_s * 1000), 50))]
        try:
            self._proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                          universal_newlines=True)
        except OSError as exc:
            self.error = "nvidia-smi: %s" % exc
            return
        for line in self._proc.stdout:
            parts = [p.strip() for p in line.split(",")]
            if len(parts) < 4:
                continue
            s = {"t_s": round(time.monotonic() - self.t0, 3), "gpu": self.index}
            for key, val in zip(("power_w", "sm_clock_mhz", "utilization_pct"), parts[1:4]):
                try:
                    s[key] = float(val)
                except ValueError:
                    s[key] = None
            self.samples.append(s)

    def stop(self):
        self._stop.set()
        if self._proc is not None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=5)
            except Exception:
                self._proc.kill()
        if self._thread is not None:
            self._thread.join(timeout=5)


def power_limit(index):
    """The GPU's enforced power limit in W (pynvml, else nvidia-smi), or None."""
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            return pynvml.nvmlDeviceGetEnforcedPowerLimit(pynvml.nvmlDeviceGetHandleByIndex(index)) / 1000.0
        finally:
            pynvml.nvmlShutdown()
    except Exception:
        pass
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=enforced.power.limit", "--format=csv,noheader,nounits",
                              "-i", str(index)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=10)
        return float(out.stdout.decode().strip().splitlines()[0])
    except Exception:
        return None


def fp4_support(torch, cc):
    """None when NVFP4/MXFP4 GEMMs can be tried here, else why not."""
    if cc < (10, 0):
        return "no FP4 tensor cores below compute capability 10.0 (this GPU is %d.%d)" % cc
    if not hasattr(torch, "float4_e2m1fn_x2"):
        return "torch %s has no float4_e2m1fn_x2 dtype" % torch.__version__
    if not hasattr(torch, "float8_e8m0fnu"):
        return "torch %s has no float8_e8m0fnu dtype (MX scales)" % torch.__version__
    if not hasattr(torch, "_scaled_mm"):
        return "torch %s has no _scaled_mm" % torch.__version__
    return None


def make_inputs(torch, dtype, m, n, k, dev, count):
    """`count` independent random input sets for C[M,N] = A[M,K] @ B[K,N] in dtype, and the callable that runs one."""
    sets = []
    for _ in range(count):
        if dtype in ("bf16", "fp16", "fp32"):
            tdt = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[dtype]
            a = torch.randn(m, k, device=dev, dtype=tdt)
            b = torch.randn(k, n, device=dev, dtype=tdt)
            sets.append((a, b))
        elif dtype == "fp8":
            a = torch.randn(m, k, device=dev).to(torch.float8_e4m3fn)
            # _scaled_mm wants B column-major: the transpose of a row-major (N, K) tensor.
            b = torch.randn(n, k, device=dev).to(torch.float8_e4m3fn).t()
            sa = torch.tensor(1.0, device=dev)
            sb = torch.tensor(1.0, device=dev)
            sets.append((a, b, sa, sb))
        else:  # nvfp4 / mxfp4: two E2M1 values per byte; any byte is a valid pair (E2M1 has no NaN/inf)
            kp = k // 2
            a = torch.randint(1, 256, (m, kp), device=dev, dtype=torch.uint8).view(torch.float4_e2m1fn_x2)
            b = torch.randint(1, 256, (n, kp), device=dev, dtype=torch.uint8).view(torch.float4_e2m1fn_x2).t()
            block = 16 if dtype == "nvfp4" else 32
            kb = ceil_div(ceil_div(k, block), 4) * 4  # K blocks padded to a multiple of 4
            na = 128 * ceil_div(m, 128) * kb
            nb = 128 * ceil_div(n, 128) * kb
            sdt = torch.float8_e4m3fn if dtype == "nvfp4" else torch.float8_e8m0fnu
            # Scales near 1 (their order within the blocked layout does not change the kernel's work).
            sa = (torch.rand(na, device=dev) * 0.5 + 0.75).to(sdt)
            sb = (torch.rand(nb, device=dev) * 0.5 + 0.75).to(sdt)
            sets.append((a, b, sa, sb))
    if dtype in ("bf16", "fp16", "fp32"):
        def run(s):
            return torch.mm(s[0], s[1])
    else:
        def run(s):
            return torch._scaled_mm(s[0], s[1], s[2], s[3], out_dtype=torch.bfloat16)
    return sets, run


def buffers_for(m, n, k, dtype, l2_bytes, max_bytes):
    """Input sets to rotate through: enough that one pass is over twice the L2, bounded by max_bytes."""
    one = min_bytes(m, n, k, dtype)
    want = int(math.ceil(2.0 * l2_bytes / one)) if one > 0 else 1
    cap = max(1, int(max_bytes // one))
    return max(2, min(want, cap, 64)) if cap >= 2 else 1


def time_point(torch, cuda, run, sets, repeats, warmup, deadline):
    """Per-call ms of `repeats` passes over every input set, each pass timed as a whole; and how it was launched.

    On the GPU one pass is captured in a CUDA graph when it can be, so that Python's launch overhead (several µs,
    as long as a small decode GEMM) is not what gets timed; serving engines replay decode in graphs too.
    """
    for i in range(warmup * len(sets) if warmup else 0):
        run(sets[i % len(sets)])
    mode = "cpu"
    replay = None
    if cuda:
        torch.cuda.synchronize()
        mode = "eager"
        try:
            graph = torch.cuda.CUDAGraph()
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for s in sets:
                    run(s)
            torch.cuda.current_stream().wait_stream(side)
            with torch.cuda.graph(graph):
                keep = [run(s) for s in sets]  # noqa: F841 - outputs live in the graph's pool
            graph.replay()
            torch.cuda.synchronize()
            replay = graph.replay
            mode = "cuda_graph"
        except Exception:
            replay = None
            torch.cuda.synchronize()
    per_call = []
    for _ in range(repeats):
        if cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            if replay is not None:
                replay()
            else:
                for s in sets:
                    run(s)
            end.record()
            end.synchronize()
            per_call.append(start.elapsed_time(end) / len(sets))
        else:
            t = time.perf_counter()
            for s in sets:
                run(s)
            per_call.append((time.perf_counter() - t) * 1e3 / len(sets))
        if time.monotonic() > deadline and len(per_call) >= 3:
            break
    return per_call, mode, replay


def hold_point(torch, run, sets, replay, hold_s, t0):
    """Run the point's pass back to back for hold_s seconds; (start, end) from t0, GEMMs run, mean ms per GEMM."""
    torch.cuda.synchronize()
    start_ev, end_ev = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    began = time.monotonic()
    start_ev.record()
    passes = 0
    batch = 8
    while True:
        for _ in range(batch):
            if replay is not None:
                replay()
            else:
                for s in sets:
                    run(s)
        passes += batch
        end_ev.record()
        end_ev.synchronize()  # keeps the queue short, so that the wall clock below is the GPU's time
        elapsed = time.monotonic() - began
        if elapsed >= hold_s:
            break
        if elapsed < hold_s / 20:
            batch *= 2
    ended = time.monotonic()
    calls = passes * len(sets)
    return began - t0, ended - t0, calls, start_ev.elapsed_time(end_ev) / calls


def sweep(torch, params, cuda, dev, result, t0, deadline):
    shapes = params["shapes"]
    ms = params["m"]
    dtypes = result["dtypes"]
    repeats = int(params.get("repeats", 15))
    warmup = int(params.get("warmup", 3))
    l2 = result.get("l2_bytes") or DEFAULT_L2
    max_bytes = float(params.get("max_buffer_bytes", 4e9))
    plan = [(m, sh, dt) for m in ms for sh in shapes for dt in dtypes]  # M outer: decode-sized M first
    result["planned_points"] = len(plan)
    hold_m = set(int(x) for x in params.get("hold_m") or [])
    hold_s = float(params.get("hold_s", 1.0))
    last_cost = 0.0
    for i, (m, sh, dt) in enumerate(plan):
        if dt in result["dtypes_skipped"]:
            continue
        now = time.monotonic()
        if now + last_cost > deadline:
            result["stopped_early"] = True
            result["reason"] = ("time budget of %gs reached after %d of %d points (next: %s M=%d N=%d K=%d)"
                                % (params["budget_s"], i, len(plan), dt, m, sh["n"], sh["k"]))
            break
        n, k = sh["n"], sh["k"]
        try:
            count = buffers_for(m, n, k, dt, l2, max_bytes) if cuda else 2
            sets, run = make_inputs(torch, dt, m, n, k, dev, count)
            t_start = time.monotonic() - t0
            per_call, mode, replay = time_point(torch, cuda, run, sets, repeats, warmup, deadline)
            t_end = time.monotonic() - t0
            held = None
            if cuda and m in hold_m and hold_s > 0:
                if time.monotonic() + hold_s + (t_end - t_start) * 1.2 <= deadline:
                    held = hold_point(torch, run, sets, replay, hold_s, t0)
                else:
                    result.setdefault("holds_skipped", []).append("%s %s M=%d: no time left in the budget" % (
                        sh.get("name", ""), dt, m))
            replay = None
        except Exception as exc:  # a dtype this torch/GPU cannot run: skip the dtype, keep the sweep
            msg = str(exc).strip().splitlines()
            result["dtypes_skipped"][dt] = "%s M=%d N=%d K=%d raised %s: %s" % (
                dt, m, n, k, type(exc).__name__, msg[0][:300] if msg else "")
            if dt in dtypes:
                dtypes.remove(dt)
            continue
        finally:
            sets = None
            if cuda:
                torch.cuda.empty_cache()
        last_cost = (t_end - t_start) * 1.2
        med = median(per_call)
        hold = {}
        if held is not None:
            hold = {"hold_t0_s": round(held[0], 3), "hold_t1_s": round(held[1], 3), "hold_s": round(held[1] - held[0], 3),
                    "hold_calls": held[2], "hold_ms": held[3]}
        flops = 2.0 * m * n * k
        nbytes = min_bytes(m, n, k, dt)
        result["points"].append({
            "shape": sh.get("name", "%dx%d" % (n, k)), "dtype": dt, "m": m, "n": n, "k": k,
            "ms": med, "ms_min": min(per_call), "ms_max": max(per_call), "repeats": len(per_call),
            "buffers": count, "timing": mode, "flops": flops, "bytes": nbytes,
            "tflops": flops / (med / 1e3) / 1e12, "gbps": nbytes / (med / 1e3) / 1e9,
            "t0_s": round(t_start, 3), "t1_s": round(t_end, 3),
        })
        result["points"][-1].update(hold)


def main(argv):
    t0 = time.monotonic()
    result = {"kind": "gemm_sweep", "available": False, "reason": None, "points": [], "dtypes_skipped": {},
              "samples": [], "stopped_early": False}
    try:
        params = parse_args(argv)
    except Exception as exc:
        result["reason"] = "bad parameters: %s" % exc
        return result
    params.setdefault("shapes", DEFAULT_SHAPES)
    params.setdefault("m", DEFAULT_M)
    params.setdefault("dtypes", ["bf16", "fp8", "nvfp4", "mxfp4"])
    params.setdefault("budget_s", 60.0)
    budget = float(params["budget_s"])
    result["budget_s"] = budget
    result["shapes"] = params["shapes"]
    result["m_values"] = params["m"]
    if params.get("require_gpu") and not gpu_present():
        result["reason"] = ("no GPU on this host (no /dev/nvidia0, /dev/kfd or /dev/dxg device file and no nvidia-smi, rocm-smi or amd-smi): nothing to "
                            "measure; torch was not imported")
        return result
    # before any load: what else runs on the target GPU (nvidia-smi's index; _quiet.py), waiting up to
    # `measure_wait_s` for it to go; figures taken while it runs are marked shared_gpu, never the GPU's own
    gpu_check = wait_for_quiet([int(params.get("smi_index", params.get("device_index", 0)))],
                               float(params.get("measure_wait_s", 0) or 0))
    result["gpu_activity"] = gpu_check
    result["shared_gpu"] = gpu_check.get("shared_gpu")
    deadline = time.monotonic() + budget  # the budget is for the measurement, not the wait
    try:
        import torch
    except Exception as exc:
        result["reason"] = "torch does not import under %s: %s" % (sys.executable, exc)
        return result
    result["torch_version"] = torch.__version__
    result["torch_cuda"] = getattr(torch.version, "cuda", None)
    if not torch.cuda.is_available():
        result["device"] = "cpu"
        result["reason"] = "no CUDA GPU visible to torch %s (cuda %s); GPU sweep skipped" % (
            torch.__version__, result["torch_cuda"])
        if params.get("cpu_sanity"):
            # A tiny CPU timing of the same loop, so the arithmetic can be checked; never a GPU claim.
            result["dtypes"] = [d for d in params["dtypes"] if d in ("bf16", "fp32", "fp8")] or ["fp32"]
            sweep(torch, dict(params, repeats=min(int(params.get("repeats", 5)), 5), warmup=1), False, "cpu",
                  result, t0, deadline)
        result["elapsed_s"] = round(time.monotonic() - t0, 3)
        return result
    idx = int(params.get("device_index", 0))
    dev = torch.device("cuda", idx)
    torch.cuda.set_device(dev)
    prop = torch.cuda.get_device_properties(dev)
    cc = (prop.major, prop.minor)
    result.update(device="cuda", gpu_name=prop.name, compute_cap="%d.%d" % cc, gpu_index=idx,
                  l2_bytes=params.get("l2_bytes") or getattr(prop, "L2_cache_size", None) or DEFAULT_L2)
    dtypes = []
    for dt in params["dtypes"]:
        if dt == "bf16":
            ok = None if cc >= (8, 0) else "bf16 tensor cores need compute capability 8.0"
        elif dt == "fp8":
            ok = None if cc >= (8, 9) else "no FP8 tensor cores below compute capability 8.9"
            if ok is None and not hasattr(torch, "_scaled_mm"):
                ok = "torch %s has no _scaled_mm" % torch.__version__
        elif dt in ("nvfp4", "mxfp4"):
            ok = fp4_support(torch, cc)
        else:
            ok = "unknown dtype %r" % dt
        if ok is None:
            dtypes.append(dt)
        else:
            result["dtypes_skipped"][dt] = ok
    result["dtypes"] = dtypes
    # nvidia-smi numbers GPUs by PCI order; CUDA may differ under CUDA_VISIBLE_DEVICES: pass the bus id's index.
    smi_index = idx
    try:
        import os

        vis = os.environ.get("CUDA_VISIBLE_DEVICES")
        if vis:
            first = vis.split(",")[idx].strip()
            smi_index = int(first) if first.isdigit() else idx
    except Exception:
        pass
    result["power_limit_w"] = power_limit(smi_index)
    sampler = Sampler(smi_index, float(params.get("sample_interval_s", 0.2)), t0)
    sampler.start()
    result["sampler"] = sampler.how
    try:
        torch.manual_seed(0)
        sweep(torch, params, True, dev, result, t0, deadline)
    finally:
        sampler.stop()
    result["samples"] = sampler.samples
    if sampler.error and not sampler.samples:
        result["sampler"] = None
        result["reason"] = (result["reason"] + "; " if result["reason"] else "") + "no power samples: " + sampler.error
    result["available"] = bool(result["points"])
    if not result["points"] and not result["reason"]:
        result["reason"] = "no GEMM could be timed (%s)" % "; ".join(
            "%s: %s" % kv for kv in result["dtypes_skipped"].items())
    result["elapsed_s"] = round(time.monotonic() - t0, 3)
    return result


if __name__ == "__main__":
    try:
        out = main(sys.argv)
    except Exception as exc:  # one JSON document whatever happens
        out = {"kind": "gemm_sweep", "available": False, "reason": "gemm_bench failed: %s: %s" % (
            type(exc).__name__, exc)}
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()
