"""The configuration of each layer between the user and the engine, read into settings: pure text in, settings out.

Every parser is total: any text gives a `Parsed` (the settings it found, with where each was set) or raises
`ConfigError` with one line; the cost is bounded by construction (the text's size, the count of directives or
values, the nesting and include depth: orchestrator/limits.py). Formats, each from the software's own reference:

- nginx: the configuration's syntax (simple directives end in `;`, block directives in `{...}`, `#` comments,
  quoted strings, `include` with globs; inheritance from http to server to location): nginx.org/en/docs/beginners_guide.html
  and the modules' directive pages (ngx_http_proxy_module, ngx_http_gzip_module, ngx_http_upstream_module).
- HAProxy: sections (global, defaults, frontend, backend, listen) of keyword lines; `server` lines with their
  options (maxconn, maxqueue): docs.haproxy.org configuration.txt sections 2-5.
- Envoy (bootstrap YAML/JSON: clusters' circuit_breakers.thresholds, routes' timeout and retry_policy) and Istio's
  DestinationRule (trafficPolicy.connectionPool.tcp/http, outlierDetection) and VirtualService (timeout, retries):
  envoy api/envoy/config/cluster/v3/circuit_breaker.proto, istio.io networking/v1 reference.
- LiteLLM proxy config.yaml (model_list[].litellm_params: rpm, tpm, timeout, stream_timeout, max_parallel_requests;
  router_settings; litellm_settings: num_retries, request_timeout, cache; general_settings): docs.litellm.ai proxy
  configs.
- Ray Serve config (applications[].deployments[]: max_ongoing_requests, num_replicas, autoscaling_config,
  max_queued_requests) and a deployment module's `@serve.deployment(...)` arguments: docs.ray.io serve/configure.
- Kubernetes objects (a Pod, a pod list, a Deployment's or a Knative Service's pod template; events as JSON or as
  `kubectl get events` prints them): kubernetes.io API reference (core/v1 Probe, Container, ContainerStatus).
- docker inspect (HostConfig: NanoCpus, CpuQuota, CpusetCpus, ShmSize, IpcMode, Ulimits): docs.docker.com engine API.
- systemd units and drop-ins ([Service] Environment=, CPUQuota=, LimitMEMLOCK=, Nice=, ...) and `systemctl show`
  output: systemd.exec(5), systemd.resource-control(5).
- Triton model configuration (config.pbtxt: instance_group count/kind, max_batch_size, dynamic_batching,
  parameters): triton-inference-server/server docs/user_guide/model_configuration.md.
"""

from __future__ import annotations

import fnmatch
import functools
import inspect
import json
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, ParamSpec, TypeVar

from orchestrator.limits import CONFIG_MAX_SETTINGS, DOC_MAX_DEPTH, PATH_CONFIG_MAX_BYTES

MAX_INCLUDES = 8
"""Depth of nginx includes followed (a distribution's layout nests two: nginx.conf -> conf.d/*.conf)."""


class ConfigError(ValueError):
    """A configuration that cannot be read: one line that says which and why."""


@dataclass
class Setting:
    value: Any
    where: str
    """`file:line (context)` where it was set."""


@dataclass
class Parsed:
    """What one layer's configuration sets: setting -> value and where, plus what it says otherwise."""

    layer: str
    settings: dict[str, Setting] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def set(self, name: str, value: Any, where: str) -> None:
        if len(self.settings) < CONFIG_MAX_SETTINGS:
            self.settings.setdefault(name, Setting(value, where))


P = ParamSpec("P")
R = TypeVar("R")


def _total(fn: Callable[P, R]) -> Callable[P, R]:
    """fn, total: a document of an unexpected shape (`model_list: 5`, a string where a mapping belongs: a host's file,
    or a user's --path-config) is a ConfigError naming the file, not a TypeError out of the path report (which lost
    the whole report). The parsers walk documents with isinstance checks; this holds for the walks that do not."""
    sig = inspect.signature(fn)

    @functools.wraps(fn)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except ConfigError:
            raise
        except (TypeError, AttributeError, KeyError, IndexError, ValueError, RecursionError) as e:
            bound = sig.bind_partial(*args, **kwargs).arguments
            files = bound.get("files")
            source = bound.get("source") or bound.get("main") or (next(iter(files)) if isinstance(files, dict)
                                                                  and files else fn.__name__)
            raise ConfigError(f"{source}: not a configuration of the shape {fn.__name__} reads "
                              f"({type(e).__name__}: {str(e)[:100]})") from None

    return run


def _capped(text: Any, source: str) -> str:
    if not isinstance(text, str):
        raise ConfigError(f"{source}: not text")
    if len(text) > PATH_CONFIG_MAX_BYTES:
        raise ConfigError(f"{source}: larger than {PATH_CONFIG_MAX_BYTES} characters: not read")
    return text


# --- nginx ----------------------------------------------------------------------------------------------------------

@dataclass
class Directive:
    name: str
    args: list[str]
    where: str
    block: list["Directive"] | None = None


def _nginx_tokens(text: str, source: str) -> Iterator[tuple[str, int, bool]]:
    """(token, line, quoted) of nginx configuration text; `{`, `}` and `;` are tokens of their own."""
    i, n, line = 0, len(text), 1
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
        elif c.isspace():
            i += 1
        elif c == "#":
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif c in "{};":
            yield c, line, False
            i += 1
        elif c in "\"'":
            j, buf = i + 1, []
            while j < n and text[j] != c:
                if text[j] == "\\" and j + 1 < n:
                    j += 1
                if text[j] == "\n":
                    line += 1
                buf.append(text[j])
                j += 1
            if j >= n:
                raise ConfigError(f"{source}:{line}: an unterminated quoted string")
            yield "".join(buf), line, True
            i = j + 1
        else:
            j = i
            while j < n and not text[j].isspace() and text[j] not in "{};" and not (text[j] in "\"'" and j == i):
                if text[j] == "\\" and j + 1 < n:
                    j += 1
                j += 1
            yield text[i:j], line, False
            i = j


def parse_nginx_text(text: str, source: str, budget: list[int] | None = None) -> list[Directive]:
    """One nginx configuration file as a tree of directives (includes not yet followed)."""
    text = _capped(text, source)
    budget = budget if budget is not None else [CONFIG_MAX_SETTINGS]
    root: list[Directive] = []
    stack: list[list[Directive]] = [root]
    words: list[str] = []
    start = 0
    for tok, line, quoted in _nginx_tokens(text, source):
        if quoted or tok not in "{};":
            if not words:
                start = line
            words.append(tok)
            continue
        if tok == ";":
            if words:
                budget[0] -= 1
                if budget[0] < 0:
                    raise ConfigError(f"{source}: more than {CONFIG_MAX_SETTINGS} directives")
                stack[-1].append(Directive(words[0], words[1:], f"{source}:{start}"))
            words = []
        elif tok == "{":
            if not words:
                raise ConfigError(f"{source}:{line}: a block without a name")
            if len(stack) > DOC_MAX_DEPTH:
                raise ConfigError(f"{source}:{line}: blocks nested deeper than {DOC_MAX_DEPTH}")
            d = Directive(words[0], words[1:], f"{source}:{start}", [])
            stack[-1].append(d)
            assert d.block is not None
            stack.append(d.block)
            words = []
        else:  # "}"
            if words:
                raise ConfigError(f"{source}:{line}: a directive without its ';' before '}}'")
            if len(stack) == 1:
                raise ConfigError(f"{source}:{line}: an unexpected '}}'")
            stack.pop()
    if words:
        raise ConfigError(f"{source}: the last directive has no ';'")
    if len(stack) != 1:
        raise ConfigError(f"{source}: a block is not closed")
    return root


