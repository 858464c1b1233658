"""Find the serving engines on the host and read what they are configured with and what they report.

stdlib only, Python >= 3.8, read-only, one round trip. Params (JSON, argv[1]):
  {"logs": [paths], "metrics": true, "timeout_s": 2.0, "max_metrics_bytes": int, "max_log_lines": int,
   "max_config_bytes": int}
Prints {"engines": [...], "logs": [...], "launches": [...], "python3": sys.executable}.

- engines: running vLLM (`vllm serve`, `python -m vllm.entrypoints.openai.api_server`), SGLang
  (`python -m sglang.launch_server`), TensorRT-LLM (`trtllm-serve`) and TGI (`text-generation-launcher`,
  `text-generation-server`) processes from /proc/*/cmdline, with their allowlisted environment (VLLM_*, SGLANG_*,
  TRTLLM_*, TORCH_*, CUDA_*, NCCL_*, PYTORCH_*, TRITON_*, FLASHINFER_*, DG_*; every other variable, and any name that
  looks like a secret, is dropped HERE, before anything leaves the host), the values of secret-looking flags masked,
  the config files their command line names (--config, --extra_llm_api_options: read as the engine's process could
  read them, parsed here, sent as JSON with secret-looking values masked), and the Prometheus text of the
  engine's /metrics fetched over loopback (127.0.0.1, no proxy, short timeout, size cap).
- logs: lines of the given log files that engines print about their configuration and state (capped).
- launches: engine command lines found in the given files (launch scripts, compose files, logs that echo them),
  for when no engine process runs.
"""
import json
import os
import re
import sys


# How each engine is started. (kind, how): module prefixes after `-m`, script basenames in argv[0..1].
ENGINE_MODULES = (("vllm.entrypoints", "vllm"), ("sglang.launch_server", "sglang"), ("sglang.srt.server", "sglang"),
           ("tensorrt_llm.commands.serve", "trtllm"), ("text_generation_server", "tgi"))
ENGINE_SCRIPTS = {"vllm": "vllm", "trtllm-serve": "trtllm", "text-generation-launcher": "tgi",
           "text-generation-server": "tgi"}
DEFAULT_PORTS = {"vllm": 8000, "sglang": 30000, "trtllm": 8000, "tgi": 3000}
METRICS_PATHS = {"vllm": ["/metrics"], "sglang": ["/metrics"], "trtllm": ["/prometheus/metrics"],
                 "tgi": ["/metrics"]}
CONFIG_FLAGS = ("--config", "--extra_llm_api_options", "--extra-llm-api-options")

# Lines worth returning from logs: configuration, selection, capacity, periodic stats, warnings engines print.
LOG_LINE = re.compile(
    r"(non-default args|args: Namespace\(|Initializing a V1 LLM engine|Initializing an LLM engine|vLLM API server version|"
    r"server_args=ServerArgs|attention backend|backend\.|Using [A-Za-z0-9_ .']{1,80} backend|Cannot use Flash|"
    r"KV cache size|Model loading took|Available KV cache memory|Load weight end|# GPU blocks|GPU blocks:|Maximum concurrency|KV Cache is allocated|max_total_num_tokens|"
    r"Graph capturing|Capturing CUDA graph|Capture cuda graph|cuda graph|CUDA graph|Cudagraph|cudagraph|"
    r"enforce_eager|eager mode|Avg prompt throughput|Decode batch|Prefill batch|preempt|Preempt|"
    r"out of memory|retract|KV cache|default MoE|MoE config|Chunked prefill|chunked prefill|prefix cach|"
    r"Prefix cach|radix|torch\.compile|compile took|Compil|DeepGEMM|deep_gemm|JIT|autotun|Autotun|TunableOp|"
    r"Inductor|inductor|Triton|triton cache|FlashInfer|flashinfer|Using attention|Using default cuda graphs|"
    r"capacity_scheduler|CapacitySchedulerPolicy|max_batch_size|max_num_tokens|free_gpu_memory_fraction|"
    r"Directly load the compiled|TensorRT-LLM|Args \{|Forcing attention|SpecDecoding metrics|"
    r"Loading weights took|init engine \(profile|Starting vLLM API server|Application startup complete|"
    r"WARNING|WARN |ERROR|Error|Traceback)")
# Lines an engine prints per request or per event (the request account's: prongs/request/engine_logs.py): kept like
# the periodic stats lines, the first and the last of them.
REQUEST_LINE = re.compile(
    r"(\| new prompt, |\| kv cache rm \[|stop processing: n_past|prompt eval time =|^\s*eval time =|"
    r"initializing slots|msg=\"server config\"|msg=\"starting llama server\"|\[GIN\] |GC took [\d.]+ ?ms|"
    r"truncating input prompt|exceeds the available context size|new slot n_ctx_slot|n_ctx_per_seq +=|"
    r"llama_context: n_ctx +=|n_seq_max +=|maximum context length is|longer than the model's context length|"
    r"must be <= \d+\. Given:|\"response_flags\": ?\"(?:UT|UC|UF|URX|UO|UH|DC|SI)|\" \d{3} (?:UT|UC|UF|URX|UO|UH|DC|SI) |"
    r"upstream timed out|\s[sc][DH]-- )")
