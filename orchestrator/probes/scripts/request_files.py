"""The served model's files that decide what a request becomes inside the engine (the request account's probe).

stdlib only, Python >= 3.8, read-only, one round trip. Params (JSON, argv[1]):
  {"models": [{"ref": ref, "pid": pid}, ...], "max_file_bytes": int, "servers": bool, "max_metrics_bytes": int,
   "timeout_s": float}
A ref is how an engine names its model: a directory on the host (absolute, or relative to the engine's working
directory), or a Hugging Face hub id (`org/name`), looked up in the engine's hub cache ($HF_HUB_CACHE, $HF_HOME/hub,
~/.cache/huggingface/hub of ITS environment: the newest snapshot). pid is the engine process that names it: its files
are read only as that process could read them (the prelude's proc_creds and read_host_file), and only while its
command line still names the ref (a pid reused by another process names nothing). A ref without a pid (a launch
script's, a log's, a model's request) is read only by a probe that runs unprivileged (as its own user, whom the kernel
checks); as root it is refused: root would read it for whoever wrote the name. Paths are read under
$INVESTIGATE_NODE_ROOT when it is set (a staged host's root), like the node and account probes.
Prints {"models": [...], "looked": [...], "refused": {ref: why}}: for each model found, the keys of config.json that
describe its
architecture, generation_config.json's stop and length keys, tokenizer_config.json's eos_token and the special tokens
its chat template uses (never the template's text), and preprocessor_config.json's image sizing keys. Nothing else of
the files leaves the host.
With "mig": true (an engine runs on a MIG device), `nvidia-smi -L`'s MIG devices: each one's profile and UUID (a
slice's share of the GPU's memory bandwidth and SMs sets its floors).
And the inference servers that run no engine of the serving-engine probe's kinds but count requests per model (Triton:
`tritonserver`, its --metrics-port, default 8002): their Prometheus text from loopback, parsed off the host.
"""
import json
import os
import sys

ROOT = os.environ.get("INVESTIGATE_NODE_ROOT") or "/"
CONFIG_KEYS = ("architectures", "model_type", "hidden_size", "num_hidden_layers", "num_layers", "num_attention_heads",
               "num_key_value_heads", "head_dim", "intermediate_size", "moe_intermediate_size", "num_local_experts",
               "num_experts", "n_routed_experts", "num_experts_per_tok", "moe_topk", "n_shared_experts",
               "num_shared_experts", "first_k_dense_replace", "vocab_size", "tie_word_embeddings", "torch_dtype",
               "dtype", "kv_lora_rank", "qk_rope_head_dim", "max_position_embeddings", "eos_token_id",
               "sliding_window")
NESTED = ("text_config", "vision_config", "quantization_config")
GENERATION_KEYS = ("eos_token_id", "bos_token_id", "pad_token_id", "max_length", "max_new_tokens", "do_sample",
                   "temperature", "top_p", "top_k", "repetition_penalty")
PREPROCESSOR_KEYS = ("max_pixels", "min_pixels", "patch_size", "merge_size", "temporal_patch_size",
                     "image_processor_type", "processor_class", "size", "crop_size", "image_seq_length")


def rooted(path):
    if ROOT in ("", "/") or not os.path.isabs(path):
        return path
    return os.path.join(ROOT, path.lstrip("/"))


def read_json(path, limit, creds):
    try:
        data, truncated = read_host_file(path, limit, creds)
    except OSError as exc:
        return None, str(exc)
    if truncated:
        return None, "larger than %d bytes: not read" % limit
    try:
        return json.loads(data.decode("utf-8", "replace")), None
    except ValueError as exc:
        return None, "not JSON: %s" % str(exc)[:100]


def pick(d, keys):
    out = {}
    for k in keys:
        v = d.get(k)
        if isinstance(v, (int, float, str, bool)) or (isinstance(v, list) and len(v) <= 64 and
                                                     all(isinstance(x, (int, float, str)) for x in v)):
            out[k] = v
        elif isinstance(v, dict) and k == "size":
            out[k] = {kk: vv for kk, vv in v.items() if isinstance(vv, (int, float))}
    return out


def names(argv, ref):
    """Whether the command line argv names ref (a word of its own, or a `--flag=ref`)."""
    return any(a == ref or a.endswith("=" + ref) for a in argv)


