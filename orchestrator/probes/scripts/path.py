"""The layers between the user and the GPU: what runs in front of and around the serving engine, and how each was
told to behave. Read-only, stdlib only, Python >= 3.8, one round trip.

Params (JSON, argv[1]): {"logs": [paths], "max_file_bytes": int, "max_files": int, "max_output_bytes": int,
"command_timeout_s": float, "env_names": [NAME, ...], "env_prefixes": [PREFIX, ...]}.

Prints one JSON object:
- processes: the serving engines and the layers around them, found by their command lines: reverse proxies and
  gateways (nginx, Envoy and Istio's sidecar, HAProxy, Traefik, Caddy, LiteLLM, Knative's queue-proxy), Triton and
  its Python backend stubs, Ray Serve's actors. For each: pid, kind, argv (secret-looking values masked here), its
  systemd unit, container and Kubernetes pod (from /proc/PID/cgroup), its threads, its interpreter, and ONLY the
  environment variables whose names are in `env_names` or start with `env_prefixes` (runtime settings: thread pools,
  allocators, tokenizer workers; the layers' own), minus any that look secret.
- files: the configuration those processes name (-c/--config/-f, a model repository) or, for a layer that runs, its
  standard location (/etc/nginx/nginx.conf and what it includes, /etc/haproxy/haproxy.cfg, /etc/envoy/envoy.yaml,
  LiteLLM's config.yaml, a Ray Serve config beside the process or the logs, the units and drop-ins of their systemd
  services). Each is read only as the process that named it could read it (the prelude's reader with that process's
  uid and groups: no link to another user's file, no FIFO or device, no credential location, size-capped), and its
  text leaves the host with every secret-looking value masked line by line (`mask_line`).
- commands: what the host's own tools say of the orchestrator, each a fixed argv run without a shell and only when
  the program is on PATH: `systemctl show/cat` of the engine's unit, `docker inspect` of its container (reduced here
  to the settings that shape its resources, the environment filtered as above), `kubectl get pod` of its pod (the
  same reduction) and `kubectl get events` about it, Istio's DestinationRules when a sidecar runs, `scontrol show
  job` of its Slurm job. Names from another process (a pod name from its HOSTNAME) reach an argv only when they are
  plain names (NAME_RX): never an option.
- gaps: what could not be read, and why.

INVESTIGATE_NODE_ROOT, when set, is a directory the host's files are read under (a container that mounts the host
there; the staged test hosts); processes come from this machine's /proc (kept to those carrying
INVESTIGATE_STAGED_TAG when that is set) and from <root>/proc when it lists any.
"""
import json
import os
import re
import socket
import subprocess
import sys

ROOT = os.environ.get("INVESTIGATE_NODE_ROOT") or "/"
TAG = os.environ.get("INVESTIGATE_STAGED_TAG")
NOBODY = (65534, frozenset([65534]))
NAME_RX = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,252}\Z")  # \Z: `$` also matches before a trailing newline
HEX_RX = re.compile(r"^[0-9a-f]{12,64}\Z")

# kind -> (how its argv names its config, standard locations) (each project's documented default path)
PROXY_CONFIG = {
    "nginx": (("-c",), ("/etc/nginx/nginx.conf", "/usr/local/nginx/conf/nginx.conf", "/etc/openresty/nginx.conf")),
    "haproxy": (("-f",), ("/etc/haproxy/haproxy.cfg", "/usr/local/etc/haproxy/haproxy.cfg")),
    "envoy": (("-c", "--config-path"), ("/etc/envoy/envoy.yaml",)),
    "traefik": (("--configFile", "--configfile"), ("/etc/traefik/traefik.yml", "/etc/traefik/traefik.yaml",
                                                   "/etc/traefik/traefik.toml")),
    "caddy": (("--config",), ("/etc/caddy/Caddyfile",)),
    "litellm": (("--config", "-c"), ("/etc/litellm/config.yaml", "/app/config.yaml", "/app/proxy_server_config.yaml")),
}
ENGINE_SCRIPTS = {"vllm": "vllm", "trtllm-serve": "trtllm", "text-generation-launcher": "tgi",
                  "text-generation-server": "tgi", "llama-server": "llamacpp", "ollama": "ollama",
                  "tritonserver": "triton"}
PROGRAMS = {"nginx": "nginx", "openresty": "nginx", "haproxy": "haproxy", "envoy": "envoy", "traefik": "traefik",
            "caddy": "caddy", "litellm": "litellm", "queue": "queue_proxy", "queue-proxy": "queue_proxy",
            "triton_python_backend_stub": "triton_python", "pilot-agent": "istio_agent"}
ENGINE_KINDS = ("vllm", "sglang", "tensorrt_llm", "trtllm", "tgi", "llamacpp", "ollama", "triton", "ray_serve")
UNIT_DIRS = ("/etc/systemd/system", "/run/systemd/system", "/lib/systemd/system", "/usr/lib/systemd/system")
NOT_SECRET = ("proxy_pass", "grpc_pass", "fastcgi_pass", "uwsgi_pass", "scgi_pass", "memcached_pass",
              "proxy_pass_header", "proxy_pass_request_body", "proxy_pass_request_headers", "proxy_pass_trailers",
              "fastcgi_pass_header", "fastcgi_pass_request_body", "fastcgi_pass_request_headers")