def _nginx_expand(tree: list[Directive], files: dict[str, str], base: str, depth: int, budget: list[int],
                  notes: list[str], parsed: dict[str, tuple[list[Directive], int] | ConfigError] | None = None
                  ) -> list[Directive]:
    """tree with its includes replaced by what they include. Each file is parsed once (`parsed`), and each time it is
    included its directives are charged to the budget again: 64 files that each include `*.conf` reach the budget
    after budget-many directives, not after budget-many parses of up to 4 MB each."""
    parsed = {} if parsed is None else parsed
    out: list[Directive] = []
    for d in tree:
        if budget[0] < 0:
            break
        if d.name == "include" and d.args:
            pat = d.args[0] if d.args[0].startswith("/") else f"{base.rstrip('/')}/{d.args[0]}"
            if depth >= MAX_INCLUDES:
                _note(notes, f"{d.where}: include {pat} nested deeper than {MAX_INCLUDES}: not followed")
                continue
            hits = sorted(p for p in files if fnmatch.fnmatchcase(p, pat))
            for p in hits:
                if p not in parsed:
                    before = budget[0]
                    try:
                        parsed[p] = (parse_nginx_text(files[p], p, budget), before - budget[0])
                    except ConfigError as exc:
                        parsed[p] = exc
                        _note(notes, str(exc))
                        continue
                else:
                    got = parsed[p]
                    if isinstance(got, ConfigError):
                        continue
                    budget[0] -= got[1]
                got = parsed[p]
                if budget[0] < 0:
                    _note(notes, f"{d.where}: includes give more than {CONFIG_MAX_SETTINGS} directives: the rest "
                                 f"not followed")
                    break
                assert not isinstance(got, ConfigError)
                out.extend(_nginx_expand(got[0], files, base, depth + 1, budget, notes, parsed))
            continue
        if d.block is not None:
            d = Directive(d.name, d.args, d.where, _nginx_expand(d.block, files, base, depth, budget, notes, parsed))
        out.append(d)
    return out


def _note(notes: list[str], text: str) -> None:
    if len(notes) < 50 and text not in notes:
        notes.append(text)


NGINX_PASS = ("proxy_pass", "grpc_pass", "uwsgi_pass", "fastcgi_pass", "scgi_pass")


@_total
def parse_nginx(files: dict[str, str], main: str | None = None) -> Parsed:
    """nginx's effective settings at the location that passes requests on (the one whose path looks like an API's,
    else the first), each inherited from the server and http blocks where the location does not set it; `files`
    maps each path read to its text (the main configuration and what it includes)."""
    if not files:
        raise ConfigError("nginx: no configuration text")
    main = main or next(iter(files))
    budget = [CONFIG_MAX_SETTINGS]
    notes: list[str] = []
    tree = _nginx_expand(parse_nginx_text(files[main], main, budget), files, main.rsplit("/", 1)[0] or "/", 0,
                         budget, notes)
    out = Parsed("nginx", notes=notes)
    chains: list[list[tuple[str, list[Directive]]]] = []

    def walk(block: list[Directive], chain: list[tuple[str, list[Directive]]], depth: int) -> None:
        if depth > DOC_MAX_DEPTH:
            return
        for d in block:
            if d.block is None:
                continue
            label = d.name + (" " + " ".join(d.args) if d.args else "")
            sub = chain + [(label, d.block)]
            if d.name == "location" and any(x.name in NGINX_PASS for x in d.block):
                chains.append(sub)
            walk(d.block, sub, depth + 1)

    walk(tree, [("main", tree)], 0)
    upstreams = {" ".join(d.args): d.block for d in _all(tree, "upstream") if d.block is not None}
    if not chains:
        chains = [[("main", tree)] + [(d.name, d.block) for d in _all(tree, "http") if d.block is not None][:1]]
    chains.sort(key=lambda c: (0 if re.search(r"/v1|/api|/generate|/chat|/completions", c[-1][0]) else 1))
    chain = chains[0]
    for label, block in reversed(chain):
        ctx = label.split(" ", 1)[0] if label != "main" else "main"
        for d in block:
            if d.block is None and d.name not in ("include",):
                val = " ".join(d.args)
                if d.name in ("add_header", "proxy_set_header"):
                    if d.args:
                        out.set(f"{d.name}.{d.args[0].lower()}", " ".join(d.args[1:]), f"{d.where} ({label})")
                    continue
                out.set(d.name, val, f"{d.where} ({label if ctx != 'main' else 'main'})")
        for d in block:
            if d.name == "events" and d.block:
                for e in d.block:
                    out.set(e.name, " ".join(e.args), f"{e.where} (events)")
    loc = chain[-1][0]
    out.notes.append(f"settings of `{loc}`" + (f" ({len(chains)} locations pass requests on)" if len(chains) > 1
                                                else ""))
    target = next((d.args[0] for d in chain[-1][1] if d.name in NGINX_PASS and d.args), None)
    if target:
        out.set("pass_to", target, next(d.where for d in chain[-1][1] if d.name in NGINX_PASS))
        name = re.sub(r"^\w+://", "", target).split("/")[0]
        ups = upstreams.get(name)
        if ups is not None:
            for d in ups:
                if d.name == "server":
                    out.set("upstream_servers", sum(1 for x in ups if x.name == "server"), f"{d.where} (upstream {name})")
                    for a in d.args[1:]:
                        k, _, v = a.partition("=")
                        if k in ("max_conns", "max_fails", "fail_timeout", "weight"):
                            out.set(f"upstream_server_{k}", v, f"{d.where} (upstream {name})")
                elif d.block is None:
                    out.set(f"upstream_{d.name}", " ".join(d.args), f"{d.where} (upstream {name})")
    return out


def _all(tree: list[Directive], name: str, depth: int = 0) -> Iterator[Directive]:
    if depth > DOC_MAX_DEPTH:
        return
    for d in tree:
        if d.name == name:
            yield d
        if d.block:
            yield from _all(d.block, name, depth + 1)


# --- HAProxy --------------------------------------------------------------------------------------------------------

HAPROXY_SECTIONS = ("global", "defaults", "frontend", "backend", "listen", "userlist", "peers", "resolvers",
                    "mailers", "program", "http-errors", "ring", "cache", "fcgi-app", "crt-store", "traces")