CONFIG_DUMP = re.compile(r"(server_args=ServerArgs\(|non-default args|with config: |args: Namespace\()")
CONFIG_LINE_CHARS = 8000
CMD_LINE = re.compile(r"(\bvllm\s+serve\b|vllm\.entrypoints\.openai\.api_server|sglang\.launch_server|"
                      r"\btrtllm-serve\b|\btext-generation-launcher\b)")


def engine_kind(argv):
    """vllm / sglang / trtllm / tgi when argv starts one of their servers, else None."""
    for i, arg in enumerate(argv[:-1]):
        if arg == "-m":
            mod = argv[i + 1]
            for prefix, kind in ENGINE_MODULES:
                if mod == prefix or mod.startswith(prefix + ".") or mod.startswith(prefix):
                    return kind
    for j, arg in enumerate(argv[:2]):
        kind = ENGINE_SCRIPTS.get(os.path.basename(arg))
        if kind == "vllm":
            rest = argv[j + 1:]
            return "vllm" if rest and rest[0] == "serve" else None
        if kind:
            return kind
    return None


def read_environ(pid):
    """(allowlisted env, PORT/HOST hints) of a process; the rest of its environment never leaves this function."""
    env, hints = {}, {}
    try:
        raw = read_host_file("/proc/%s/environ" % pid, 1 << 20)[0]
    except OSError:
        return None, hints
    for item in raw.split(b"\0"):
        k, _, v = item.decode("utf-8", "replace").partition("=")
        if k in ("PORT", "HOSTNAME_PORT"):
            hints["port"] = v
        if k == "INVESTIGATE_STAGED_TAG":
            hints["tag"] = v
        if k and keep_env(k, v):
            env[k] = v[:500]
    return env, hints


def flag_value(argv, names):
    for i, a in enumerate(argv):
        for n in names:
            if a == n and i + 1 < len(argv):
                return argv[i + 1]
            if a.startswith(n + "="):
                return a.split("=", 1)[1]
    return None


def read_config(path, limit, creds=None):
    """(text, note) of a config file an engine's command line names: read as the engine's process could read it (the
    prelude's read_host_file), parsed here (parse_config) and sent as JSON with secret-looking values masked, never
    its own text; (None, why) when it is not read or not parsed."""
    try:
        data, truncated = read_host_file(path, limit, creds)
    except OSError as exc:
        return None, str(exc.strerror or exc)
    if truncated:
        return None, "larger than %d bytes: not parsed" % limit
    try:
        return json.dumps(mask_value(parse_config(data.decode("utf-8", "replace")))), None
    except ValueError as exc:
        return None, "not parsed on the host: %s" % exc


def fetch_metrics(port, paths, timeout_s, limit):
    """The first of `paths` that the engine on 127.0.0.1:port answers with 2xx (prelude's loopback_get: bounded in
    time and bytes, never redirected); else what the last one said."""
    last = None
    for path in paths:
        got = loopback_get(port, path, timeout_s, limit)
        url = got["url"]
        if "error" in got:  # refused, timed out, cut off: recorded, not fatal
            last = {"url": url, "status": None, "error": got["error"]}
            continue
        status, data = got["status"], got["body"]
        if status in (301, 302, 303, 307, 308):
            return {"url": url, "status": status, "error": "redirect to %s not followed" % str(got["location"])[:200]}
        if not 200 <= status < 300:
            last = {"url": url, "status": status, "error": "HTTPError: HTTP Error %d" % status}
            continue
        return {"url": url, "status": status, "content_type": got["content_type"],
                "text": data[:limit].decode("utf-8", "replace"), "truncated": len(data) > limit}
    return last