# nginx directives whose last word is `pass` (they name where requests go, not a password)
SECRET_HEADERS = ("authorization", "proxy-authorization", "x-api-key", "api-key", "cookie", "set-cookie")
SHOW_PROPS = ("LoadState", "Environment", "CPUQuotaPerSecUSec", "CPUWeight", "CPUAffinity", "AllowedCPUs", "LimitMEMLOCK",
              "LimitNOFILE", "Nice", "MemoryMax", "MemoryHigh", "TasksMax", "NRestarts", "Restart", "IOWeight",
              "CPUSchedulingPolicy", "OOMScoreAdjust", "ExecMainStartTimestamp", "ActiveState")


def hp(path):
    """A host path under ROOT."""
    return os.path.join(ROOT, path.lstrip("/")) if ROOT != "/" else path


def shown(path):
    """A host path as the host knows it (ROOT taken off)."""
    if ROOT != "/" and path.startswith(ROOT.rstrip("/") + "/"):
        return "/" + path[len(ROOT.rstrip("/")) + 1:]
    return path


# --- masking ------------------------------------------------------------------------------------------------------
TOKEN_SPLIT = re.compile(r"[\s=:,;{}()\[\]]+")
ITEM = re.compile(r"[ \t]*(?:-[ \t]+)*")


def secret_token(tok):
    t = tok.strip("'\"`$-").lower()
    if not t or len(t) > 100 or t in NOT_SECRET:
        return False
    return t in SECRET_HEADERS or secret_key(t)


def mask_line(line):
    """A config line with credentials masked: every secret-looking value (SECRET_VALUE) and, after a token that names
    a secret (a key, directive or header such as password, api_key, Authorization), the rest of the line."""
    return _mask(line)[0]


def _mask(line):
    """(mask_line's line, whether the secret's value goes on past the line: nothing ended it with a `;`)."""
    line = SECRET_VALUE.sub(MASK, line[:4000])
    pos = 0
    for tok in TOKEN_SPLIT.split(line):
        at = line.find(tok, pos) if tok else -1
        if at < 0:
            continue
        pos = at + len(tok)
        if secret_token(tok):
            end = len(line.rstrip())
            if pos >= end:
                return line, True
            while pos < end and line[pos] in " \t:=":
                pos += 1
            if pos >= end:
                return line, True  # `key:` with its value below
            stop, quote = pos, None  # the value ends at a `;` outside quotes (nginx, haproxy), else with the line
            while stop < end and (quote or line[stop] != ";"):
                if quote and line[stop] == quote:
                    quote = None
                elif not quote and line[stop] in "\"'":
                    quote = line[stop]
                stop += 1
            rest, more = _mask(line[stop:]) if stop < end else (line[stop:], True)
            return line[:pos] + (" " if pos == at + len(tok) else "") + MASK + rest, more
    return line, False


def mask_text(text):
    """mask_line over each line, and the lines a secret's value continues on: after a line whose secret no `;` ends
    (`proxy_set_header X-Api-Key` with its value below, a YAML `master_key: >-` or `private_key:` block), each
    following line indented deeper than it, or continued by a trailing backslash, is masked up to the `;` that ends
    the directive."""
    out, owed, joined = [], None, False
    for line in text.splitlines():
        body = line.lstrip()
        indent = len(line) - len(body)
        if owed is not None and (joined or indent > owed or not body):
            joined = line.rstrip().endswith("\\")
            if not body:
                out.append(line)
                continue
            cut = body.find(";")
            if cut < 0:
                out.append(line[:indent] + MASK)
                continue
            rest, more = _mask(body[cut:])
            out.append(line[:indent] + MASK + rest)
            owed = owed if more else None
            continue
        owed = None
        masked, more = _mask(line)
        out.append(masked)
        if more:  # deeper than the line's first word (a YAML list item's key sits after its `- `)
            owed, joined = len(ITEM.match(line).group(0)), line.rstrip().endswith("\\")
    return "\n".join(out)


def env_ok(name, value, names, prefixes):
    if len(name) > 100 or SECRET_NAME.search(name) or SECRET_VALUE.search(value) or len(value) > 4096:
        return False
    return name in names or name.startswith(prefixes)


# --- processes ----------------------------------------------------------------------------------------------------
def proc_dirs():
    """(proc directory, pid) of every process to look at: this machine's (staged-tag filtered) and <ROOT>/proc's."""
    out = []
    for base in (["/proc"] + ([hp("/proc")] if ROOT != "/" else [])):
        for p in listdir(base):
            if p.isdigit() and int(p) != os.getpid():
                out.append((base, p))
    return out


def ns_link(base, pid, kind):
    try:
        return os.readlink("%s/%s/ns/%s" % (base, pid, kind))
    except OSError:
        return None


def status_field(base, pid, name):
    try:
        for line in host_text("%s/%s/status" % (base, pid), 1 << 16).splitlines():
            if line.startswith(name + ":"):
                return line.split(":", 1)[1].strip()
    except OSError:
        return None
    return None