@_total
def parse_haproxy(text: str, source: str = "haproxy.cfg") -> Parsed:
    """HAProxy's limits on the path: global and defaults maxconn, timeouts (queue, server, client, connect), and for
    each backend its servers' maxconn and maxqueue (the smallest per-server maxconn and their sum are the facts)."""
    text = _capped(text, source)
    out = Parsed("haproxy")
    section, name = "", ""
    server_maxconn: list[int] = []
    servers = 0
    count = 0
    for no, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        count += 1
        if count > CONFIG_MAX_SETTINGS:
            raise ConfigError(f"{source}: more than {CONFIG_MAX_SETTINGS} lines")
        words = line.split()
        where = f"{source}:{no}"
        if words[0] in HAPROXY_SECTIONS:
            section, name = words[0], (words[1] if len(words) > 1 else "")
            continue
        ctx = f"{section} {name}".strip()
        if words[0] == "maxconn" and len(words) > 1:
            out.set(f"{section}_maxconn" if section in ("global", "defaults") else f"{section}_maxconn.{name}",
                    _int(words[1]), f"{where} ({ctx})")
            if section in ("frontend", "listen"):
                out.set("frontend_maxconn", _int(words[1]), f"{where} ({ctx})")
        elif words[0] == "timeout" and len(words) > 2:
            out.set(f"timeout_{words[1]}", words[2], f"{where} ({ctx})")
        elif words[0] == "server" and section in ("backend", "listen"):
            servers += 1
            opts = words[3:]
            for i, w in enumerate(opts[:-1]):
                if w in ("maxconn", "maxqueue", "minconn"):
                    v = _int(opts[i + 1])
                    if w == "maxconn" and isinstance(v, int):
                        server_maxconn.append(v)
                    out.set(f"server_{w}", v, f"{where} ({ctx}, server {words[1] if len(words) > 1 else '?'})")
        elif words[0] == "balance" and len(words) > 1:
            out.set("balance", words[1], f"{where} ({ctx})")
        elif words[0] in ("fullconn", "nbthread") and len(words) > 1:
            out.set(words[0], _int(words[1]), f"{where} ({ctx})")
        elif words[0] == "retries" and len(words) > 1:
            out.set("retries", _int(words[1]), f"{where} ({ctx})")
        elif words[0] == "option" and len(words) > 1 and words[1] in ("http-buffer-request", "redispatch",
                                                                       "http-server-close", "httpclose"):
            out.set(f"option_{words[1]}", True, f"{where} ({ctx})")
        elif words[0] == "compression" and len(words) > 2:
            out.set(f"compression_{words[1]}", " ".join(words[2:]), f"{where} ({ctx})")
    if servers:
        out.set("servers", servers, source)
    if server_maxconn:
        out.settings["server_maxconn"] = Setting(min(server_maxconn), out.settings["server_maxconn"].where
                                                 if "server_maxconn" in out.settings else source)
        if len(server_maxconn) == servers:
            out.set("backend_maxconn_total", sum(server_maxconn), source)
    return out


def _int(s: str) -> int | str:
    try:
        return int(s)
    except ValueError:
        return s


# --- YAML / JSON documents ------------------------------------------------------------------------------------------

def load_docs(text: str, source: str) -> list[Any]:
    """The documents of a YAML (`---`-separated) or JSON text, each bounded (orchestrator.safeload)."""
    from orchestrator.safeload import SafeLoadError, load_json, load_yaml

    text = _capped(text, source)
    try:
        if text.lstrip()[:1] in ("{", "["):
            return [load_json(text, source=source)]
        docs = []
        for i, part in enumerate(re.split(r"(?m)^---[ \t]*$", text)):
            if i >= 256:
                raise ConfigError(f"{source}: more than 256 documents")
            if part.strip():
                d = load_yaml(part, source=source, fast=True)
                if d is not None:
                    docs.append(d)
        return docs
    except SafeLoadError as exc:
        raise ConfigError(str(exc).splitlines()[0]) from None


def _get(d: Any, *path: str) -> Any:
    for p in path:
        if not isinstance(d, dict):
            return None
        d = d.get(p)
    return d


def _scalar(v: Any) -> Any:
    return v if isinstance(v, (str, int, float, bool)) and not (isinstance(v, str) and len(v) > 500) else None


# --- Envoy and Istio ------------------------------------------------------------------------------------------------

def _walk(d: Any, depth: int = 0) -> Iterator[Any]:
    stack = [(d, depth)]
    seen = 0
    while stack:
        x, dep = stack.pop()
        seen += 1
        if seen > 200_000 or dep > DOC_MAX_DEPTH:
            return
        yield x
        if isinstance(x, dict):
            stack.extend((v, dep + 1) for v in x.values())
        elif isinstance(x, list):
            stack.extend((v, dep + 1) for v in x)


@_total
def parse_envoy(docs: list[Any], source: str) -> Parsed:
    """Envoy's circuit breakers (per cluster, default priority: max_connections, max_pending_requests, max_requests,
    max_retries), route timeouts and retry policies, and Istio's DestinationRule connection pool and outlier
    detection and VirtualService timeouts and retries; the smallest of each across the objects is the fact."""
    out = Parsed("envoy")
    lows: dict[str, tuple[Any, str]] = {}

    def low(name: str, v: Any, where: str) -> None:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            return
        if name not in lows or v < lows[name][0]:
            lows[name] = (v, where)

    for doc in docs:
        if isinstance(doc, dict) and not doc.get("kind") and \
                any(k in doc for k in ("static_resources", "dynamic_resources", "clusters", "virtual_hosts", "admin")):
            # an Envoy configuration of its own (bootstrap, a cluster or route config dump), not only Istio's
            # resources: Envoy's documented defaults hold for what it leaves unset
            out.set("envoy_config", True, source)
        for obj in _walk(doc):
            if not isinstance(obj, dict):
                continue
            kind, meta = obj.get("kind"), obj.get("metadata") or {}
            label = f"{source} ({kind} {meta.get('name')})" if kind else source
            if kind == "DestinationRule":
                tp = _get(obj, "spec", "trafficPolicy") or {}
                pools = [tp] + [s.get("trafficPolicy") or {} for s in (_get(obj, "spec", "subsets") or [])
                                if isinstance(s, dict)]
                for pool in pools:
                    for k, v in (_get(pool, "connectionPool", "http") or {}).items():
                        low(f"istio_{k}", v, label)
                    for k, v in (_get(pool, "connectionPool", "tcp") or {}).items():
                        low(f"istio_tcp_{k}", v, label)
                    for k, v in (_get(pool, "outlierDetection") or {}).items():
                        if _scalar(v) is not None:
                            out.set(f"istio_outlier_{k}", v, label)
                out.set("istio_destination_rule", meta.get("name") or "?", label)
            elif kind == "VirtualService":
                for route in _get(obj, "spec", "http") or []:
                    if isinstance(route, dict):
                        if route.get("timeout"):
                            out.set("istio_route_timeout", route["timeout"], label)
                        for k, v in (route.get("retries") or {}).items():
                            if _scalar(v) is not None:
                                out.set(f"istio_retries_{k}", v, label)
            for t in (_get(obj, "circuit_breakers", "thresholds") or []) if "circuit_breakers" in obj else []:
                if isinstance(t, dict) and t.get("priority", "DEFAULT") in ("DEFAULT", 0):
                    for k in ("max_connections", "max_pending_requests", "max_requests", "max_retries"):
                        v = t.get(k)
                        v = v.get("value") if isinstance(v, dict) else v
                        low(k, v, f"{source} (cluster {obj.get('name')})")
            if "retry_policy" in obj and isinstance(obj["retry_policy"], dict):
                n = obj["retry_policy"].get("num_retries")
                if n is not None:
                    out.set("route_num_retries", n, source)
            if "route" in obj and isinstance(obj["route"], dict) and "timeout" in obj["route"]:
                out.set("route_timeout", obj["route"]["timeout"], source)
    for k, (v, where) in lows.items():
        out.set(k, v, where)
    return out


