"""What the serving processes were told to do: command line, known environment variables, files they name.

stdlib only, Python >= 3.8, read-only, one round trip. Params (JSON, argv[1]):
  {"env_names": [NAME, ...], "max_file_bytes": int}
Prints {"processes": [...]}: for each serving process (vLLM, SGLang, TensorRT-LLM, TGI, llama.cpp server, Ollama)
its pid, engine, argv (values of secret-looking flags masked here), the engine package's version from the
dist-info its interpreter sees, and
- env: ONLY the variables whose names are in `env_names` (the settings knowledge base: the environment allowlist),
  minus any name or value that looks like a secret (`keep` below, from _environ.py). Nothing else of the
  environment is kept; PYTHONPATH is read here to find the engine's version and never returned.
- files: the config files its command line names (--config, --extra_llm_api_options, --generation-config) and the
  model directory's config.json / generation_config.json when the model is a local directory (size-capped), with
  the values of secret-looking keys and secret-looking values masked here (`mask_config`).
"""
import json
import os
import re
import sys

SECRET_FLAG = re.compile(r"^--?([\w]+[-_])*(token|secret|password|passwd|key|api[-_]?key|credentials?|auth|cookie|"
                         r"private[-_]key)$", re.I)
MASK = "<redacted on host>"
ENGINE_MODULES = (("vllm.entrypoints", "vllm"), ("sglang.launch_server", "sglang"), ("sglang.srt.server", "sglang"),
           ("tensorrt_llm.commands.serve", "trtllm"), ("text_generation_server", "tgi"))
ENGINE_SCRIPTS = {"vllm": "vllm", "trtllm-serve": "trtllm", "text-generation-launcher": "tgi",
           "text-generation-server": "tgi", "llama-server": "llamacpp", "ollama": "ollama"}
PACKAGES = {"vllm": "vllm", "sglang": "sglang", "trtllm": "tensorrt_llm", "tgi": "text_generation_server"}
CONFIG_FLAGS = ("--config", "--extra_llm_api_options", "--extra-llm-api-options", "--generation-config")
MODEL_FLAGS = ("--model", "--model-path", "--model-id", "-m")


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


def mask(argv):
    out, skip = [], False
    for a in argv:
        if skip:
            out.append(MASK)
            skip = False
            continue
        name, eq, value = a.partition("=")
        if SECRET_FLAG.match(name):
            if eq:
                out.append(name + "=" + MASK)
            else:
                out.append(a)
                skip = True
            continue
        out.append(MASK if SECRET_VALUE.search(a) else a)
    return out


def flag_value(argv, names):
    for i, a in enumerate(argv):
        for n in names:
            if a == n and i + 1 < len(argv):
                return argv[i + 1]
            if a.startswith(n + "="):
                return a.split("=", 1)[1]
    return None


CONFIG_KEY = re.compile(r"^(\s*-?\s*[\"']?)([\w.-]+)([\"']?\s*[:=]\s*)(.*)$")


def mask_config(text):
    """A config file's lines with the values of secret-looking keys (api-key, hf_token, password...) and
    secret-looking values replaced, here, before the text leaves the host."""
    out = []
    for line in text.splitlines():
        m = CONFIG_KEY.match(line)
        if m and (SECRET_FLAG.match("--" + m.group(2)) or SECRET_NAME.search(m.group(2))) and m.group(4).strip():
            line = m.group(1) + m.group(2) + m.group(3) + MASK
        out.append(SECRET_VALUE.sub(MASK, line))
    return "\n".join(out)


def read_small(path, limit):
    try:
        with open(path, "rb") as f:
            data = f.read(limit + 1)
    except OSError as exc:
        return {"error": str(exc.strerror or exc)}
    return {"text": mask_config(data[:limit].decode("utf-8", "replace")), "truncated": len(data) > limit}


def version_of(engine, exe, pythonpath):
    pkg = PACKAGES.get(engine)
    if not pkg:
        return None
    dirs = [p for p in (pythonpath or "").split(":") if p]
    if exe:
        prefix = os.path.dirname(os.path.dirname(exe))
        lib = os.path.join(prefix, "lib")
        try:
            for d in sorted(os.listdir(lib)):
                if d.startswith("python"):
                    dirs.append(os.path.join(lib, d, "site-packages"))
                    dirs.append(os.path.join(lib, d, "dist-packages"))
        except OSError:
            pass
    for d in dirs:
        try:
            names = os.listdir(d)
        except OSError:
            continue
        for n in names:
            m = re.match(r"^" + pkg + r"-([^-]+)\.dist-info$", n)
            if m:
                return m.group(1)
    return None


def model_arg(engine, argv):
    v = flag_value(argv, MODEL_FLAGS)
    if v:
        return v
    if engine == "vllm":
        for i, a in enumerate(argv):
            if a == "serve" and i + 1 < len(argv) and not argv[i + 1].startswith("-"):
                return argv[i + 1]
    return None


def scan(params):
    allowed = set(params.get("env_names") or [])
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
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                argv = [a.decode("utf-8", "replace") for a in f.read().split(b"\0") if a]
        except OSError:
            continue
        engine = engine_of(argv) if argv else None
        if engine is None:
            continue
        env, tag, pythonpath, readable = {}, None, None, True
        try:
            with open("/proc/%s/environ" % pid, "rb") as f:
                raw = f.read()
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
        files = {}
        for flag in CONFIG_FLAGS:
            path = flag_value(argv, [flag])
            if path:
                full = path if os.path.isabs(path) or not cwd else os.path.join(cwd, path)
                files[path] = dict(read_small(full, limit), role=flag)
        model = model_arg(engine, argv)
        if model:
            full = model if os.path.isabs(model) or not cwd else os.path.join(cwd, model)
            if os.path.isdir(full):
                for name in ("config.json", "generation_config.json"):
                    p = os.path.join(full, name)
                    if os.path.isfile(p):
                        files[os.path.join(model, name)] = dict(read_small(p, limit), role=name)
        found.append({"pid": int(pid), "ppid": ppid, "engine": engine, "argv": mask(argv)[:400], "env": env,
                      "env_readable": readable, "version": version_of(engine, exe, pythonpath), "files": files})
    pids_found = {p["pid"] for p in found}
    return [p for p in found if p["ppid"] not in pids_found][:8]


def main():
    params = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
    print(json.dumps({"processes": scan(params)}))


main()