def hub_dirs(ref, env, creds):
    """The newest snapshot of hub id ref in the hub cache that env (the engine's environment) points at, listed as a
    process of creds could list it; None when there is none."""
    roots = []
    for name in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if env.get(name):
            roots.append(env[name])
    if env.get("HF_HOME"):
        roots.append(os.path.join(env["HF_HOME"], "hub"))
    if env.get("HOME"):
        roots.append(os.path.join(env["HOME"], ".cache", "huggingface", "hub"))
    name = "models--" + ref.replace("/", "--")
    for r in roots:
        if not os.path.isabs(r):
            continue
        snaps = os.path.join(r, name, "snapshots")
        listed, _why = list_host_dir(snaps, creds)
        revs = [os.path.join(snaps, x) for x in listed]
        revs = [x for x in revs if os.path.isdir(x)]
        if revs:
            return max(revs, key=lambda x: os.stat(x).st_mtime)
    return None


def model_dir(ref, env, cwd, creds):
    """The directory ref names for a process of env, cwd and creds (vLLM's order: a local directory first, then the
    hub cache), None when there is none, or a string: why that process could not reach it. Whether a directory
    exists is asked only after the process could search every directory above it (nothing is learnt of a place it
    may not enter)."""
    hub = not os.path.isabs(ref) and ref.count("/") == 1 and not ref.startswith((".", "~"))
    local = rooted(ref) if os.path.isabs(ref) else os.path.join(cwd, ref) if cwd and not ref.startswith("~") else None
    if local is not None:
        why = search_refused(os.path.realpath(local), creds) if creds is not None and creds[0] != 0 else None
        if why and not hub:
            return "%s: %s" % (ref, why)
        if not why and os.path.isdir(local):
            why = unreachable(local, creds)
            return "%s: %s" % (ref, why) if why else local
    return hub_dirs(ref, env, creds) if hub else None


def naming(ref, pid):
    """(env, cwd, creds) of the process pid that names ref, or a string: why its files are not read."""
    if pid is None:
        if os.geteuid() != 0:
            return dict(os.environ), None, None  # this probe's own user: the kernel checks each read
        return "no running process names it (a launch script's, a log's or a request's name): not read as root"
    try:
        pid = int(pid)
    except (TypeError, ValueError):
        return "not a process id: %r" % (pid,)
    argv = proc_argv(pid)
    if not argv or not names(argv, ref):
        return "pid %d no longer names it: not read" % pid
    creds = proc_creds(pid)
    if creds is None:
        return "pid %d is gone: not read" % pid
    if elsewhere(creds):
        return elsewhere(creds)
    _exe, cwd, _ppid = proc_identity(pid)
    env = proc_environ(pid) or {}
    return env, cwd, creds


def template_tokens(template, specials):
    return sorted({c for c in specials.values() if c and c in template})


def read_model(ref, limit, env, cwd, creds):
    """What the model directory ref names says (None: there is none), each file read as a process of creds could."""
    d = model_dir(ref, env, cwd, creds)
    if d is None or d.startswith(ref + ": "):
        return d
    out = {"ref": ref, "path": ref if os.path.isabs(ref) else d, "config": {}, "generation": {},
           "special_tokens": {}, "template_tokens": [], "preprocessor": {}, "errors": []}
    cfg, err = read_json(os.path.join(d, "config.json"), limit, creds)
    if isinstance(cfg, dict):
        c = pick(cfg, CONFIG_KEYS)
        for k in NESTED:
            if isinstance(cfg.get(k), dict):
                c[k] = pick(cfg[k], CONFIG_KEYS + ("quant_method", "bits", "weight_block_size", "fmt"))
        out["config"] = c
    elif err and "No such file" not in err:
        out["errors"].append("config.json: " + err)
    gen, err = read_json(os.path.join(d, "generation_config.json"), limit, creds)
    if isinstance(gen, dict):
        out["generation"] = pick(gen, GENERATION_KEYS)
    tok, err = read_json(os.path.join(d, "tokenizer_config.json"), limit, creds)
    if isinstance(tok, dict):
        specials = {}
        for tid, t in (tok.get("added_tokens_decoder") or {}).items():
            if isinstance(t, dict) and t.get("special") and isinstance(t.get("content"), str):
                specials[str(tid)] = t["content"][:64]
        eos = tok.get("eos_token")
        if isinstance(eos, dict):
            eos = eos.get("content")
        if isinstance(eos, str):
            out["eos_token"] = eos[:64]
        template = tok.get("chat_template")
        if isinstance(template, list):  # several named templates: the default one
            template = next((t.get("template") for t in template if isinstance(t, dict)
                             and t.get("name") == "default"), None)
        if isinstance(template, str):
            used = template_tokens(template, specials)
            out["template_tokens"] = used
            out["template_chars"] = len(template)
            out["template_thinking"] = "enable_thinking" in template or "<think>" in template
            out["special_tokens"] = {k: v for k, v in specials.items() if v in used or v == eos}
    pre, err = read_json(os.path.join(d, "preprocessor_config.json"), limit, creds)
    if isinstance(pre, dict):
        out["preprocessor"] = pick(pre, PREPROCESSOR_KEYS)
    return out