# --- LiteLLM --------------------------------------------------------------------------------------------------------

def _url_without_userinfo(v: Any) -> str:
    """An upstream URL as a setting: its host and path, never a user:password it may carry."""
    if not isinstance(v, str) or not v.strip():
        return ""
    if v.startswith("os.environ/"):
        return v.strip()[:300]  # the variable's name, which names the address apart from the others
    return re.sub(r"^(\w+://)[^/@\s]*@", r"\1", v.strip())[:300]


LITELLM_PARAMS = ("rpm", "tpm", "timeout", "stream_timeout", "max_parallel_requests", "max_retries")


@_total
def parse_litellm(docs: list[Any], source: str) -> Parsed:
    """LiteLLM's proxy config: per deployment its provider (the `model` prefix: `hosted_vllm/`, `openai/`,
    `triton/` ...) and limits; the router's and litellm_settings' retries, timeouts, caching; general settings'
    global limits."""
    out = Parsed("litellm")
    doc = next((d for d in docs if isinstance(d, dict)), None)
    if doc is None:
        raise ConfigError(f"{source}: not a LiteLLM config (no mapping)")
    providers = []
    bases: dict[str, list[str]] = {}
    for i, m in enumerate((doc.get("model_list") or [])[:256]):
        lp = m.get("litellm_params") if isinstance(m, dict) else None
        if not isinstance(lp, dict):
            continue
        name = str(m.get("model_name") or i)
        model = str(lp.get("model") or "")
        provider = model.split("/", 1)[0] if "/" in model else "openai"
        providers.append(provider)
        where = f"{source} (model_list {name})"
        out.set("provider", provider, where)
        out.set(f"provider.{name}", provider, where)
        base = _url_without_userinfo(lp.get("api_base"))
        if base:
            out.set("api_base", base, where)
            out.set(f"api_base.{name}", base, where)
            if base not in bases.setdefault(name, []):
                bases[name].append(base)
        for k in LITELLM_PARAMS:
            if _scalar(lp.get(k)) is not None:
                out.set(f"{k}_limit" if k in ("rpm", "tpm") else k, lp[k], where)
                out.set(f"{k}.{name}", lp[k], where)
    # the router balances per request among a model name's deployments (its api_bases); a model name with one
    # api_base sends every request to that one address, whatever stands behind it
    for name, got in bases.items():
        out.set(f"deployments.{name}", len(got), f"{source} (model_list {name}: {', '.join(got[:4])})")
    if bases:
        most = max(bases, key=lambda n: len(bases[n]))
        out.set("max_deployments", len(bases[most]), f"{source} (model_list {most})")
    if providers:
        out.set("providers", ",".join(sorted(set(providers))), f"{source} (model_list)")
    for section in ("litellm_settings", "router_settings", "general_settings"):
        sec = doc.get(section)
        if not isinstance(sec, dict):
            continue
        for k, v in list(sec.items())[:500]:
            if k == "cache" or k == "cache_params":
                out.set("cache", bool(v) if not isinstance(v, dict) else True, f"{source} ({section})")
            elif _scalar(v) is not None:
                out.set(str(k), v, f"{source} ({section})")
    return out


# --- Ray Serve ------------------------------------------------------------------------------------------------------

_DECORATOR = re.compile(r"@serve\.deployment\s*(\((?P<args>[^)]{0,4000})\))?", re.S)


@_total
def parse_ray_serve(docs: list[Any], source: str, modules: dict[str, str] | None = None) -> Parsed:
    """Ray Serve's per-replica and per-deployment limits: from the config file's deployments (which override the
    code) and else from the `@serve.deployment(...)` arguments of the module the application imports."""
    out = Parsed("ray_serve")
    for doc in docs:
        for app in (_get(doc, "applications") or [])[:64] if isinstance(doc, dict) else []:
            if not isinstance(app, dict):
                continue
            if str(app.get("import_path") or "").startswith(("ray.serve.llm", "ray.llm")):
                # ray.serve.llm builds its own deployments (LLMServer), whose max_ongoing_requests default is not
                # Serve's; an llm_config's deployment_config sets it
                where = f"{source} (application {app.get('name')}: {app.get('import_path')})"
                out.set("llm_app", str(app.get("import_path")), where)
                llm_args: dict[str, Any] = app["args"] if isinstance(app.get("args"), dict) else {}
                configs = llm_args.get("llm_configs")
                for cfg in configs[:64] if isinstance(configs, list) else []:
                    dc = cfg.get("deployment_config") if isinstance(cfg, dict) else None
                    if isinstance(dc, dict):
                        for k in ("max_ongoing_requests", "num_replicas"):
                            if _scalar(dc.get(k)) is not None:
                                out.set(k, dc[k], f"{where} llm_configs deployment_config")
            for dep in (app.get("deployments") or [])[:64]:
                if not isinstance(dep, dict):
                    continue
                where = f"{source} (deployment {dep.get('name')})"
                out.set("deployment", str(dep.get("name")), where)
                for k in ("max_ongoing_requests", "max_concurrent_queries", "num_replicas", "max_queued_requests",
                          "graceful_shutdown_timeout_s", "health_check_timeout_s", "health_check_period_s"):
                    if _scalar(dep.get(k)) is not None:
                        out.set("max_ongoing_requests" if k == "max_concurrent_queries" else k, dep[k], where)
                auto = dep.get("autoscaling_config")
                if isinstance(auto, dict):
                    for k, v in auto.items():
                        if _scalar(v) is not None:
                            out.set(f"autoscaling_{k}", v, where)
                ray_opts = dep.get("ray_actor_options") or {}
                if isinstance(ray_opts, dict):
                    for k in ("num_cpus", "num_gpus"):
                        if _scalar(ray_opts.get(k)) is not None:
                            out.set(f"replica_{k}", ray_opts[k], where)
    for path, text in (modules or {}).items():
        for m in _DECORATOR.finditer(_capped(text, path)[:PATH_CONFIG_MAX_BYTES]):
            args = m.group("args") or ""
            out.set("decorator", args.strip() or "(no arguments)", f"{path} (@serve.deployment)")
            for k in ("max_ongoing_requests", "max_concurrent_queries", "num_replicas", "max_queued_requests"):
                km = re.search(rf"\b{k}\s*=\s*(\d+)", args)
                if km:
                    out.set("max_ongoing_requests" if k == "max_concurrent_queries" else k, int(km.group(1)),
                            f"{path} (@serve.deployment)")
    return out


