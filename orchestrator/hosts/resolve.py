"""Resolve paths on the host (symlinks followed) before anything opens them: `logs/x.log -> ~/.netrc` or
`-> /dev/zero` is judged by what it points at, not by its name. One round trip for all the paths of a command."""

from __future__ import annotations

from orchestrator.hosts.base import Host
from orchestrator.hosts.policy import resolved_refusal

# Fixed shell code; the paths are positional arguments. Prints "KIND REALPATH" per path (KIND: f file, d directory,
# o other existing thing such as a device, n missing or unresolvable).
_RESOLVE = (
    'for p; do r=$(readlink -f -- "$p" 2>/dev/null) || r=; '
    'if [ -z "$r" ]; then t=n; elif [ -f "$r" ]; then t=f; elif [ -d "$r" ]; then t=d; '
    'elif [ -e "$r" ]; then t=o; else t=n; fi; printf "%s %s\\n" "$t" "$r"; done'
)
MAX_PATHS = 64


class ResolveFailed(Exception):
    """The host could not resolve the paths (no readlink?): nothing is opened."""


async def resolve_paths(host: Host, paths: list[str], *, timeout_s: float = 30.0) -> list[tuple[str, str]]:
    """(kind, real path) per path, resolved on the host."""
    if not paths:
        return []
    res = await host.run(["/bin/sh", "-c", _RESOLVE, "sh", *paths], timeout_s=timeout_s, max_output=1_000_000)
    lines = res.stdout.split("\n")[: len(paths)]
    if res.exit_code != 0 or len(lines) != len(paths):
        raise ResolveFailed(f"could not resolve {len(paths)} path(s) on {host.name} (exit {res.exit_code})")
    out = []
    for line in lines:
        kind, _, real = line.partition(" ")
        out.append((kind, real))
    return out


async def check_on_host(host: Host, argv: list[str], paths: list[str]) -> tuple[str | None, list[tuple[str, str]]]:
    """Why argv's program must not open one of paths once resolved on the host (or None), and the resolutions."""
    program = argv[0]
    if len(paths) > MAX_PATHS:
        return f"{program}: more than {MAX_PATHS} files in one command; name fewer", []
    try:
        resolved = await resolve_paths(host, paths)
    except ResolveFailed as exc:
        return f"{program}: {exc}: refused rather than read unresolved", []
    for given, (kind, real) in zip(paths, resolved):
        why = resolved_refusal(argv, given, kind, real)
        if why is not None:
            return why, resolved
    return None, resolved
