"""What the serving processes were told to do: command line, known environment variables, files they name.

stdlib only, Python >= 3.8, read-only, one round trip. Params (JSON, argv[1]):
  {"env_names": [NAME, ...], "config_keys": [name, ...], "max_file_bytes": int}
Prints {"processes": [...]}: for each serving process (vLLM, SGLang, TensorRT-LLM, TGI, llama.cpp server, Ollama)
its pid, engine, argv (values of secret-looking flags masked here), the engine package's version from the
dist-info its interpreter sees, and
- env: ONLY the variables whose names are in `env_names` (the settings knowledge base: the environment allowlist),
  minus any name or value that looks like a secret (`keep` below, from _environ.py). Nothing else of the
  environment is kept; PYTHONPATH is read here to find the engine's version and never returned.
- files: the config files its command line names (--config, --extra_llm_api_options, --generation-config) and the
  model directory's config.json / generation_config.json when the model is a local directory, each read only as the
  process itself could read it (the prelude's read_host_file with the process's uid and groups: no link to another
  user's file, no FIFO or device, no credential location, size-capped) and parsed HERE (JSON, or the plain YAML
  mappings these files are: no anchors, aliases or tags). What leaves the host is the parsed keys that are known
  settings (`config_keys`, the settings knowledge base), as JSON text, with the values of secret-looking keys and
  secret-looking values masked; never the file's text. `dropped` counts the keys left on the host.
"""
import json
import os
import sys

ENGINE_MODULES = (("vllm.entrypoints", "vllm"), ("sglang.launch_server", "sglang"), ("sglang.srt.server", "sglang"),
           ("tensorrt_llm.commands.serve", "trtllm"), ("text_generation_server", "tgi"))
ENGINE_SCRIPTS = {"vllm": "vllm", "trtllm-serve": "trtllm", "text-generation-launcher": "tgi",
           "text-generation-server": "tgi", "llama-server": "llamacpp", "ollama": "ollama"}
PACKAGES = {"vllm": "vllm", "sglang": "sglang", "trtllm": "tensorrt_llm", "tgi": "text_generation_server"}
CONFIG_FLAGS = ("--config", "--extra_llm_api_options", "--extra-llm-api-options", "--generation-config")
MODEL_FLAGS = ("--model", "--model-path", "--model-id")


def engine_of(argv):
    for i, arg in enumerate(argv[:-1]):
        if arg == "-m":
            for prefix, kind in ENGINE_MODULES:
                if argv[i + 1].startswith(prefix):
                    return kind
    for j, arg in enumerate(argv[:2]):
        kind = ENGINE_SCRIPTS.get(os.path.basename(arg))
        if kind in ("vllm", "ollama"):
            rest = argv[j + 1:]
            return kind if rest and rest[0] == "serve" else None
        if kind:
            return kind
    return None


def keep(name, value, allowed):
    """Whether a variable may leave the host: its name is a known setting and nothing about it looks secret."""
    return name in allowed and not SECRET_NAME.search(name) and not SECRET_VALUE.search(value) and len(value) < 4096


def flag_value(argv, names):
    for i, a in enumerate(argv):
        for n in names:
            if a == n and i + 1 < len(argv):
                return argv[i + 1]
            if a.startswith(n + "="):
                return a.split("=", 1)[1]
    return None


def norm_key(key):
    """A setting's name as the knowledge base's index compares it: `--max-num-seqs`, `max-num-seqs` and
    `max_num_seqs` alike."""
    return str(key).strip().lstrip("-").replace("-", "_").lower()


def read_config(path, limit, creds, known):
    """What a served process's config file says, as it leaves the host: {"text": JSON of its known settings,
    "dropped": n, "truncated": bool} or {"error": why}."""
    try:
        data, truncated = read_host_file(path, limit, creds)
    except OSError as exc:
        return {"error": str(exc.strerror or exc)}
    if truncated:
        return {"error": "larger than %d bytes: not parsed" % limit, "truncated": True}
    try:
        doc = parse_config(data.decode("utf-8", "replace"))
    except ValueError as exc:
        return {"error": "not parsed on the host: %s" % exc}
    kept = mask_value(dict((k, v) for k, v in doc.items() if norm_key(k) in known))
    return {"text": json.dumps(kept), "dropped": len(doc) - len(kept), "truncated": False}


