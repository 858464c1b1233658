"""Kubernetes behind the same `Host` seam: the serving pods of a label selector, each a host whose commands run
through `kubectl exec` (on paper: no cluster on the test machines; see docs/hosts.md, Kubernetes).

`--k8s SELECTOR [--namespace NS] [--container C]` lists the pods with

    kubectl get pods [--context X] -n NS -l SELECTOR -o json

and makes one host per pod (its name; role from the pod's `role` or `app.kubernetes.io/component` label when that is
a short word such as prefill/decode/router). A pod that is not Running, or whose container is not ready, is a gap.
Each command becomes

    kubectl exec [--context X] -n NS POD [-c CONTAINER] [-i] -- timeout -k 2 T argv...

(argv after `--` as a list: nothing in it is read as a kubectl option; `-i` only when the command has stdin).
`kubectl` uses the user's kubeconfig and RBAC: `pods/exec` in the namespace is what the investigation needs, and
the read-only command policy applies inside the pod as on any host.
"""

from __future__ import annotations

import json
import re
import shutil
from typing import Any

from orchestrator.errors import InputError
from orchestrator.hosts.base import CommandResult
from orchestrator.hosts.errors import HostConfigError, HostUnreachable
from orchestrator.hosts.local import LocalHost
from orchestrator.hosts.entry import ROLE, HostEntry
from orchestrator.hosts.remote_io import FilesOverRun
from orchestrator.settings import Settings

_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")
"""DNS-1123 names: pods, namespaces, containers."""
_SELECTOR = re.compile(r"^[A-Za-z0-9_./=!,() -]+$")
"""Label selector syntax: key=value, key!=value, key in (a,b), !key, joined by commas."""
_GRACE_S = 15.0


def kubectl_prefix(context: str | None = None) -> list[str]:
    return ["kubectl"] + (["--context", context] if context else [])


def get_pods_argv(selector: str, namespace: str | None = None, context: str | None = None) -> list[str]:
    """The `kubectl get pods` command line that lists the selected pods as JSON."""
    if not _SELECTOR.match(selector) or selector.startswith("-"):
        raise HostConfigError(f"--k8s {selector!r} is not a label selector; pass e.g. app=vllm,tier=decode")
    if namespace is not None and not _NAME.match(namespace):
        raise HostConfigError(f"--namespace {namespace!r} is not a Kubernetes namespace name")
    return kubectl_prefix(context) + ["get", "pods"] + (["-n", namespace] if namespace else []) + \
        ["-l", selector, "-o", "json"]


def parse_pods(text: str, container: str | None = None) -> list[dict[str, Any]]:
    """Pods of `kubectl get pods -o json` (a `List`, or the API's `PodList`, or one `Pod`): name, namespace, node,
    phase, the container to exec into and whether it is ready, labels, and the GPUs it requests."""
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise HostConfigError(f"kubectl get pods did not print JSON ({exc})") from None
    items = doc.get("items") if isinstance(doc, dict) and "items" in doc else [doc]
    out = []
    for pod in items or []:
        if not isinstance(pod, dict) or pod.get("kind", "Pod") != "Pod":
            continue
        meta, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
        containers = [c.get("name") for c in spec.get("containers") or [] if c.get("name")]
        chosen = container or (containers[0] if containers else None)
        cstat: dict[str, Any] = next((c for c in status.get("containerStatuses") or [] if c.get("name") == chosen), {})
        gpus = 0
        for c in spec.get("containers") or []:
            if c.get("name") == chosen:
                limits = (c.get("resources") or {}).get("limits") or {}
                gpus = int(str(limits.get("nvidia.com/gpu", 0)) or 0) if str(limits.get("nvidia.com/gpu", "0")).isdigit() else 0
        labels = meta.get("labels") or {}
        role = next((labels[k] for k in ("role", "app.kubernetes.io/component", "component")
                     if isinstance(labels.get(k), str) and ROLE.match(labels[k])), None)
        state = next(iter((cstat.get("state") or {}).keys()), None)
        waiting = ((cstat.get("state") or {}).get("waiting") or {}).get("reason")
        out.append({
            "name": meta.get("name"), "namespace": meta.get("namespace"), "node": spec.get("nodeName"),
            "phase": status.get("phase"), "container": chosen, "containers": containers,
            "ready": bool(cstat.get("ready")), "state": state, "waiting_reason": waiting,
            "restarts": cstat.get("restartCount"), "image": cstat.get("image"), "role": role, "gpus": gpus,
        })
    return [p for p in out if p["name"]]


