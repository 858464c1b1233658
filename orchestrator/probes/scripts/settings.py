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
- NCCL's configuration files, as NCCL itself reads them at its first ncclGetEnv (src/misc/param.cc: initEnvFunc,
  setEnvFile; src/os/linux.cc: ncclOsSetEnv is setenv(name, value, 0)): the file $NCCL_CONF_FILE names (from the
  process's environment; relative to its working directory), else ~/.nccl.conf of the passwd entry of its real uid
  (userHomeDir: getpwuid(getuid()), not $HOME), then /etc/nccl.conf. Each line is KEY=VALUE up to its first `=`,
  nothing trimmed; a line starting with `#` or without `=` is skipped. setenv without overwrite: a variable in the
  process's environment wins over every file, and the first file to set one wins over the later ones. Each file is
  read as the process could read it (what it could not read, NCCL in it could not either), under
  $INVESTIGATE_NODE_ROOT for the two fixed locations when that is set (a staged host's root). What leaves the host is
  role "nccl.conf", the settings in effect whose names are on the environment allowlist (secret-looking ones left
  out), as JSON text; `overridden` names the allowlisted ones an earlier source had already set.
"""
import json
import os
import pwd
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


ROOT = os.environ.get("INVESTIGATE_NODE_ROOT") or "/"
NCCL_SYSTEM_CONF = "/etc/nccl.conf"
NCCL_VALUE_MAX = 1023
"""setEnvFile copies at most 1023 bytes of a name and of a value (char envVar[1024], envValue[1024])."""


def rooted(path):
    if ROOT in ("", "/"):
        return path
    return os.path.join(ROOT, path.lstrip("/"))


def real_uid(pid):
    """The real uid of process pid (getuid() inside it), or None."""
    try:
        for line in host_text("/proc/%d/status" % int(pid), 1 << 16).splitlines():
            if line.startswith("Uid:"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def nccl_conf_lines(data):
    """(name, value) of each line NCCL's setEnvFile would set, in order."""
    out = []
    for line in data.split(b"\n"):
        line = line.split(b"\0", 1)[0]  # a C string ends at its first NUL
        if not line or line.startswith(b"#") or b"=" not in line:
            continue
        name, _, value = line.partition(b"=")
        name, value = name[:NCCL_VALUE_MAX], value[:NCCL_VALUE_MAX]
        if name:
            out.append((name.decode("utf-8", "replace"), value.decode("utf-8", "replace")))
    return out


def nccl_conf_files(pid, raw_env, cwd, creds, limit, allowed):
    """{host path: file entry} of NCCL's configuration files for process pid, in the order NCCL reads them;
    raw_env: its whole environment (what is set there, no file overrides)."""
    paths = []
    named = raw_env.get("NCCL_CONF_FILE")
    out = {}
    if named and not os.path.isabs(named) and not cwd:
        out[named] = {"error": "relative to the process's working directory, which cannot be read: not read",
                      "role": "nccl.conf"}
    elif named:
        paths.append((named, named if os.path.isabs(named) else os.path.join(cwd, named)))
    else:
        uid = real_uid(pid)
        try:
            home = pwd.getpwuid(uid).pw_dir if uid is not None else None
        except KeyError:
            home = None
        if home:
            conf = os.path.join(home, ".nccl.conf")
            paths.append((conf, rooted(conf)))
    paths.append((NCCL_SYSTEM_CONF, rooted(NCCL_SYSTEM_CONF)))
    set_before = set(raw_env)
    done = set()
    for shown, full in paths:
        if os.path.realpath(full) in done:
            continue  # NCCL_CONF_FILE=/etc/nccl.conf: its second reading sets nothing the first did not
        done.add(os.path.realpath(full))
        try:
            data, truncated = read_host_file(full, limit, creds)
        except OSError as exc:
            if exc.errno != errno.ENOENT:
                out[shown] = {"error": str(exc.strerror or exc), "role": "nccl.conf"}
            continue
        if truncated:
            out[shown] = {"error": "larger than %d bytes: not parsed" % limit, "truncated": True, "role": "nccl.conf"}
            continue
        kept, overridden, dropped = {}, [], 0
        for name, value in nccl_conf_lines(data):
            if name in set_before:
                if keep(name, value, allowed) and name not in overridden:
                    overridden.append(name)
                continue
            set_before.add(name)
            if keep(name, value, allowed) and value:  # NCCL takes an empty value for its default
                kept[name] = value
            else:
                dropped += 1
        out[shown] = {"text": json.dumps(kept), "dropped": dropped, "truncated": False, "role": "nccl.conf",
                      "overridden": overridden[:64]}
    return out


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
        env, tag, pythonpath, readable, raw_env = {}, None, None, True, {}
        try:
            raw = read_host_file("/proc/%s/environ" % pid, 1 << 20)[0]
        except OSError:
            raw, readable = b"", False
        for item in raw.split(b"\0"):
            k, _, v = item.decode("utf-8", "replace").partition("=")
            if k:
                raw_env.setdefault(k, v)  # getenv finds the first
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
        # which variables the environment sets decides what the files may still set; a process that sees another
        # file system (a container, a chroot) reads its own tree's files, which the host's reader cannot reach
        if readable and not elsewhere(creds):
            files.update(nccl_conf_files(pid, raw_env, cwd, creds, limit, allowed))
        found.append({"pid": int(pid), "ppid": ppid, "engine": engine, "argv": mask_argv(argv)[:400], "env": env,
                      "env_readable": readable, "version": version_of(engine, exe, pythonpath), "files": files})
    pids_found = {p["pid"] for p in found}
    return [p for p in found if p["ppid"] not in pids_found][:8]


def main():
    params = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
    print(json.dumps({"processes": scan(params)}))


main()