# --- Kubernetes, Knative, KServe -------------------------------------------------------------------------------------

_QTY = re.compile(r"^(\d+(?:\.\d+)?)(m|k|Ki|M|Mi|G|Gi|T|Ti)?$")
_QTY_MUL = {None: 1, "m": 0.001, "k": 1e3, "Ki": 1024, "M": 1e6, "Mi": 2**20, "G": 1e9, "Gi": 2**30, "T": 1e12,
            "Ti": 2**40}


def quantity(v: Any) -> float | None:
    """A Kubernetes quantity (`16`, `500m`, `200Gi`) as a number; None when it is not one."""
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v)
    m = _QTY.match(str(v).strip()) if v is not None else None
    return float(m.group(1)) * _QTY_MUL[m.group(2)] if m else None


def _pod_spec(obj: dict[str, Any]) -> dict[str, Any] | None:
    kind = obj.get("kind")
    if kind == "Pod":
        return obj.get("spec") if isinstance(obj.get("spec"), dict) else None
    tmpl = _get(obj, "spec", "template", "spec")
    return tmpl if isinstance(tmpl, dict) else None


@_total
def parse_k8s(docs: list[Any], source: str, engine_words: tuple[str, ...] = ()) -> Parsed:
    """The pod around the engine: its serving container's resource limits, probes, restarts and last termination,
    shared-memory volume, the Knative/KServe concurrency that fronts it; from a Pod, a pod list, or a workload's pod
    template (Deployment, StatefulSet, Knative Service, KServe InferenceService)."""
    out = Parsed("k8s")
    objs: list[dict[str, Any]] = []
    for doc in docs:
        if isinstance(doc, dict) and isinstance(doc.get("items"), list):
            objs += [i for i in doc["items"][:512] if isinstance(i, dict)]
        elif isinstance(doc, dict):
            objs.append(doc)
    for obj in objs:
        kind, meta = obj.get("kind") or "Pod", obj.get("metadata") or {}
        label = f"{source} ({kind} {meta.get('name')})"
        spec = _pod_spec({**obj, "kind": kind})
        if kind in ("Service", "Revision", "Configuration") and _get(obj, "spec", "template"):
            cc = _get(obj, "spec", "template", "spec", "containerConcurrency")
            if cc is not None:
                out.set("container_concurrency", cc, label)
            for k, v in (_get(obj, "spec", "template", "metadata", "annotations") or {}).items():
                if str(k).startswith("autoscaling.knative.dev/"):
                    out.set("knative_" + str(k).split("/", 1)[1].replace("-", "_"), v, label)
        if kind == "InferenceService":
            pred = _get(obj, "spec", "predictor") or {}
            for k in ("containerConcurrency", "minReplicas", "maxReplicas", "scaleTarget", "scaleMetric", "timeout"):
                if _scalar(pred.get(k)) is not None:
                    out.set({"containerConcurrency": "container_concurrency"}.get(k, "kserve_" + k), pred[k], label)
            spec = spec or pred if isinstance(pred, dict) else spec
        if spec is None:
            continue
        if spec.get("containerConcurrency") is not None:
            out.set("container_concurrency", spec["containerConcurrency"], label)
        for k, v in (meta.get("annotations") or {}).items():
            if str(k).startswith("autoscaling.knative.dev/"):
                out.set("knative_" + str(k).split("/", 1)[1].replace("-", "_"), v, label)
        out.set("pod", str(meta.get("name")), label)
        if meta.get("namespace"):
            out.set("namespace", str(meta["namespace"]), label)
        owners = meta.get("ownerReferences") or []
        if owners and isinstance(owners[0], dict):
            out.set("owner", f"{owners[0].get('kind')}/{owners[0].get('name')}", label)
        conts = [c for c in (spec.get("containers") or [])[:32] if isinstance(c, dict)]
        names = [str(c.get("name")) for c in conts]
        if "queue-proxy" in names:
            out.set("queue_proxy", True, label)
        if "istio-proxy" in names:
            out.set("istio_sidecar", True, label)
        main = _serving_container(conts, engine_words)
        if main is None:
            continue
        cname = str(main.get("name"))
        where = f"{label} container {cname}"
        out.set("container", cname, where)
        res = main.get("resources") or {}
        for part in ("limits", "requests"):
            for k, v in (res.get(part) or {}).items():
                q = quantity(v)
                if q is not None:
                    key = {"cpu": "cpu", "memory": "memory_bytes"}.get(str(k), str(k).replace("/", "_").replace(".", "_"))
                    out.set(f"{part}_{key}", q, where)
        for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
            p = main.get(probe)
            short = probe[:-5]
            if not isinstance(p, dict):
                continue
            out.set(f"{short}_probe", True, where)
            for k, name in (("timeoutSeconds", "timeout_s"), ("periodSeconds", "period_s"),
                            ("failureThreshold", "failure_threshold"), ("initialDelaySeconds", "initial_delay_s")):
                out.set(f"{short}_{name}", p.get(k) if p.get(k) is not None else _PROBE_DEFAULTS[k],
                        where if p.get(k) is not None else f"{where} (unset: the API's default)")
            http = p.get("httpGet") or {}
            if isinstance(http, dict) and http.get("path"):
                out.set(f"{short}_path", str(http["path"]), where)
        for k, v in (main.get("env") or {}).items() if isinstance(main.get("env"), dict) else \
                ((e.get("name"), e.get("value")) for e in main.get("env") or [] if isinstance(e, dict)):
            if k and _scalar(v) is not None:
                out.set(f"env.{k}", v, where)
        for s in (_get(obj, "status", "containerStatuses") or []):
            if isinstance(s, dict) and s.get("name") == cname:
                if s.get("restartCount") is not None:
                    out.set("restarts", s["restartCount"], f"{label} status")
                out.set("ready", bool(s.get("ready")), f"{label} status")
                term = _get(s, "lastState", "terminated") or {}
                if term:
                    out.set("last_exit_code", term.get("exitCode"), f"{label} status lastState")
                    out.set("last_exit_reason", term.get("reason"), f"{label} status lastState")
        for v in spec.get("volumes") or []:
            if isinstance(v, dict) and _get(v, "emptyDir", "medium") == "Memory":
                for m in main.get("volumeMounts") or []:
                    if isinstance(m, dict) and m.get("name") == v.get("name") and m.get("mountPath") == "/dev/shm":
                        lim = quantity(_get(v, "emptyDir", "sizeLimit"))
                        out.set("shm_bytes", lim if lim is not None else "memory (no size limit)", where)
        if spec.get("hostIPC"):
            out.set("host_ipc", True, label)
    return out


_PROBE_DEFAULTS = {"timeoutSeconds": 1, "periodSeconds": 10, "failureThreshold": 3, "initialDelaySeconds": 0}
"""core/v1 Probe's defaults (kubernetes.io API reference; knowledge/settings/path/k8s.json cites them)."""


