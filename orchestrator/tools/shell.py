"""Tools that look at the investigated host: `shell` (through the read-only policy), `read_file`, `find_files`."""

from __future__ import annotations


from pydantic import BaseModel, Field

import re

from orchestrator.hosts.base import CommandResult
from orchestrator.hosts.policy import (
    broad_root,
    check_command,
    file_operand_indices,
    read_operands,
    secret_path,
    unsafe_read,
)
from orchestrator.hosts.remote_io import exec_opened_argv
from orchestrator.hosts.resolve import check_on_host
from orchestrator.hosts.safeopen import FIRST_FD
from orchestrator.tools.base import Tool, ToolContext, ToolFailure, ToolOutput, ToolRegistry



def render_result(res: CommandResult) -> str:
    """A command result as text for a model: status line, then stdout and stderr."""
    status = "timed out" if res.timed_out else f"exit code {res.exit_code}"
    parts = [f"$ {' '.join(res.argv)}\n[{status}, {res.duration_s:.2f} s]"]
    if res.stdout:
        parts.append("--- stdout ---\n" + res.stdout)
    if res.stderr:
        parts.append("--- stderr ---\n" + res.stderr)
    return "\n".join(parts)


def opened_command(argv: list[str], resolved: dict[str, tuple[str, str]]) -> tuple[list[str], dict[str, str]]:
    """The command to run for an allowed argv whose file operands were checked as resolved on the host: a program
    that reads its operands gets each as the descriptor of the checked file, opened once with no symlink followed
    (hosts/safeopen.py), so a name swapped for a symlink after the check is never read. Returns the command and
    what each /dev/fd/N it reads was called."""
    opened: dict[int, str] = {}
    names: dict[str, str] = {}
    for i in file_operand_indices(argv):
        kind, real = resolved.get(argv[i], ("n", ""))
        # a missing operand is opened too: it fails there, rather than be created as a link before the program runs
        opened[i] = real if kind in ("f", "d", "o") and real else argv[i]
    for k, i in enumerate(sorted(opened)):
        names[f"/dev/fd/{FIRST_FD + k}"] = argv[i]
    if not opened:
        return argv, {}
    if argv[0] == "file":
        # /dev/fd/N is a link to what was opened: `file` describes links unless told to follow them (-L)
        return exec_opened_argv(["file", "-L", *argv[1:]], {i + 1: p for i, p in opened.items()}), names
    return exec_opened_argv(argv, opened), names


def named_back(res: CommandResult, argv: list[str], names: dict[str, str]) -> CommandResult:
    """The result as the model asked for it: its argv, and each /dev/fd/N in the output named as it was given."""
    if not names:
        return res
    pattern = re.compile("|".join(re.escape(n) + r"(?![0-9])" for n in sorted(names, key=len, reverse=True)))
    swap = lambda text: pattern.sub(lambda m: names[m.group(0)], text)  # noqa: E731
    return res.model_copy(update={"argv": argv, "stdout": swap(res.stdout), "stderr": swap(res.stderr)})


class ShellInput(BaseModel):
    command: str = Field(
        description="One read-only program and its arguments, e.g. `nvidia-smi -q -x` or `ls -la /root/.cache`. "
        "No shell: pipes, redirection, `;`, `&&`, `$(...)`, variables and writing programs are refused."
    )


class ShellTool(Tool):
    name = "shell"
    on_host = True
    description = (
        "Run one allowlisted read-only command on the investigated host (nvidia-smi, ls, cat, head, tail, grep, find, "
        "stat, du, df, uname, pip list/show/freeze, ps, lscpu, free, ...). Returns exit code, stdout and stderr."
    )
    Input = ShellInput

    async def run(self, args: ShellInput, ctx: ToolContext) -> ToolOutput:
        host = ctx.host()
        decision = check_command(args.command)
        if not decision.allowed:
            ctx.refuse(self.name, args.command, decision.reason)
            return ToolOutput(text=f"refused by the read-only policy: {decision.reason}", is_error=True,
                              host=host.name)
        # what the arguments point at on the host (symlinks followed) decides, not their names
        paths = read_operands(decision.argv)
        resolved: list[tuple[str, str]] = []
        if paths:
            why, resolved = await check_on_host(host, decision.argv, paths)
            if why is not None:
                ctx.refuse(self.name, args.command, why)
                return ToolOutput(text=f"refused by the read-only policy: {why}", is_error=True, host=host.name)
        s = ctx.settings
        argv, names = opened_command(decision.argv, dict(zip(paths, resolved)))
        res = await host.run(argv, timeout_s=s.command_timeout_s, max_output=s.command_output_bytes)
        res = named_back(res, decision.argv, names)
        return ToolOutput(text=render_result(res), data=res.model_dump(), untrusted=True, host=host.name)


