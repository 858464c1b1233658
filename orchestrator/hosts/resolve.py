"""Resolve paths on the host (symlinks followed) before anything opens them: `logs/x.log -> ~/.netrc` or
`-> /dev/zero` is judged by what it points at, not by its name. One round trip for all the paths of a command."""

from __future__ import annotations

from orchestrator.hosts.base import Host
from orchestrator.hosts.policy import resolved_refusal

# Fixed shell code; the paths are positional arguments. Prints "KIND REALPATH" and a NUL per path (KIND: f file, d
# directory, o other existing thing such as a device, n missing or unresolvable). NUL is the one byte a path cannot
# hold: a symlink whose target holds a newline cannot frame a second record, and the `.` keeps command
# substitution from eating newlines at the end of the real path.
_RESOLVE = (
    'for p; do r=$(readlink -f -- "$p" 2>/dev/null && echo .) || r=; r=${r%.}; r=${r%?}; '
    'if [ -z "$r" ]; then t=n; elif [ -f "$r" ]; then t=f; elif [ -d "$r" ]; then t=d; '
    'elif [ -e "$r" ]; then t=o; else t=n; fi; printf "%s %s\\000" "$t" "$r"; done'
)
MAX_PATHS = 64


class ResolveFailed(Exception):
    """The host could not resolve the paths (no readlink?): nothing is opened."""


async def resolve_paths(host: Host, paths: list[str], *, timeout_s: float = 30.0) -> list[tuple[str, str]]:
    """(kind, real path) per path, resolved on the host."""
    if not paths:
        return []
    res = await host.run(["/bin/sh", "-c", _RESOLVE, "sh", *paths], timeout_s=timeout_s, max_output=1_000_000)
    records = res.stdout.split("\0")
    if res.exit_code != 0 or len(records) != len(paths) + 1 or records[-1] or res.stdout_truncated:
        raise ResolveFailed(f"could not resolve {len(paths)} path(s) on {host.name} (exit {res.exit_code})")
    out = []
    for record in records[:-1]:
        kind, _, real = record.partition(" ")
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
