"""One host of a run as its inputs record it (`HostEntry`), and the registry of openers that reach a host by its `via`.

A leaf: it imports nothing of ours but the Host protocol's errors and the settings, so the run's context, the Slurm
and Kubernetes transports and the multi-host opener all share it without importing each other.

Openers are looked up by `via` in one registry, the way httpx mounts transports by URL pattern and inspect_ai
registers sandbox environments with `@sandboxenv`: `ssh`, `local`, `slurm` and `k8s` are registered by name and
imported on first use (a local run never imports paramiko); `register_opener` adds another transport without
touching this module.
"""

from __future__ import annotations

import importlib
import re
from typing import Annotated, Awaitable, Callable, Union

from pydantic import AfterValidator, BaseModel, Field

from orchestrator.hosts.base import Host, HostError
from orchestrator.settings import Settings



def known_via(via: str) -> str:
    """`via` names a registered opener (`register_opener` adds one): refused when an entry is read otherwise."""
    if via not in _OPENERS:
        raise ValueError(f"no way to reach a host via {via!r}; known: {', '.join(sorted(_OPENERS))}")
    return via


Via = Annotated[str, AfterValidator(known_via)]
"""How a host is reached: the name of an opener in the registry below (`ssh`, `local`, `slurm`, `k8s`, or one a
`register_opener` call added)."""
ROLE = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")
"""Roles are short lower-case words: prefill, decode, router, replica, ..."""


class HostEntry(BaseModel):
    """One host of a run, as recorded in its inputs."""

    name: str
    """The label of the host in evidence, in the diagnosis, and as the `host` argument of a tool call."""
    dest: str
    """How to reach it: an ssh destination, a Slurm node name, a Kubernetes pod."""
    via: Via = "ssh"
    role: str | None = None
    """prefill, decode, router, ...: hosts are compared with others of the same role."""
    error: str | None = None
    """Why the host could not be used (unreachable, unknown key, drained...): a gap, not a failure."""
    detail: dict[str, str] = Field(default_factory=dict)
    """Transport details: the Slurm job id, the pod's namespace and container."""


Opener = Callable[[HostEntry, Union[str, None], Settings], Awaitable[Host]]
"""(entry, ssh_config, settings) -> a connected Host; raises HostError when the host cannot be used."""

_OPENERS: dict[str, Union[Opener, str]] = {
    "local": "orchestrator.hosts.local:open_entry",
    "ssh": "orchestrator.hosts:open_entry",
    "slurm": "orchestrator.hosts.slurm:open_entry",
    "k8s": "orchestrator.hosts.k8s:open_entry",
}
"""via -> the opener, or "module:function" imported on first use."""


def register_opener(via: str, opener: Union[Opener, str]) -> None:
    """Reach hosts whose entry says `via` with `opener` (a callable, or "module:function" to import lazily)."""
    _OPENERS[via] = opener


def opener_for(via: str) -> Opener:
    """The opener registered for `via`; HostError naming the known ones when there is none."""
    got = _OPENERS.get(via)
    if got is None:
        raise HostError(f"no way to reach a host via {via!r}; known: {', '.join(sorted(_OPENERS))}")
    if isinstance(got, str):
        module, _, name = got.partition(":")
        got = getattr(importlib.import_module(module), name)
        _OPENERS[via] = got
    return got