class ReadFileInput(BaseModel):
    path: str = Field(description="Absolute path of the file on the investigated host.")
    max_bytes: int | None = Field(default=None, ge=1, description="Read at most this many bytes (default: the cap).")


class ReadFileTool(Tool):
    name = "read_file"
    on_host = True
    description = "Read a text file on the investigated host (size-capped)."
    Input = ReadFileInput

    async def run(self, args: ReadFileInput, ctx: ToolContext) -> ToolOutput:
        host = ctx.host()
        why = secret_path(args.path)
        if why is not None:
            ctx.refuse(self.name, args.path, why)
            return ToolOutput(text=f"refused by the read-only policy: {why}", is_error=True, host=host.name)
        cap = min(args.max_bytes or ctx.settings.file_max_bytes, ctx.settings.file_max_bytes)
        # resolve on the host first (a log that is a symlink to ~/.netrc or /dev/zero), then read what was checked
        why = unsafe_read(args.path)
        resolved: list[tuple[str, str]] = []
        if why is None:
            why, resolved = await check_on_host(host, ["cat"], [args.path])
        if why is not None:
            ctx.refuse(self.name, args.path, why)
            return ToolOutput(text=f"refused by the read-only policy: {why}", is_error=True, host=host.name)
        target = resolved[0][1] if resolved and resolved[0][0] == "f" else args.path
        try:
            data = await host.read_file(target, max_bytes=cap)
        except FileNotFoundError:
            raise ToolFailure(f"{args.path} does not exist on {host.name}") from None
        except (IsADirectoryError, PermissionError, OSError) as exc:
            raise ToolFailure(f"cannot read {args.path} on {host.name}: {exc}") from None
        note = f"\n[read the first {cap} bytes; the file may be longer]" if len(data) >= cap else ""
        return ToolOutput(
            text=data.decode("utf-8", errors="replace") + note,
            data={"path": args.path, "bytes": len(data), "capped": len(data) >= cap},
            untrusted=True,
            host=host.name,
        )


class FindFilesInput(BaseModel):
    root: str = Field(description="Directory to search under, on the investigated host.")
    pattern: str = Field(default="*", description="Glob matched against file names, e.g. `*.json`.")
    max_results: int = Field(default=2000, ge=1, le=100_000)


class FindFilesTool(Tool):
    name = "find_files"
    on_host = True
    description = "List files under a directory on the investigated host whose names match a glob (one round trip)."
    Input = FindFilesInput

    async def run(self, args: FindFilesInput, ctx: ToolContext) -> ToolOutput:
        host = ctx.host()
        # the credential policy, as for reads: never a credential location, a device tree or a sweep of a home or
        # /etc, judged by the root as given and as resolved on the host
        why = unsafe_read(args.root) or secret_path(args.root) or broad_root(args.root)
        if why is None:
            why, resolved = await check_on_host(host, ["find"], [args.root])
            if why is None and resolved and resolved[0][1]:
                real = resolved[0][1]
                why = broad_root(real) if real != args.root else None
        if why is not None:
            ctx.refuse(self.name, args.root, why)
            return ToolOutput(text=f"refused by the read-only policy: {why}", is_error=True, host=host.name)
        found = await host.find(args.root, args.pattern, max_results=args.max_results)
        more = len(found) >= args.max_results
        # names of credential files are not listed either (a key's name says where the key is)
        paths = [p for p in found if secret_path(p) is None and unsafe_read(p) is None]
        withheld = len(found) - len(paths)
        head = f"{len(paths)} file(s) under {args.root} matching {args.pattern!r}" + (
            f" (stopped at {args.max_results})" if more else ""
        ) + (f"; {withheld} credential location(s) not listed" if withheld else "")
        return ToolOutput(
            text="\n".join([head, *paths]),
            data={"root": args.root, "pattern": args.pattern, "paths": paths, "capped": more, "withheld": withheld},
            untrusted=True,
            host=host.name,
        )


def register(registry: ToolRegistry) -> None:
    """Add `shell`, `read_file` and `find_files` to registry."""
    registry.add(ShellTool())
    registry.add(ReadFileTool())
    registry.add(FindFilesTool())