def kind_of(argv):
    """What a process is, from its command line: an engine, a proxy or gateway, a Ray Serve actor; None else."""
    if not argv:
        return None
    first = argv[0]
    if first.startswith("ray::Serve") or first.startswith("ray::ProxyActor"):
        return "ray_serve"
    if first.startswith("nginx: "):
        return "nginx"
    kind = server_kind(argv)
    if kind:
        return kind
    for i, a in enumerate(argv[:-1]):
        if a == "-m":
            mod = argv[i + 1]
            if mod.startswith("text_generation_server"):
                return "tgi"
            if mod == "litellm" or mod.startswith("litellm."):
                return "litellm"
            if mod.startswith("ray.serve"):
                return "ray_serve"
    starts = argv[:2] if os.path.basename(first).startswith("python") else argv[:1]
    for a in starts:
        base = os.path.basename(a)
        if base in ("vllm", "ollama"):
            rest = argv[argv.index(a) + 1:]
            if rest and rest[0] == "serve":
                return base
            continue
        if base in ENGINE_SCRIPTS:
            return ENGINE_SCRIPTS[base]
        if base in PROGRAMS:
            return PROGRAMS[base]
    return None


def cgroup_of(base, pid):
    try:
        text = host_text("%s/%s/cgroup" % (base, pid), 1 << 16)
    except OSError:
        return None
    paths = [ln.split(":", 2)[2] for ln in text.splitlines() if ln.count(":") >= 2]
    unified = [p for p in paths if p and p != "/"]
    return unified[0] if unified else (paths[0] if paths else None)


CGROUP_MOUNTS = ("/sys/fs/cgroup", "/sys/fs/cgroup/unified", "/sys/fs/cgroup/systemd")


def users_words(cg):
    """Whether a cgroup path lies where an unprivileged user names the cgroups: a systemd user manager's slice
    (`systemd-run --user --unit=vllm.service` makes .../user@1001.service/app.slice/vllm.service) or a directory of
    the cgroup file system that a user owns (a delegated subtree)."""
    parts = [x for x in cg.strip("/").split("/") if x]
    if any(x == "user.slice" or x.startswith("user@") for x in parts):
        return True
    for mnt in CGROUP_MOUNTS:
        d = hp(mnt)
        for x in parts:
            d = os.path.join(d, x)
            try:
                if os.stat(d).st_uid != 0:
                    return True
            except OSError:
                break
    return False


def placement(cg):
    """What a cgroup path says of where the process runs: systemd unit, docker container, pod uid, container id;
    nothing when a user named the cgroups (its unit would be root's unit of that name, its container id another's)."""
    out = {}
    if not cg or users_words(cg):
        return out
    parts = cg.strip("/").split("/")
    for part in parts:
        m = re.match(r"^(docker|cri-containerd|crio|libpod)-([0-9a-f]{12,64})\.scope$", part)
        if m:
            out["container_id"] = m.group(2)
            out["runtime"] = m.group(1)
            continue
        m = re.match(r"^kubepods(?:-[a-z]+)?-pod([0-9a-f_]{36})\.slice$", part) or re.match(r"^pod([0-9a-f-]{36})$", part)
        if m:
            out["pod_uid"] = m.group(1).replace("_", "-")
            continue
        if part.endswith(".service") and NAME_RX.match(part):
            out["unit"] = part
    if len(parts) >= 2 and parts[0] == "docker" and HEX_RX.match(parts[1]):
        out["container_id"] = parts[1]
        out["runtime"] = "docker"
    if "kubepods" in cg and "container_id" not in out and HEX_RX.match(parts[-1]):
        out["container_id"] = parts[-1]
    return out


def flag_values(argv, names):
    out = []
    for i, a in enumerate(argv):
        for n in names:
            if a == n and i + 1 < len(argv):
                out.append(argv[i + 1])
            elif a.startswith(n + "=") and len(a) > len(n) + 1:
                out.append(a.split("=", 1)[1])
    return out


def title_flag(argv, flag):
    """A flag inside a process title (nginx's `nginx: master process /usr/sbin/nginx -c /etc/nginx/x.conf`)."""
    words = " ".join(argv).split()
    return flag_values(words, (flag,))


def interpreter_of(base, pid, argv):
    try:
        exe = os.readlink("%s/%s/exe" % (base, pid))
    except OSError:
        exe = argv[0] if argv and os.path.basename(argv[0]).startswith("python") else None
    if not exe:
        return None
    name = os.path.basename(exe)
    m = re.match(r"^python(\d(?:\.\d+)?)", name)
    return {"exe": exe, "python": m.group(1) if m else None} if m or name.startswith("python") else {"exe": exe}


# --- files --------------------------------------------------------------------------------------------------------
class Files(object):
    def __init__(self, limit, most):
        self.limit, self.most = limit, most
        self.items, self.seen = [], set()

    def read(self, path, layer, role, creds=None, named_by=None, quiet=False, keep=None):
        """Read a file (host path) for a layer: its masked text, or why not. `keep`: a test of the text; a file
        that fails it is left out (a YAML file that is not a Ray Serve config)."""
        full = hp(path)
        key = (os.path.normpath(full), layer, creds is None)
        if key in self.seen or len(self.items) >= self.most:
            return None
        self.seen.add(key)
        entry = {"path": path, "layer": layer, "role": role}
        if named_by is not None:
            entry["named_by"] = named_by
        if not os.path.lexists(full):
            if quiet:
                return None
            entry["error"] = "not present"
            self.items.append(entry)
            return entry
        try:
            data, truncated = read_host_file(full, self.limit, creds)
        except OSError as exc:
            entry["error"] = str(exc.strerror or exc)[:300]
            self.items.append(entry)
            return entry
        entry["text"] = mask_text(data.decode("utf-8", "replace"))
        entry["truncated"] = truncated
        if keep is not None and not keep(entry["text"]):
            return None
        self.items.append(entry)
        return entry