def pod_problem(p: dict[str, Any]) -> str | None:
    """Why a pod cannot be probed (not running, container missing or not ready), or None."""
    if p["phase"] != "Running":
        return f"pod {p['name']} is {p['phase'] or 'in an unknown phase'}"
    if p["container"] not in p["containers"]:
        return f"pod {p['name']} has no container {p['container']!r} (it has {', '.join(p['containers'])})"
    if not p["ready"]:
        why = f" ({p['waiting_reason']})" if p.get("waiting_reason") else ""
        return f"container {p['container']} of pod {p['name']} is not ready{why}"
    return None


async def k8s_entries(selector: str, settings: Settings | None = None, *, namespace: str | None = None,
                      container: str | None = None, context: str | None = None) -> list[HostEntry]:
    """One host entry per selected pod; a pod that cannot be probed is an entry with its error (a gap)."""
    if shutil.which("kubectl") is None:
        raise InputError("--k8s needs kubectl on PATH (configured for the cluster: kubeconfig, context)")
    if container is not None and not _NAME.match(container):
        raise InputError(f"--container {container!r} is not a container name")
    try:
        argv = get_pods_argv(selector, namespace, context)
    except HostConfigError as exc:
        raise InputError(str(exc)) from None
    res = await LocalHost("kubectl").run(argv, timeout_s=60, max_output=20_000_000)
    if not res.ok:
        err = " ".join(res.stderr.split())[:300] or f"exit {res.exit_code}"
        raise InputError(f"kubectl get pods -l {selector} failed ({err}); check the context, namespace and RBAC")
    try:
        pods = parse_pods(res.stdout, container)
    except HostConfigError as exc:
        raise InputError(str(exc)) from None
    if not pods:
        where = f" in namespace {namespace}" if namespace else ""
        raise InputError(f"no pod matches --k8s {selector}{where}; check the label selector and --namespace")
    detail = {k: v for k, v in (("context", context),) if v}
    return [HostEntry(name=p["name"], dest=p["name"], via="k8s", role=p["role"], error=pod_problem(p),
                      detail={**detail, "namespace": p["namespace"] or namespace or "",
                              "container": p["container"] or "", "node": p["node"] or ""})
            for p in pods]


class K8sHost(FilesOverRun):
    """One pod (one container of it), reached through `kubectl exec`."""

    def __init__(self, pod: str, settings: Settings | None = None, *, namespace: str | None = None,
                 container: str | None = None, context: str | None = None):
        for what, v in (("pod", pod), ("namespace", namespace), ("container", container)):
            if v and not _NAME.match(v):
                raise HostConfigError(f"{what} {v!r} is not a Kubernetes name")
        self.pod, self.namespace, self.container, self.context = pod, namespace or None, container or None, context
        self.name = pod
        self.settings = settings or Settings()
        self._local = LocalHost(pod)

    def exec_argv(self, argv: list[str], timeout_s: float, stdin: bool = False) -> list[str]:
        out = kubectl_prefix(self.context) + ["exec"]
        if self.namespace:
            out += ["-n", self.namespace]
        out.append(self.pod)
        if self.container:
            out += ["-c", self.container]
        if stdin:
            out.append("-i")
        return out + ["--", "timeout", "-k", "2", f"{max(timeout_s, 1):g}", *argv]

    async def run(self, argv: list[str], *, stdin: str | None = None, timeout_s: float = 60.0,
                  max_output: int = 1_000_000) -> CommandResult:
        res = await self._local.run(self.exec_argv(list(argv), timeout_s, stdin is not None), stdin=stdin,
                                    timeout_s=timeout_s + _GRACE_S, max_output=max_output)
        res.argv = list(argv)
        if res.exit_code == 124:
            res.timed_out, res.exit_code = True, None
        return res

    async def connect(self) -> K8sHost:
        res = await self.run(["true"], timeout_s=self.settings.ssh_connect_timeout_s)
        if not res.ok:
            err = " ".join(res.stderr.split())[:300] or f"kubectl exited {res.exit_code}"
            raise HostUnreachable(f"kubectl exec into pod {self.pod} failed ({err}): check RBAC (pods/exec), the "
                                  "namespace and the container")
        return self

    async def aclose(self) -> None:
        """Nothing to release: every command was its own exec."""


async def open_entry(entry: HostEntry, ssh_config: str | None, settings: Settings) -> K8sHost:
    """The `k8s` opener of the registry (orchestrator/hosts/entry.py): `kubectl exec` into the entry's pod."""
    return await K8sHost(entry.dest, settings, namespace=entry.detail.get("namespace"),
                         container=entry.detail.get("container"), context=entry.detail.get("context")).connect()