def scan_processes(params, my_tag):
    engines = []
    try:
        pids = [p for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        pids = []
    for pid in sorted(pids, key=int):
        if int(pid) == os.getpid():
            continue
        argv = proc_argv(pid)
        if not argv:
            continue
        kind = engine_kind(argv)
        if kind is None:
            continue
        env, hints = read_environ(pid)
        if my_tag is not None and hints.get("tag") != my_tag:
            continue  # a staged test host sees only the engines staged for it
        exe, cwd, ppid = proc_identity(pid)
        creds = proc_creds(pid)
        if creds is None:
            continue  # gone meanwhile: nothing it named is read
        engines.append({"pid": int(pid), "ppid": ppid, "kind": kind, "argv": mask_argv(argv)[:400], "exe": exe,
                        "cwd": cwd, "env": env, "env_readable": env is not None, "port_hint": hints.get("port"),
                        "creds": creds})
    # Keep the top process of each engine (workers re-exec with the same argv under the server).
    pids = {e["pid"] for e in engines}
    engines = [e for e in engines if e["ppid"] not in pids]
    creds = dict((e["pid"], e.pop("creds")) for e in engines)
    for e in engines[:8]:
        argv = e["argv"]
        port = flag_value(argv, ["--port", "-p"]) or e.pop("port_hint", None) or DEFAULT_PORTS[e["kind"]]
        e.pop("port_hint", None)
        try:
            port = int(port)
        except (TypeError, ValueError):
            port = DEFAULT_PORTS[e["kind"]]
        e["port"] = port
        configs = {}
        for flag in CONFIG_FLAGS:
            path = flag_value(argv, [flag])
            if path:
                full = path if os.path.isabs(path) or not e.get("cwd") else os.path.join(e["cwd"], path)
                text, note = read_config(full, int(params.get("max_config_bytes", 65536)), creds[e["pid"]])
                configs[path] = {"text": text, "note": note}
        e["config_files"] = configs
        if params.get("metrics", True):
            e["metrics"] = fetch_metrics(port, METRICS_PATHS[e["kind"]], float(params.get("timeout_s", 2.0)),
                                         int(params.get("max_metrics_bytes", 2000000)))
    return engines[:8]


def join_continuations(lines):
    """Shell lines joined across trailing backslashes: (first line number, joined text)."""
    out, buf, start = [], [], None
    for no, line in lines:
        s = line.rstrip("\n")
        if start is None:
            start = no
        if s.rstrip().endswith("\\"):
            buf.append(s.rstrip()[:-1])
            continue
        buf.append(s)
        out.append((start, " ".join(x.strip() for x in buf)))
        buf, start = [], None
    if buf:
        out.append((start, " ".join(x.strip() for x in buf)))
    return out


def scan_files(params):
    logs, launches = [], []
    max_lines = int(params.get("max_log_lines", 4000))
    max_bytes = int(params.get("max_log_bytes", 16000000))
    for raw in params.get("logs") or []:
        path = os.path.expanduser(raw)
        entry = {"path": raw, "lines": [], "total": 0, "truncated": False}
        try:
            fd = open_host_file(path, resolve=True)
        except OSError:
            entry["missing"] = True
            logs.append(entry)
            continue
        cmd_lines = []
        periodic = []
        per_request = []
        skipped = {}
        try:
            no = 0
            # one log read within max_log_bytes from the descriptor opened once (the prelude's log_lines: its
            # start and its end)
            for no, line in log_lines(fd, max_bytes, skipped):
                # configuration dumps run to thousands of characters (SGLang's ServerArgs(...) line, vLLM's engine
                # config): kept whole up to CONFIG_LINE_CHARS, every other line to 600
                short = line.rstrip("\n")[:CONFIG_LINE_CHARS if CONFIG_DUMP.search(line) else 600]
                if CMD_LINE.search(line) or (cmd_lines and cmd_lines[-1][0] == no - 1
                                             and cmd_lines[-1][1].rstrip().endswith("\\")):
                    cmd_lines.append((no, short))
                if REQUEST_LINE.search(line):
                    per_request.append([no, short])
                    continue
                if not LOG_LINE.search(line):
                    continue
                if ("Avg prompt throughput" in line or "Decode batch" in line or "Prefill batch" in line
                        or "SpecDecoding metrics" in line):
                    periodic.append([no, short])
                    continue
                if len(entry["lines"]) < max_lines:
                    entry["lines"].append([no, short])
                else:
                    entry["truncated"] = True
            entry["total"] = no
        except OSError:
            entry["missing"] = True
            logs.append(entry)
            continue
        # Periodic stats lines can be thousands: the first and the last ones tell the story.
        if len(periodic) > 300:
            entry["truncated"] = True
            periodic = periodic[:50] + periodic[-250:]
        if len(per_request) > 300:
            entry["truncated"] = True
            per_request = per_request[:50] + per_request[-250:]
        entry["lines"] = sorted(entry["lines"] + periodic + per_request)
        if skipped:
            entry["skipped"] = skipped
        for no, text in join_continuations(cmd_lines):
            m = CMD_LINE.search(text)
            if m:
                launches.append({"path": raw, "line_no": no, "command": text[max(0, m.start() - 200):][:4000]})
        logs.append(entry)
    return logs, launches[:20]


def gpu_memory():
    """GPU 0's name and total memory (MiB) from nvidia-smi: the engines' batch defaults depend on them."""
    import subprocess

    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name,memory.total", "--format=csv,noheader,nounits"],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=10, check=False)
        first = out.stdout.decode("utf-8", "replace").strip().splitlines()[0]
        name, mem = [x.strip() for x in first.rsplit(",", 1)]
        return {"name": name, "memory_mib": float(mem.split()[0])}
    except Exception:  # no nvidia-smi, no GPU: the defaults that depend on it stay unknown
        return None


def main():
    params = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
    my_tag = os.environ.get("INVESTIGATE_STAGED_TAG")
    engines = scan_processes(params, my_tag)
    logs, launches = scan_files(params)
    for launch in launches:
        launch["command"] = " ".join(mask_argv(launch["command"].split()))
    gpu = gpu_memory() if params.get("gpu", True) else None
    print(json.dumps({"engines": engines, "logs": logs, "launches": launches, "gpu": gpu,
                      "python3": sys.executable}))


main()