def names_in(files, d, layer, creds, pid):
    """The names in host directory d, as the process of creds (None: this probe's own standard places) could list
    them; [] when it could not, and that said once for the directory, never a name of what is in it."""
    if creds is None:
        return listdir(hp(d))
    names, why = list_host_dir(hp(d), creds)
    if why:
        key = (os.path.normpath(hp(d)), layer, "listing")
        if key not in files.seen and len(files.items) < files.most:
            files.seen.add(key)
            files.items.append({"path": d, "layer": layer, "role": "directory", "named_by": pid,
                                "error": "%s: not listed" % why})
    return names


NGINX_INCLUDE = re.compile(r"^[ \t]*include\s+([^;#\s]+)\s*;", re.M)  # not `^\s*`: quadratic over blank lines


def nginx_files(files, path, creds, pid):
    """nginx.conf and the files it includes (globs expanded, relative to the configuration's directory)."""
    first = files.read(path, "nginx", "config", creds, pid)
    todo, depth = [first], 0
    prefix = os.path.dirname(path)
    while todo and depth < 4:
        nxt = []
        for entry in todo:
            if not entry or "text" not in entry:
                continue
            for pat in NGINX_INCLUDE.findall(entry["text"]):
                if pat.endswith("mime.types") or MASK in pat:
                    continue
                pat = pat if pat.startswith("/") else os.path.join(prefix, pat)
                d, g = os.path.split(pat)
                names = [n for n in names_in(files, d, "nginx", creds, pid) if fnmatch.fnmatchcase(n, g)] \
                    if any(c in g for c in "*?[") else [g]
                for n in names[:64]:
                    nxt.append(files.read(os.path.join(d, n), "nginx", "include", creds, pid))
        todo, depth = nxt, depth + 1


def ray_serve_files(files, dirs):
    """A Ray Serve config (applications -> deployments) and the deployment modules it imports, in the given
    directories ((dir, creds, pid): a Ray Serve process's working directory, read as that process could; the logs'
    directories and Ray's image home, as this probe)."""
    found = 0
    for d, creds, pid in dirs:
        for n in names_in(files, d, "ray_serve", creds, pid)[:400]:
            if not n.endswith((".yaml", ".yml")) or found >= 4:
                continue
            p = os.path.join(d, n)
            size = size_of(hp(p))
            if size is None or size > files.limit:
                continue
            entry = files.read(p, "ray_serve", "config", creds, pid, quiet=True,
                               keep=lambda t: "applications:" in t and "deployments:" in t)
            if not entry or "text" not in entry:
                continue
            found += 1
            for mod in re.findall(r"import_path:\s*['\"]?([A-Za-z_][\w.]*):", entry["text"])[:8]:
                files.read(os.path.join(d, mod.replace(".", "/") + ".py"), "ray_serve", "deployment", creds, pid,
                           quiet=True)


def triton_files(files, repo, creds, pid):
    for model in names_in(files, repo, "triton", creds, pid)[:64]:
        files.read(os.path.join(repo, model, "config.pbtxt"), "triton", "model_config", creds, pid, quiet=True)


def unit_files(files, unit):
    for d in UNIT_DIRS:
        got = files.read(os.path.join(d, unit), "systemd", "unit", quiet=True)
        for n in listdir(hp(os.path.join(d, unit + ".d")))[:32]:
            if n.endswith(".conf"):
                files.read(os.path.join(d, unit + ".d", n), "systemd", "dropin")
        if got:
            return True
    return False


# --- commands -----------------------------------------------------------------------------------------------------
def on_path(program):
    for d in (os.environ.get("PATH") or "").split(os.pathsep):
        if d and os.access(os.path.join(d, program), os.X_OK):
            return os.path.join(d, program)
    return None


def run(out, argv, layer, params, reduce=None):
    """Run a fixed read-only argv (no shell) and keep its masked output (or what `reduce` keeps of it)."""
    if not on_path(argv[0]):
        return None
    entry = {"argv": argv, "layer": layer}
    try:
        res = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             timeout=float(params.get("command_timeout_s", 8.0)))
    except (OSError, subprocess.SubprocessError) as exc:
        entry["error"] = str(exc)[:300]
        out.append(entry)
        return entry
    limit = int(params.get("max_output_bytes", 8 << 20))
    text = res.stdout[:limit].decode("utf-8", "replace")
    entry["rc"] = res.returncode
    entry["stderr"] = mask_text(res.stderr[:600].decode("utf-8", "replace"))
    if reduce is not None and res.returncode == 0:
        try:
            entry["json"] = reduce(json.loads(text))
        except (ValueError, TypeError, KeyError, AttributeError, RecursionError):
            entry["stdout"] = mask_text(text[:200000])
    else:
        entry["stdout"] = mask_text(text[:200000])
    out.append(entry)
    return entry