def _serving_container(conts: list[dict[str, Any]], engine_words: tuple[str, ...]) -> dict[str, Any] | None:
    words = engine_words or ("vllm", "sglang", "tgi", "text-generation", "tritonserver", "trtllm", "llama", "ollama",
                             "kserve-container", "predictor", "lmdeploy")
    for c in conts:
        blob = " ".join([str(c.get("name")), str(c.get("image"))] + [str(x) for x in (c.get("command") or [])[:20]]
                        + [str(x) for x in (c.get("args") or [])[:20]]).lower()
        if any(w in blob for w in words) and c.get("name") not in ("istio-proxy", "queue-proxy"):
            return c
    rest = [c for c in conts if c.get("name") not in ("istio-proxy", "queue-proxy")]
    return rest[0] if rest else None


_EVENT_ROW = re.compile(r"^(?P<age>\S+)\s+(?P<type>Normal|Warning)\s+(?P<reason>\S+)\s+(?P<object>\S+)\s+(?P<msg>.*)$")


@_total
def parse_events(text: str, source: str) -> Parsed:
    """Events about the pod (`kubectl get events` as JSON or as its table): probe failures, kills, back-off,
    OOM kills, evictions, counted by reason (`Unhealthy` split into readiness, liveness and startup)."""
    text = _capped(text, source)
    out = Parsed("k8s")
    counts: dict[str, int] = {}
    first: dict[str, str] = {}

    def add(reason: str, msg: str, n: int = 1) -> None:
        if reason == "Unhealthy":
            m = re.match(r"(Readiness|Liveness|Startup) probe", msg)
            reason = f"{m.group(1).lower()}_probe_failed" if m else "unhealthy"
        key = re.sub(r"[^A-Za-z0-9_]", "_", reason)[:60]
        counts[key] = counts.get(key, 0) + max(1, n)
        first.setdefault(key, msg[:300])

    if text.lstrip()[:1] in ("{", "["):
        for doc in load_docs(text, source):
            items = doc.get("items") if isinstance(doc, dict) else doc
            for e in (items or [])[:5000] if isinstance(items, list) else []:
                if isinstance(e, dict):
                    n = e.get("count")
                    add(str(e.get("reason") or "?"), str(e.get("message") or ""), n if isinstance(n, int) else 1)
    else:
        for line in text.splitlines()[:20000]:
            m = _EVENT_ROW.match(line.strip())
            if m:
                add(m.group("reason"), m.group("msg"))
    for k, n in sorted(counts.items()):
        out.set(f"events.{k}", n, f"{source}: {first[k]}")
    return out


# --- HorizontalPodAutoscaler ------------------------------------------------------------------------------------------

def _metric_of(m: dict[str, Any]) -> tuple[str, str, str, float | None]:
    """(metric name, source type, target type, target value) of one autoscaling/v2 metric spec."""
    kind = str(m.get("type") or "")
    got = m.get(kind[:1].lower() + kind[1:]) if kind else None
    body: dict[str, Any] = got if isinstance(got, dict) else {}
    metric: dict[str, Any] = body["metric"] if isinstance(body.get("metric"), dict) else {}
    name = str(metric.get("name") or body.get("name") or "")
    target: dict[str, Any] = body["target"] if isinstance(body.get("target"), dict) else {}
    ttype = str(target.get("type") or "")
    value = target.get({"AverageValue": "averageValue", "Value": "value",
                        "Utilization": "averageUtilization"}.get(ttype, "")) if ttype else None
    return name, kind, ttype, quantity(value)


def _current_of(m: dict[str, Any]) -> tuple[str, float | None]:
    kind = str(m.get("type") or "")
    got = m.get(kind[:1].lower() + kind[1:]) if kind else None
    body: dict[str, Any] = got if isinstance(got, dict) else {}
    metric: dict[str, Any] = body["metric"] if isinstance(body.get("metric"), dict) else {}
    cur: dict[str, Any] = body["current"] if isinstance(body.get("current"), dict) else {}
    v = cur.get("averageValue", cur.get("value", cur.get("averageUtilization")))
    return str(metric.get("name") or body.get("name") or ""), quantity(v)


def _objects_of_kind(docs: list[Any], kind: str) -> list[dict[str, Any]]:
    """The objects of one kind among documents that are objects or lists of them (`kubectl get -o json`'s `items`)."""
    listed: list[Any] = []
    for d in docs:
        listed += d["items"] if isinstance(d, dict) and isinstance(d.get("items"), list) else [d]
    return [x for x in listed if isinstance(x, dict) and x.get("kind") == kind]


@_total
def parse_hpa(docs: list[Any], source: str) -> Parsed:
    """HorizontalPodAutoscalers (autoscaling/v2, `kubectl get hpa -o json` or a manifest): per autoscaler
    (`<name>.<setting>`) and, for the first one, unprefixed: the workload it scales (`target`), `min_replicas`,
    `max_replicas`, `current_replicas`, `desired_replicas`, and per metric i (`metric`, `metric_type`, `target_type`,
    `target_value`, `current_value` for the first; `metric.<i>.*` for each): what it scales on and where it stands;
    its conditions as `condition.<Type>` = "<status> <reason>"."""
    out = Parsed("hpa")
    items = _objects_of_kind(docs, "HorizontalPodAutoscaler")
    if not items:
        raise ConfigError(f"{source}: no HorizontalPodAutoscaler in it")
    for n, h in enumerate(items[:16]):
        meta, spec, st = (x if isinstance(x, dict) else {} for x in (h.get("metadata"), h.get("spec"), h.get("status")))
        name = str(meta.get("name") or n)
        ns = f"{meta['namespace']}/" if meta.get("namespace") else ""
        where = f"{source} (HorizontalPodAutoscaler {ns}{name})"
        vals: dict[str, Any] = {"name": name}
        ref = spec.get("scaleTargetRef") if isinstance(spec.get("scaleTargetRef"), dict) else {}
        if ref:
            vals["target"] = f"{ref.get('kind')}/{ref.get('name')}"
        for k, key in (("minReplicas", "min_replicas"), ("maxReplicas", "max_replicas"),
                       ("currentReplicas", "current_replicas"), ("desiredReplicas", "desired_replicas")):
            for doc in (spec, st):
                if isinstance(doc.get(k), int):
                    vals[key] = doc[k]
        cms, specs = st.get("currentMetrics"), spec.get("metrics")
        current = dict(_current_of(c) for c in (cms if isinstance(cms, list) else []) if isinstance(c, dict))
        for i, m in enumerate([m for m in (specs if isinstance(specs, list) else []) if isinstance(m, dict)][:8]):
            mname, kind, ttype, value = _metric_of(m)
            got = {"metric": mname, "metric_type": kind, "target_type": ttype, "target_value": value,
                   "current_value": current.get(mname)}
            for k, v in got.items():
                if v not in (None, ""):
                    vals[f"metric.{i}.{k}"] = v
                    if i == 0:
                        vals[k] = v
        conds = st.get("conditions")
        for c in conds if isinstance(conds, list) else []:
            if isinstance(c, dict) and c.get("type"):
                vals[f"condition.{c['type']}"] = f"{c.get('status')} {c.get('reason') or ''}".strip()
        for k, v in vals.items():
            out.set(f"{name}.{k}", v, where)
            if n == 0:
                out.set(k, v, where)
    if len(items) > 1:
        out.set("autoscalers", len(items), source)
    return out


