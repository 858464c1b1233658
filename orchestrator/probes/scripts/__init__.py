"""Fixed probe scripts sent to `python3 -` on the investigated host (stdlib only, Python >= 3.8).

Each script reads its parameters as JSON from argv[1] and prints one JSON document on stdout. The text of a script
is never assembled from parameters: `load(name)` returns the shared prelude (`_prelude.py`: helpers every script
uses, reviewed once) followed by the file as shipped.
"""

from __future__ import annotations

import functools
from importlib import resources

from orchestrator.hosts.policy import credential_rules


ENVIRON_READERS = frozenset({"node", "engine", "settings"})
"""Scripts that read other processes' environments: sent with `_environ.py`, the one allowlist of what may leave."""
SMI_READERS = frozenset({"node"})
"""Scripts that read `nvidia-smi -q -x` on the host: sent with `_smi.py`, the one reading of its health fields."""
INTERP_CHECKERS = frozenset({"pyenv_chain"})
"""Scripts that check an interpreter on the host: sent with `_interp.py`, the one check (probes/interpreter.py)."""
SITE_READERS = frozenset({"pyenv", "kernels", "caches"})
"""Scripts that read an environment's packages, run isolated (`-I -S`): sent with `_sitepath.py`, which finds the
package directories as files (pyvenv.cfg, .pth path lines) instead of letting `site` execute them."""
QUIET_READERS = frozenset({"gemm_bench", "comm_bench"})
"""Scripts that load a GPU: sent with `_quiet.py`, which reads what else runs on it first."""
SENT_ALONG = {"pyenv_chain": ("pyenv",)}
"""Scripts a bundle part runs itself: their sources travel in the bundle with it."""


def load(name: str) -> str:
    """The source sent for the fixed script `name` (e.g. "pyenv"): the prelude, the environment allowlist for the
    scripts that read process environments, the nvidia-smi reader for those that read its XML, then the script."""
    shared = [prelude()] + ([environ()] if name in ENVIRON_READERS else []) + ([smi()] if name in SMI_READERS else []) \
        + ([interp()] if name in INTERP_CHECKERS else []) + ([_read("_sitepath")] if name in SITE_READERS else []) \
        + ([_read("_quiet")] if name in QUIET_READERS else [])
    return "\n\n".join(shared + [_read(name)])


@functools.lru_cache(maxsize=32)
def bundle(names: tuple[str, ...]) -> str:
    """The source sent for several fixed scripts run in one interpreter start (`_bundle.py` runs each as `load`
    would send it alone, in a namespace of its own): the driver, the scripts' sources as string literals, and the
    call. Names are fixed by the caller's code; each must be a shipped script."""
    sources = {name: load(name) for name in names}
    sources.update({extra: load(extra) for name in names for extra in SENT_ALONG.get(name, ())})
    return _read("_bundle") + "\n\nSOURCES = " + repr(sources) + "\nrun_parts(json.loads(sys.argv[1])['parts'], " \
        "SOURCES)\n"


@functools.lru_cache(maxsize=64)
def forks(names: tuple[str, ...]) -> str:
    """The source sent for fixed scripts started together (`_forks.py`): the driver, the prelude once, and what
    `load` sends after the prelude for each script (run in a child of the driver, in the prelude's namespace as
    `load`'s one text runs in one); the caller's argv[1] gives each part's parameters, time limit and output cap."""
    head = prelude() + "\n\n"
    rests = []
    for name in names:
        text = load(name)
        assert text.startswith(head), name
        rests.append(text[len(head):])
    return forks_source(prelude(), rests)


def forks_source(shared: str, rests: list[str]) -> str:
    """The forks driver with `shared` run once and each of `rests` in a child (`forks`; tests give their own)."""
    return _read("_forks") + "\n\nPRELUDE = %r\nSOURCES = %r\n" % (shared, rests) + \
        "run_forked(PRELUDE, [[SOURCES[i]] + p for i, p in enumerate(json.loads(sys.argv[1])['parts'])])\n"


@functools.lru_cache(maxsize=1)
def prelude() -> str:
    """The helpers every probe script shares (`_prelude.py`), with the host policy's credential locations
    (hosts/credentials.yaml) as the literal its file reader refuses."""
    rules = tuple((r.kind, r.match, r.what) for r in credential_rules())
    return _read("_prelude") + "\n\nCREDENTIAL_LOCATIONS = %r\n" % (rules,)


def environ() -> str:
    """What of a process's environment may leave the host (`_environ.py`: `keep_env` and its lists)."""
    return _read("_environ")


def smi() -> str:
    """The reading of `nvidia-smi -q -x`'s health fields (`_smi.py`), also imported here by prongs/node_health/smi.py."""
    return _read("_smi")


def interp() -> str:
    """The interpreter check (`_interp.py`), also imported here by probes/interpreter.py."""
    return _read("_interp")


@functools.lru_cache(maxsize=None)
def _read(name: str) -> str:
    """A shipped script's text (read once per process: a 64-host run sends them hundreds of times)."""
    return resources.files(__package__).joinpath(f"{name}.py").read_text()