def keep_env_list(env, names, prefixes):
    """A container's environment ([{"name", "value"}] or ["K=V"]) with only the allowed, non-secret variables."""
    out = []
    for item in env or []:
        if isinstance(item, dict):
            k, v = str(item.get("name", "")), item.get("value")
            if v is None:
                out.append({"name": k, "from": "valueFrom"}) if env_ok(k, "", names, prefixes) else None
            elif env_ok(k, str(v), names, prefixes):
                out.append({"name": k, "value": str(v)})
        else:
            k, _, v = str(item).partition("=")
            if env_ok(k, v, names, prefixes):
                out.append(k + "=" + v)
    return out


POD_CONTAINER_KEYS = ("name", "image", "resources", "readinessProbe", "livenessProbe", "startupProbe", "ports",
                      "volumeMounts", "securityContext")


def reduce_pod(pod, names, prefixes):
    if not isinstance(pod, dict):
        return None
    meta, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
    conts = []
    for c in (spec.get("containers") or [])[:16]:
        if isinstance(c, dict):
            d = dict((k, c[k]) for k in POD_CONTAINER_KEYS if k in c)
            d["command"] = mask_argv([str(x) for x in c.get("command") or []])[:100]
            d["args"] = mask_argv([str(x) for x in c.get("args") or []])[:200]
            d["env"] = keep_env_list(c.get("env"), names, prefixes)
            conts.append(d)
    ann = dict((k, v) for k, v in (meta.get("annotations") or {}).items()
               if str(k).startswith(("autoscaling.knative.dev/", "sidecar.istio.io/", "serving.kserve.io/",
                                     "serving.knative.dev/", "proxy.istio.io/", "traffic.sidecar.istio.io/")))
    return {"kind": "Pod", "apiVersion": pod.get("apiVersion"),
            "metadata": {"name": meta.get("name"), "namespace": meta.get("namespace"), "uid": meta.get("uid"),
                         "ownerReferences": meta.get("ownerReferences"), "labels": meta.get("labels"),
                         "annotations": ann},
            "spec": {"containers": conts, "volumes": spec.get("volumes"), "nodeName": spec.get("nodeName"),
                     "hostIPC": spec.get("hostIPC"), "containerConcurrency": spec.get("containerConcurrency")},
            "status": {"containerStatuses": status.get("containerStatuses"), "conditions": status.get("conditions"),
                       "phase": status.get("phase"), "qosClass": status.get("qosClass")}}


def reduce_docker(doc, names, prefixes):
    items = doc if isinstance(doc, list) else [doc]
    out = []
    for c in items[:4]:
        hc, cfg, st = c.get("HostConfig") or {}, c.get("Config") or {}, c.get("State") or {}
        keep = ("CpuQuota", "CpuPeriod", "NanoCpus", "CpusetCpus", "CpuShares", "ShmSize", "IpcMode", "Ulimits",
                "Memory", "MemorySwap", "PidsLimit", "NetworkMode", "Runtime", "DeviceRequests", "OomKillDisable",
                "PidMode", "Privileged", "RestartPolicy")
        out.append({"Id": c.get("Id"), "Name": c.get("Name"), "RestartCount": c.get("RestartCount"),
                    "HostConfig": dict((k, hc.get(k)) for k in keep if k in hc),
                    "Config": {"Image": cfg.get("Image"), "Cmd": mask_argv([str(x) for x in cfg.get("Cmd") or []]),
                               "Entrypoint": mask_argv([str(x) for x in cfg.get("Entrypoint") or []]),
                               "Env": keep_env_list(cfg.get("Env"), names, prefixes)},
                    "State": dict((k, st.get(k)) for k in ("Status", "OOMKilled", "ExitCode", "StartedAt")
                                  if k in st)})
    return out


def _pod_ids(pod):
    """The uid and container ids a pod object carries (none in a manifest)."""
    meta = pod.get("metadata") or {}
    ids = [str(s.get("containerID") or "") for s in (pod.get("status") or {}).get("containerStatuses") or []
           if isinstance(s, dict)]
    return [x for x in [str(meta.get("uid") or "")] + ids if x]


def reduce_pods(doc, want, names, prefixes):
    """The one pod of a pod list that `want` names (uid, container id or name); the only one when there is one."""
    items = doc.get("items") if isinstance(doc, dict) and "items" in doc else [doc]
    items = [i for i in items if isinstance(i, dict)]

    def uid_is(i):
        meta = i.get("metadata") or {}
        # a static pod runs under the kubelet's uid (its config hash); the API server's mirror of it has a uid of its
        # own and carries the kubelet's in this annotation (kubelet pkg/kubelet/pod/mirror_client.go)
        mirror = (meta.get("annotations") or {}).get("kubernetes.io/config.mirror")
        return want["pod_uid"] in (meta.get("uid"), mirror)

    def container_is(i):
        ids = [str(s.get("containerID", "")).split("://")[-1] for s in (i.get("status") or {}).get(
            "containerStatuses") or [] if isinstance(s, dict)]
        return any(x and (x.startswith(want["container_id"]) or want["container_id"].startswith(x)) for x in ids)

    # the cgroup's uid or container id, when known, is the kernel's word: a name (a process's own) never overrides
    # it. The uid first; the container id where no pod has that uid (both are the cgroup's, the container id as
    # unique as the uid)
    tests = ([uid_is] if want.get("pod_uid") else []) + ([container_is] if want.get("container_id") else [])
    if not tests:
        tests = [lambda i: bool(want.get("name")) and (i.get("metadata") or {}).get("name") == want["name"]]
    hit = next((i for t in tests for i in items if t(i)), None)
    if hit is None and len(items) == 1 and (not (want.get("pod_uid") or want.get("container_id"))
                                            or not _pod_ids(items[0])):
        # the only pod listed, and nothing of it that the cgroup could contradict: a pod without a uid or container
        # ids is not the API server's (which always gives both to a running pod) but a manifest's
        hit = items[0]
    return reduce_pod(hit, names, prefixes) if hit else None