def version_of(engine, exe, pythonpath):
    pkg = PACKAGES.get(engine)
    if not pkg:
        return None
    dirs = [p for p in (pythonpath or "").split(":") if p]
    if exe:
        lib = os.path.join(os.path.dirname(os.path.dirname(exe)), "lib")
        for d in listdir(lib):
            if d.startswith("python"):
                dirs += [os.path.join(lib, d, "site-packages"), os.path.join(lib, d, "dist-packages")]
    found = distributions(dirs, wanted=(dist_key(pkg),)).get(dist_key(pkg))
    return found["version"] if found else None


def model_arg(engine, argv):
    # `-m` is llama.cpp's model; before it in a Python command line it is the module run (`-m vllm.entrypoints...`)
    v = flag_value(argv, MODEL_FLAGS) or (flag_value(argv, ["-m"]) if engine == "llamacpp" else None)
    if v:
        return v
    if engine == "vllm":
        for i, a in enumerate(argv):
            if a == "serve" and i + 1 < len(argv) and not argv[i + 1].startswith("-"):
                return argv[i + 1]
    return None


def scan(params):
    allowed = set(params.get("env_names") or [])
    known = set(norm_key(k) for k in params.get("config_keys") or [])
    limit = int(params.get("max_file_bytes", 65536))
    my_tag = os.environ.get("INVESTIGATE_STAGED_TAG")
    found = []
    try:
        pids = sorted((p for p in os.listdir("/proc") if p.isdigit()), key=int)
    except OSError:
        pids = []
    for pid in pids:
        if int(pid) == os.getpid():
            continue
        argv = proc_argv(pid)
        engine = engine_of(argv) if argv else None
        if engine is None:
            continue
        env, tag, pythonpath, readable = {}, None, None, True
        try:
            raw = read_host_file("/proc/%s/environ" % pid, 1 << 20)[0]
        except OSError:
            raw, readable = b"", False
        for item in raw.split(b"\0"):
            k, _, v = item.decode("utf-8", "replace").partition("=")
            if k == "INVESTIGATE_STAGED_TAG":
                tag = v
            elif k == "PYTHONPATH":
                pythonpath = v  # where the engine's package is: read for its version, never returned
            elif k and keep(k, v, allowed):
                env[k] = v
        if my_tag is not None and tag != my_tag:
            continue  # a staged test host sees only the processes staged for it
        exe, cwd, ppid = proc_identity(pid)
        creds = proc_creds(pid)
        if creds is None:
            continue  # gone meanwhile: nothing it named is read
        files = {}
        for flag in CONFIG_FLAGS:
            path = flag_value(argv, [flag])
            if not path or (flag == "--generation-config" and path in ("auto", "vllm")):
                continue  # vLLM's --generation-config is a folder, or where to take the defaults from
            full = path if os.path.isabs(path) or not cwd else os.path.join(cwd, path)
            if flag == "--generation-config" and os.path.isdir(full):
                full = os.path.join(full, "generation_config.json")
            files[path] = dict(read_config(full, limit, creds, known), role=flag)
        model = model_arg(engine, argv)
        if model:
            full = model if os.path.isabs(model) or not cwd else os.path.join(cwd, model)
            if os.path.isdir(full):
                for name in ("config.json", "generation_config.json"):
                    p = os.path.join(full, name)
                    if os.path.lexists(p):
                        files[os.path.join(model, name)] = dict(read_config(p, limit, creds, known), role=name)
        found.append({"pid": int(pid), "ppid": ppid, "engine": engine, "argv": mask_argv(argv)[:400], "env": env,
                      "env_readable": readable, "version": version_of(engine, exe, pythonpath), "files": files})
    pids_found = {p["pid"] for p in found}
    return [p for p in found if p["ppid"] not in pids_found][:8]


def main():
    params = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
    print(json.dumps({"processes": scan(params)}))


main()