# Inference servers whose per-model counters are the engine's view of a request when no engine of the serving-engine
# probe's kinds runs (Triton: an ensemble's steps, the LLM backend among them): program basename -> metrics port flag
# and default port.
SERVERS = {"tritonserver": ("--metrics-port", 8002)}


def staged_tag(pid):
    try:
        raw = read_host_file("/proc/%s/environ" % pid, 1 << 20)[0]
    except OSError:
        return None
    for item in raw.split(b"\0"):
        k, _, v = item.decode("utf-8", "replace").partition("=")
        if k == "INVESTIGATE_STAGED_TAG":
            return v
    return None


def fetch(port, path, timeout_s, limit):
    """GET on loopback through the prelude's loopback_get (bounded in time in all and in bytes, never redirected)."""
    got = loopback_get(port, path, timeout_s, limit)
    if "error" in got:  # refused, timeout, cut off: recorded, not fatal
        return {"url": got["url"], "status": None, "error": got["error"]}
    if not 200 <= got["status"] < 300:
        return {"url": got["url"], "status": got["status"], "error": "HTTPError: HTTP Error %d" % got["status"]}
    data = got["body"]
    return {"url": got["url"], "status": got["status"], "text": data[:limit].decode("utf-8", "replace"),
            "truncated": len(data) > limit}


def scan_servers(limit, timeout_s):
    my_tag = os.environ.get("INVESTIGATE_STAGED_TAG")
    out = []
    try:
        pids = [p for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        pids = []
    for pid in sorted(pids, key=int):
        argv = proc_argv(pid)
        if not argv or int(pid) == os.getpid():
            continue
        # the program, or the script a Python interpreter runs (a console-script wrapper's argv[1])
        kind = next((k for k in SERVERS for a in argv[:2] if os.path.basename(a) == k), None)
        if kind is None:
            continue
        if my_tag is not None and staged_tag(pid) != my_tag:
            continue  # a staged test host sees only the processes staged for it
        flag, port = SERVERS[kind]
        for i, a in enumerate(argv):
            if a.startswith(flag + "="):
                port = int(a.split("=", 1)[1]) if a.split("=", 1)[1].isdigit() else port
            elif a == flag and i + 1 < len(argv) and argv[i + 1].isdigit():
                port = int(argv[i + 1])
        got = fetch(port, "/metrics", timeout_s, limit)
        out.append(dict(got, kind=kind, pid=int(pid), port=port))
        if len(out) >= 4:
            break
    return out


def mig_devices():
    """`nvidia-smi -L`'s MIG devices: [{"profile": "3g.40gb", "uuid": "MIG-..."}]; [] where it does not run."""
    import re
    import subprocess

    try:
        got = subprocess.run(["nvidia-smi", "-L"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=10,
                             check=False)
    except (OSError, subprocess.SubprocessError):
        return []
    out = []
    for line in got.stdout.decode("utf-8", "replace").splitlines()[:256]:
        m = re.search(r"MIG (\d+g\.\d+gb)\s+Device\s+\d+: \(UUID: (MIG-[0-9A-Za-z/-]{1,80})\)", line)
        if m:
            out.append({"profile": m.group(1), "uuid": m.group(2)})
    return out[:64]


def main():
    params = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
    limit = int(params.get("max_file_bytes", 4000000))
    models, looked, refused = [], [], {}
    for item in (params.get("models") or [])[:4]:
        ref, pid = (item.get("ref"), item.get("pid")) if isinstance(item, dict) else (item, None)
        if not isinstance(ref, str) or not ref or ref in looked:
            continue
        looked.append(ref)
        who = naming(ref, pid)
        m = read_model(ref, limit, *who) if isinstance(who, tuple) else who
        if isinstance(m, dict):
            models.append(m)
        elif isinstance(m, str):
            refused[ref] = m
    servers = scan_servers(int(params.get("max_metrics_bytes", 2000000)), float(params.get("timeout_s", 2.0))) \
        if params.get("servers", True) else []
    mig = mig_devices() if params.get("mig") else []
    print(json.dumps({"models": models, "looked": looked, "refused": refused, "servers": servers, "mig": mig}))


main()