def reduce_hpas(doc):
    """HorizontalPodAutoscalers (autoscaling/v2): each one's target, replica bounds, metrics with their targets, and
    its status (current metrics, replicas, conditions); annotations and labels left out."""
    items = doc.get("items") if isinstance(doc, dict) and "items" in doc else [doc]
    out = []
    for h in [i for i in items if isinstance(i, dict)][:16]:
        meta, spec, st = h.get("metadata") or {}, h.get("spec") or {}, h.get("status") or {}
        out.append(mask_value({"kind": "HorizontalPodAutoscaler", "apiVersion": h.get("apiVersion"),
                               "metadata": {"name": meta.get("name"), "namespace": meta.get("namespace")},
                               "spec": dict((k, spec.get(k)) for k in ("scaleTargetRef", "minReplicas", "maxReplicas",
                                                                      "metrics", "behavior") if k in spec),
                               "status": dict((k, st.get(k)) for k in ("currentReplicas", "desiredReplicas",
                                                                      "currentMetrics", "conditions") if k in st)}))
    return {"kind": "List", "items": out}


def reduce_scaledobjects(doc):
    """KEDA ScaledObjects: each one's target, replica bounds and triggers (type, metricType, and of their metadata
    only the query, metric name and thresholds: no server address or credentials reference)."""
    items = doc.get("items") if isinstance(doc, dict) and "items" in doc else [doc]
    out = []
    for so in [i for i in items if isinstance(i, dict)][:16]:
        meta, spec = so.get("metadata") or {}, so.get("spec") or {}
        trig = []
        for t in (spec.get("triggers") or [])[:8]:
            if isinstance(t, dict):
                md = t.get("metadata") or {}
                trig.append({"type": t.get("type"), "metricType": t.get("metricType"),
                             "metadata": dict((k, str(md[k])[:600]) for k in ("query", "metricName", "threshold",
                                                                            "activationThreshold", "value")
                                              if isinstance(md, dict) and k in md)})
        out.append(mask_value({"kind": "ScaledObject", "metadata": {"name": meta.get("name"),
                                                                     "namespace": meta.get("namespace")},
                               "spec": {"scaleTargetRef": spec.get("scaleTargetRef"),
                                        "minReplicaCount": spec.get("minReplicaCount"),
                                        "maxReplicaCount": spec.get("maxReplicaCount"), "triggers": trig}}))
    return {"kind": "List", "items": out}


def reduce_list(doc):
    """A Kubernetes list (DestinationRules, events) as it is: its items' specs carry no credentials, but their
    strings are masked as values."""
    return mask_value(doc)


# --- what the layers report themselves: their log lines, Triton's per-model counters -----------------------------
def scan_logs(params, out):
    """Count the given logs' lines that a layer prints about itself (`log_patterns`: fixed regexes sent with the
    probe), keeping each pattern's match count, its numeric groups' largest and last values and one example."""
    pats = []
    for p in params.get("log_patterns") or []:
        try:
            pats.append((p["layer"], p["name"], re.compile(p["regex"])))
        except (re.error, KeyError, TypeError):
            continue
    if not pats:
        return
    budget = int(params.get("max_log_bytes", 32 << 20))
    for path in (params.get("logs") or [])[:16]:
        try:
            fd = open_host_file(path, None, True)  # a --log path: the user's, as the engine probe reads it
        except OSError as exc:
            out.append({"log": path, "error": str(exc.strerror or exc)[:200]})
            continue
        found = {}
        try:
            for _no, line in log_lines(fd, budget, {}):
                line = line[:8000]
                for layer, name, rx in pats:
                    m = rx.search(line)
                    if not m:
                        continue
                    f = found.setdefault(name, {"log": path, "layer": layer, "name": name, "count": 0, "max": {},
                                                "last": {}, "example": mask_line(line.strip())[:400]})
                    f["count"] += 1
                    for k, v in m.groupdict().items():
                        try:
                            x = float(v)
                        except (TypeError, ValueError):
                            continue
                        f["last"][k] = x
                        f["max"][k] = max(x, f["max"].get(k, x))
        except OSError as exc:
            out.append({"log": path, "error": str(exc)[:200]})
        out.extend(found.values())


