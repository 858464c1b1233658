"""The served model's files that decide what a request becomes inside the engine (the request account's probe).

stdlib only, Python >= 3.8, read-only, one round trip. Params (JSON, argv[1]):
  {"models": [ref, ...], "max_file_bytes": int, "servers": bool, "max_metrics_bytes": int, "timeout_s": float}
A ref is how the engine names its model: a directory on the host, or a Hugging Face hub id (`org/name`), looked up
in the hub cache ($HF_HUB_CACHE, $HF_HOME/hub, ~/.cache/huggingface/hub: the newest snapshot). Paths are read under
$INVESTIGATE_NODE_ROOT when it is set (a staged host's root), like the node and account probes.
Prints {"models": [...], "looked": [...]}: for each model found, the keys of config.json that describe its
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


def read_json(path, limit):
    try:
        data, truncated = read_host_file(path, limit)
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


def hub_dirs(ref):
    roots = []
    for env in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if os.environ.get(env):
            roots.append(os.environ[env])
    if os.environ.get("HF_HOME"):
        roots.append(os.path.join(os.environ["HF_HOME"], "hub"))
    roots.append(os.path.join(os.path.expanduser("~"), ".cache", "huggingface", "hub"))
    name = "models--" + ref.replace("/", "--")
    for r in roots:
        snaps = os.path.join(r, name, "snapshots")
        try:
            revs = [os.path.join(snaps, x) for x in os.listdir(snaps)]
        except OSError:
            continue
        revs = [x for x in revs if os.path.isdir(x)]
        if revs:
            return max(revs, key=lambda x: os.stat(x).st_mtime)
    return None


def model_dir(ref):
    if os.path.isabs(ref):
        d = rooted(ref)
        return d if os.path.isdir(d) else None
    if ref.count("/") == 1 and not ref.startswith("."):
        return hub_dirs(ref)
    return None


def template_tokens(template, specials):
    return sorted({c for c in specials.values() if c and c in template})


def read_model(ref, limit):
    d = model_dir(ref)
    if d is None:
        return None
    out = {"ref": ref, "path": ref if os.path.isabs(ref) else d, "config": {}, "generation": {},
           "special_tokens": {}, "template_tokens": [], "preprocessor": {}, "errors": []}
    cfg, err = read_json(os.path.join(d, "config.json"), limit)
    if isinstance(cfg, dict):
        c = pick(cfg, CONFIG_KEYS)
        for k in NESTED:
            if isinstance(cfg.get(k), dict):
                c[k] = pick(cfg[k], CONFIG_KEYS + ("quant_method", "bits", "weight_block_size", "fmt"))
        out["config"] = c
    elif err and "No such file" not in err:
        out["errors"].append("config.json: " + err)
    gen, err = read_json(os.path.join(d, "generation_config.json"), limit)
    if isinstance(gen, dict):
        out["generation"] = pick(gen, GENERATION_KEYS)
    tok, err = read_json(os.path.join(d, "tokenizer_config.json"), limit)
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
    pre, err = read_json(os.path.join(d, "preprocessor_config.json"), limit)
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
    models, looked = [], []
    for ref in (params.get("models") or [])[:4]:
        if not isinstance(ref, str) or not ref or ref in looked:
            continue
        looked.append(ref)
        m = read_model(ref, limit)
        if m is not None:
            models.append(m)
    servers = scan_servers(int(params.get("max_metrics_bytes", 2000000)), float(params.get("timeout_s", 2.0))) \
        if params.get("servers", True) else []
    mig = mig_devices() if params.get("mig") else []
    print(json.dumps({"models": models, "looked": looked, "servers": servers, "mig": mig}))


main()