@_total
def parse_scaledobjects(docs: list[Any], source: str) -> Parsed:
    """KEDA ScaledObjects (keda.sh/v1alpha1): the first one's `target`, `min_replicas`, `max_replicas` and its first
    trigger's `trigger_type`, `metric_type` (AverageValue unless set: KEDA's default for most scalers), `query` (a
    Prometheus trigger's PromQL), `threshold`; each one also as `<name>.*`."""
    out = Parsed("keda")
    items = _objects_of_kind(docs, "ScaledObject")
    if not items:
        raise ConfigError(f"{source}: no ScaledObject in it")
    for n, so in enumerate(items[:16]):
        meta, spec = (x if isinstance(x, dict) else {} for x in (so.get("metadata"), so.get("spec")))
        name = str(meta.get("name") or n)
        where = f"{source} (ScaledObject {name})"
        vals: dict[str, Any] = {"name": name}
        ref = spec.get("scaleTargetRef")
        if isinstance(ref, dict):
            vals["target"] = f"{ref.get('kind') or 'Deployment'}/{ref.get('name')}"
        for k, key in (("minReplicaCount", "min_replicas"), ("maxReplicaCount", "max_replicas")):
            if isinstance(spec.get(k), int):
                vals[key] = spec[k]
        trig = spec.get("triggers")
        for t in (trig if isinstance(trig, list) else [])[:1]:
            if not isinstance(t, dict):
                continue
            md: dict[str, Any] = t["metadata"] if isinstance(t.get("metadata"), dict) else {}
            vals["trigger_type"] = str(t.get("type") or "")
            vals["metric_type"] = str(t.get("metricType") or "AverageValue")
            for k in ("query", "metricName"):
                if md.get(k):
                    vals["query" if k == "query" else "metric"] = str(md[k])
            if quantity(md.get("threshold")) is not None:
                vals["threshold"] = quantity(md.get("threshold"))
        for k, v in vals.items():
            out.set(f"{name}.{k}", v, where)
            if n == 0:
                out.set(k, v, where)
    return out


# --- docker ---------------------------------------------------------------------------------------------------------

@_total
def parse_docker(docs: list[Any], source: str) -> Parsed:
    """`docker inspect`: the container's CPU limit (NanoCpus, or CpuQuota/CpuPeriod), cpuset, /dev/shm size, IPC
    mode, locked-memory ulimit, memory limit, restarts."""
    out = Parsed("docker")
    items = [x for d in docs for x in (d if isinstance(d, list) else [d]) if isinstance(x, dict)][:8]
    for c in items:
        hc = c.get("HostConfig") or {}
        label = f"{source} ({str(c.get('Name') or c.get('Id') or '?').lstrip('/')})"
        if not isinstance(hc, dict):
            continue
        nano, quota, period = hc.get("NanoCpus"), hc.get("CpuQuota"), hc.get("CpuPeriod")
        if isinstance(nano, (int, float)) and nano > 0:
            out.set("cpus", nano / 1e9, label)
        elif isinstance(quota, (int, float)) and quota > 0:
            out.set("cpus", quota / (period if isinstance(period, (int, float)) and period > 0 else 100000), label)
        for k, name in (("CpusetCpus", "cpuset_cpus"), ("ShmSize", "shm_size"), ("IpcMode", "ipc_mode"),
                        ("Memory", "memory_bytes"), ("PidsLimit", "pids_limit"), ("NetworkMode", "network_mode"),
                        ("Runtime", "runtime")):
            v = hc.get(k)
            if _scalar(v) not in (None, "", 0):
                out.set(name, v, label)
        for u in hc.get("Ulimits") or []:
            if isinstance(u, dict) and u.get("Name"):
                out.set(f"ulimit_{u['Name']}", u.get("Soft"), label)
        if isinstance(c.get("RestartCount"), int):
            out.set("restarts", c["RestartCount"], label)
        for req in hc.get("DeviceRequests") or []:
            # `--gpus N` / `--gpus device=0,1`: Count N or DeviceIDs; Count -1 (`--gpus all`) names no number
            caps = [str(x) for cs in (req.get("Capabilities") or []) if isinstance(cs, list) for x in cs] \
                if isinstance(req, dict) else []
            if "gpu" not in caps:
                continue
            ids, count = req.get("DeviceIDs"), req.get("Count")
            if isinstance(ids, list) and ids:
                out.set("gpus", len(ids), f"{label} DeviceRequests DeviceIDs {','.join(str(i) for i in ids[:16])}")
            elif isinstance(count, int) and count > 0:
                out.set("gpus", count, f"{label} DeviceRequests Count {count}")
        if _get(c, "State", "OOMKilled"):
            out.set("oom_killed", True, label)
        for e in _get(c, "Config", "Env") or []:
            k, _, v = str(e).partition("=")
            if k:
                out.set(f"env.{k}", v, label)
    return out


# --- systemd --------------------------------------------------------------------------------------------------------

def _env_words(value: str) -> Iterator[tuple[str, str]]:
    """`Environment=` assignments (systemd.exec(5): space-separated, each optionally quoted)."""
    for m in re.finditer(r'"([^"]*)"|\'([^\']*)\'|(\S+)', value):
        word = next(g for g in m.groups() if g is not None)
        k, eq, v = word.partition("=")
        if eq and re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", k):
            yield k, v


@_total
def parse_systemd(files: dict[str, str], show: str | None = None) -> Parsed:
    """A service's unit and its drop-ins, in the order systemd reads them (the unit, then drop-ins by name): its
    [Service] settings, the environment it gives the process (Environment=; an empty assignment resets), and what
    `systemctl show` says it runs with (the effective values, restarts)."""
    out = Parsed("systemd")
    env: dict[str, tuple[str, str]] = {}
    settings: dict[str, tuple[str, str]] = {}
    count = 0
    for path in sorted(files, key=lambda p: (p.endswith(".conf"), p)):
        text = _capped(files[path], path)
        section = ""
        for no, raw in enumerate(text.splitlines(), 1):
            line = raw.strip()
            count += 1
            if count > CONFIG_MAX_SETTINGS:
                raise ConfigError(f"{path}: more than {CONFIG_MAX_SETTINGS} lines")
            if not line or line[0] in "#;":
                continue
            if line.startswith("[") and line.endswith("]"):
                section = line[1:-1]
                continue
            if section != "Service" or "=" not in line:
                continue
            k, _, v = line.partition("=")
            k, v = k.strip(), v.strip()
            where = f"{path}:{no}"
            if k == "Environment":
                if not v:
                    env.clear()
                for name, val in _env_words(v):
                    env[name] = (val, where)
            elif k in ("EnvironmentFile",):
                out.notes.append(f"{where}: EnvironmentFile={v} (not read)")
            else:
                settings[k] = (v, where)
    if show:
        for raw in _capped(show, "systemctl show").splitlines()[:2000]:
            k, eq, v = raw.partition("=")
            if not eq:
                continue
            if k == "Environment":
                for name, val in _env_words(v):
                    env.setdefault(name, (val, "systemctl show"))
            elif v and v not in ("[not set]",):
                settings.setdefault(k, (v, "systemctl show"))
    for k, (v, where) in settings.items():
        out.set(k, v, where)
    for k, (v, where) in env.items():
        out.set(f"env.{k}", v, where)
    return out