def triton_metrics(port, timeout_s):
    """Triton's per-model counters from its metrics endpoint on loopback (nv_inference_*: requests, executions,
    request, queue and compute time), as {model: {counter: value}}; None when it does not answer."""
    got = loopback_get(port, "/metrics", timeout_s, 4 << 20)
    if got.get("status") != 200:
        return None
    body = got["body"][:4 << 20].decode("utf-8", "replace")
    models = {}
    for line in body.splitlines():
        m = re.match(r'^(nv_inference_[a-z_]+)\{model="([^"]{1,200})"[^}]*\}\s+([0-9.eE+-]+)$', line)
        if m:
            try:
                x = float(m.group(3))
            except ValueError:
                continue
            if 0 <= x <= 1e18:  # counters: `1e999` parses as infinity (the report's int() of it raised)
                models.setdefault(m.group(2), {})[m.group(1)] = x
    return models or None


# --- the scan -----------------------------------------------------------------------------------------------------
def main():
    params = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
    names = set(params.get("env_names") or [])
    prefixes = tuple(params.get("env_prefixes") or [])
    files = Files(int(params.get("max_file_bytes", 262144)), int(params.get("max_files", 64)))
    commands, gaps, procs, seen = [], [], [], set()
    for base, pid in proc_dirs():
        argv = proc_argv(pid, base)
        kind = kind_of(argv) if argv else None
        if kind is None:
            continue
        env = proc_environ(pid, base)
        if TAG is not None and base == "/proc" and (env or {}).get("INVESTIGATE_STAGED_TAG") != TAG:
            continue
        creds = proc_creds(pid, base, "self" if ROOT == "/" else "1")
        try:
            cwd = os.readlink("%s/%s/cwd" % (base, pid))
        except OSError:
            cwd = None
        cg = cgroup_of(base, pid)
        p = {"pid": int(pid), "kind": kind, "argv": mask_argv(argv)[:200], "cgroup": cg,
             "threads": None, "env": {}, "env_readable": env is not None}
        p.update(placement(cg))
        th = status_field(base, pid, "Threads")
        p["threads"] = int(th) if th and th.isdigit() else None
        p["interpreter"] = interpreter_of(base, pid, argv)
        for k, v in sorted((env or {}).items()):
            if env_ok(k, v, names, prefixes):
                p["env"][k] = v
        for k in ("HOSTNAME", "POD_NAME", "POD_NAMESPACE", "SLURM_JOB_ID", "KUBERNETES_SERVICE_HOST"):
            v = (env or {}).get(k)
            if v and NAME_RX.match(v):
                p.setdefault("ids", {})[k] = v
        p["_creds"], p["_cwd"] = creds or NOBODY, cwd
        p["_uts_ours"] = ns_link(base, pid, "uts") is not None and ns_link(base, pid, "uts") == ns_link("/proc", "self", "uts")
        if tuple(argv) in seen:
            continue  # the same process seen twice (this machine's /proc and a mounted one)
        seen.add(tuple(argv))
        procs.append(p)

    def resolve(path, cwd):
        """A path a process named, as the host knows it; None for a relative one whose directory is unknown."""
        if path.startswith("/"):
            return path
        return os.path.join(cwd, path) if cwd else None

    ray_dirs = []
    for p in procs:
        kind, argv, creds = p["kind"], p["argv"], p["_creds"]
        if kind in PROXY_CONFIG:
            flags, standard = PROXY_CONFIG[kind]
            named = [v for f in flags for v in (flag_values(argv, (f,)) or title_flag(argv, f))]
            if kind == "litellm" and not named and p["env"].get("CONFIG_FILE_PATH"):
                named = [p["env"]["CONFIG_FILE_PATH"]]
            for path in named[:4]:
                path = resolve(path, p["_cwd"])
                if path is None:
                    continue
                if kind == "nginx":
                    nginx_files(files, path, creds, p["pid"])
                elif kind == "haproxy" and os.path.isdir(hp(path)):
                    for n in names_in(files, path, kind, creds, p["pid"])[:32]:
                        if n.endswith(".cfg"):
                            files.read(os.path.join(path, n), kind, "config", creds, p["pid"])
                else:
                    files.read(path, kind, "config", creds, p["pid"])
            for path in standard:
                if kind == "nginx":
                    if os.path.lexists(hp(path)):
                        nginx_files(files, path, None, None)
                else:
                    files.read(path, kind, "config", quiet=True)
        if kind in ("triton",):
            for repo in flag_values(argv, ("--model-repository", "--model-store"))[:4]:
                if resolve(repo, p["_cwd"]):
                    triton_files(files, resolve(repo, p["_cwd"]), creds, p["pid"])
        if kind == "triton_python" and len(argv) > 1 and argv[1].endswith(".py"):
            d = os.path.dirname(os.path.dirname(argv[1]))
            files.read(os.path.join(d, "config.pbtxt"), "triton", "model_config", creds, p["pid"], quiet=True)
        if kind == "ray_serve" and p["_cwd"]:
            ray_dirs.append((p["_cwd"], creds, p["pid"]))
        if kind == "envoy" and any("istio" in a for a in argv):
            p["istio"] = True
    if any(p["kind"] == "ray_serve" for p in procs):
        for log in params.get("logs") or []:
            ray_dirs.append((shown(os.path.dirname(log)), None, None))
        ray_dirs.append(("/home/ray", None, None))
        ray_serve_files(files, [d for i, d in enumerate(ray_dirs) if d[0] and d not in ray_dirs[:i]])

    # the orchestrator around each engine (and each layer): unit, container, pod, job
    units, containers, pods, jobs, named_units = [], [], [], [], set()
    for p in procs:
        if p.get("unit") and p["unit"] not in units:
            units.append(p["unit"])
            named_units.add(p["unit"])
        elif not p.get("unit") and p["kind"] in ("ollama", "vllm", "sglang", "tgi", "llamacpp", "triton", "litellm",
                                                  "nginx", "haproxy", "envoy"):
            guess = {"llamacpp": "llama-server", "triton": "tritonserver"}.get(p["kind"], p["kind"]) + ".service"
            if guess not in units:
                units.append(guess)
        if p.get("container_id") and p.get("runtime") in ("docker", None) and p["container_id"] not in containers \
                and "pod_uid" not in p and "kubepods" not in (p.get("cgroup") or ""):
            containers.append(p["container_id"])
        in_pod = "kubepods" in (p.get("cgroup") or "")
        want = dict((k, p[k]) for k in ("pod_uid", "container_id") if p.get(k) and in_pod)
        ids = p.get("ids") or {}
        named = ids.get("POD_NAME") or (ids.get("HOSTNAME") if ids.get("KUBERNETES_SERVICE_HOST") else None)
        # a name from a process's environment is its own word: taken for a process the kernel placed in a pod (its
        # cgroup; reduce_pods then holds the pod to the cgroup's uid), or one whose name is the hostname of the UTS
        # namespace it shares with this probe (a probe run inside the pod); not for any process that says so
        if named and (in_pod or (p.get("_uts_ours") and named == socket.gethostname())):
            want["name"] = named
            want["namespace"] = ids.get("POD_NAMESPACE")
        if want and want not in pods:
            pods.append(want)
        if ids.get("SLURM_JOB_ID") and ids["SLURM_JOB_ID"].isdigit() and ids["SLURM_JOB_ID"] not in jobs:
            jobs.append(ids["SLURM_JOB_ID"])
    for unit in units[:6]:
        if not NAME_RX.match(unit):
            continue
        have = unit_files(files, unit)
        if on_path("systemctl") and (have or unit in named_units):
            run(commands, ["systemctl", "show", unit, "-p", ",".join(SHOW_PROPS)], "systemd", params)
            if not have:
                run(commands, ["systemctl", "cat", unit], "systemd", params)
    for cid in containers[:4]:
        if HEX_RX.match(cid):
            run(commands, ["docker", "inspect", cid], "docker", params, lambda d: reduce_docker(d, names, prefixes))
    if on_path("kubectl"):
        for want in pods[:4]:
            ns = want.get("namespace")
            nsargs = ["-n", ns] if ns and NAME_RX.match(ns) else ["--all-namespaces"]
            if want.get("name") and NAME_RX.match(want["name"]):
                argv = ["kubectl", "get", "pod", want["name"]] + (nsargs if ns else []) + ["-o", "json"]
            else:
                argv = ["kubectl", "get", "pods", "--all-namespaces", "-o", "json"]
            got = run(commands, argv, "k8s", params, lambda d, w=want: reduce_pods(d, w, names, prefixes))
            pod = (got or {}).get("json") or {}
            meta = pod.get("metadata") or {}
            if meta.get("name") and NAME_RX.match(str(meta["name"])):
                evns = ["-n", meta["namespace"]] if meta.get("namespace") and NAME_RX.match(meta["namespace"]) else []
                run(commands, ["kubectl", "get", "events"] + evns + ["--field-selector",
                    "involvedObject.name=" + meta["name"], "-o", "json"], "k8s_events", params, reduce_list)
        if any(p.get("istio") for p in procs):
            run(commands, ["kubectl", "get", "destinationrules", "--all-namespaces", "-o", "json"], "istio", params,
                reduce_list)
        if pods or any(p["kind"] in ENGINE_KINDS for p in procs):
            # the autoscalers that may own the engine's replicas: what they scale on, and where they stand
            # (asked of any host with kubectl and an engine, so each waits on the API server a bounded time)
            run(commands, ["kubectl", "get", "hpa", "--all-namespaces", "-o", "json", "--request-timeout=3s"], "hpa",
                params, reduce_hpas)
            # KEDA's ScaledObjects (where the CRD exists): the query and threshold behind the HPA KEDA makes
            run(commands, ["kubectl", "get", "scaledobjects", "--all-namespaces", "-o", "json", "--request-timeout=3s"],
                "keda", params, reduce_scaledobjects)
    for job in jobs[:2]:
        run(commands, ["scontrol", "show", "job", job], "slurm", params)

    metrics = []
    for p in procs:
        if p["kind"] == "triton":
            port = (flag_values(p["argv"], ("--metrics-port",)) or ["8002"])[0]
            if port.isdigit():
                got = triton_metrics(port, float(params.get("command_timeout_s", 8.0)))
                if got:
                    metrics.append({"pid": p["pid"], "port": int(port), "models": got})
    logs = []
    scan_logs(params, logs)
    for p in procs:
        p.pop("_creds", None)
        p.pop("_cwd", None)
    print(json.dumps({"processes": procs[:64], "files": files.items, "commands": commands, "gaps": gaps,
                      "triton_metrics": metrics[:4], "log_facts": logs[:64]}))


main()