# --- Triton ---------------------------------------------------------------------------------------------------------

# a field at the start of a line: `^[ \t]*`, not `^\s*` (which runs on over the blank lines below each line start:
# quadratic in a file of newlines)
_PBTXT_NAME = re.compile(r'(?m)^[ \t]*name\s*:\s*"([^"]{1,200})"')
_PBTXT_FIELD = {key: re.compile(rf'(?m)^[ \t]*{key}\s*:\s*"?([^"\n]{{1,200}})"?')
                for key in ("backend", "platform", "max_batch_size")}
_SNIFF_NGINX = re.compile(r"(?m)^[ \t]*(http|server|location|upstream)\b[^\n]*\{")


@_total
def parse_pbtxt(text: str, source: str) -> Parsed:
    """A Triton model's config.pbtxt (protobuf text format): its name, backend, max_batch_size, instance_group
    count and kind, dynamic batching and its queue delay, decoupled mode, and `parameters` string values."""
    text = _capped(text, source)
    out = Parsed("triton")
    name = _PBTXT_NAME.search(text)
    model = name.group(1) if name else source.rsplit("/", 2)[-2] if source.count("/") >= 2 else source
    where = f"{source} (model {model})"
    out.set("model", model, where)
    for key in ("backend", "platform", "max_batch_size"):
        m = _PBTXT_FIELD[key].search(text)
        if m:
            out.set(key, _int(m.group(1).strip()), where)
    ig = re.search(r"instance_group\s*\[\s*\{(?P<body>[^}]{0,2000})\}", text)
    if ig:
        c = re.search(r"count\s*:\s*(\d+)", ig.group("body"))
        k = re.search(r"kind\s*:\s*(\w+)", ig.group("body"))
        out.set("instance_count", int(c.group(1)) if c else 1, where)
        if k:
            out.set("instance_kind", k.group(1), where)
    else:
        out.set("instance_count", 1, f"{where} (no instance_group: one instance)")
    if re.search(r"\bdynamic_batching\s*\{", text):
        out.set("dynamic_batching", True, where)
        q = re.search(r"max_queue_delay_microseconds\s*:\s*(\d+)", text)
        if q:
            out.set("max_queue_delay_us", int(q.group(1)), where)
    if re.search(r"decoupled\s*:\s*true", text):
        out.set("decoupled", True, where)
    for m in re.finditer(r'key\s*:\s*"([^"]{1,100})"\s*value\s*:\s*\{\s*string_value\s*:\s*"([^"]{0,500})"', text):
        out.set(f"param.{m.group(1)}", m.group(2), where)
    return out


# --- dispatch -------------------------------------------------------------------------------------------------------

def sniff(text: str, path: str) -> str | None:
    """Which layer a configuration file is, from its name and its text (for files a user gives)."""
    name = path.rsplit("/", 1)[-1].lower()
    head = text[:200_000]
    if name.endswith(".pbtxt"):
        return "triton"
    if name.endswith((".service", ".conf")) and re.search(r"(?m)^\[Service\]", head):
        return "systemd"
    if "nginx" in name or _SNIFF_NGINX.search(head):
        return "nginx"
    if "haproxy" in name or re.search(r"(?m)^(frontend|backend|listen|defaults|global)\b", head):
        return "haproxy"
    if re.search(r"\bmodel_list\s*:", head) or '"model_list"' in head:
        return "litellm"
    if re.search(r"\bapplications\s*:", head) and "deployments" in head:
        return "ray_serve"
    if re.search(r"kind\"?\s*:\s*\"?(DestinationRule|VirtualService)", head) or "circuit_breakers" in head \
            or "static_resources" in head:
        return "envoy"
    if re.search(r"kind\"?\s*:\s*\"?HorizontalPodAutoscaler\b", head):
        return "hpa"
    if re.search(r"kind\"?\s*:\s*\"?ScaledObject\b", head):
        return "keda"
    if re.search(r"kind\"?\s*:\s*\"?(Pod|Deployment|StatefulSet|Service|InferenceService|List)\b", head) \
            or '"containerStatuses"' in head:
        return "k8s"
    if '"HostConfig"' in head:
        return "docker"
    if re.search(r"(?m)^(LAST SEEN|\S+\s+(Normal|Warning)\s)", head):
        return "k8s_events"
    return None


@_total
def parse_one(layer: str, files: dict[str, str], extra: dict[str, str] | None = None) -> Parsed:
    """One layer's settings from its files (path -> text): the dispatch the probe and `--path-config` share."""
    first = next(iter(files))
    if layer == "nginx":
        return parse_nginx(files, first)
    if layer == "systemd":
        return parse_systemd(files, (extra or {}).get("show"))
    parsers: dict[str, Callable[[str, str], Parsed]] = {
        "haproxy": parse_haproxy, "triton": parse_pbtxt, "k8s_events": parse_events,
        "envoy": lambda t, s: parse_envoy(load_docs(t, s), s), "istio": lambda t, s: parse_envoy(load_docs(t, s), s),
        "litellm": lambda t, s: parse_litellm(load_docs(t, s), s),
        "ray_serve": lambda t, s: parse_ray_serve(load_docs(t, s), s, extra),
        "k8s": lambda t, s: parse_k8s(load_docs(t, s), s), "docker": lambda t, s: parse_docker(load_docs(t, s), s),
        "hpa": lambda t, s: parse_hpa(load_docs(t, s), s),
        "keda": lambda t, s: parse_scaledobjects(load_docs(t, s), s),
    }
    fn = parsers.get(layer)
    if fn is None:
        raise ConfigError(f"{first}: no reader for layer {layer!r}")
    merged = Parsed("envoy" if layer == "istio" else "k8s" if layer == "k8s_events" else layer)
    for path, text in files.items():
        got = fn(text, path)
        for k, s in got.settings.items():
            merged.set(k, s.value, s.where)
        merged.notes += got.notes
    return merged


def as_json(text: str, source: str) -> Any:
    """A command's JSON output (bounded): ConfigError when it is not JSON."""
    try:
        return load_docs(text, source)[0] if text.strip() else None
    except (ConfigError, IndexError):
        try:
            return json.loads(text) if len(text) < PATH_CONFIG_MAX_BYTES else None
        except (ValueError, RecursionError):
            raise ConfigError(f"{source}: not JSON") from None
