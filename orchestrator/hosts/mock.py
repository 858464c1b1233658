"""`MockHost`: a host double shipped in the package, the way httpx ships `MockTransport`.

A handler answers every call. It receives one request object (`RunRequest`, `ReadRequest` or `FindRequest`) and
returns what the host would: for a run, a `CommandResult`, a `str` (stdout, exit 0) or an `int` (exit code, no
output); for a read, `bytes` or `str`; for a find, a list of paths. Raising is allowed (`FileNotFoundError` for a
missing file, `HostLost`, ...) and reaches the caller as it would from a real host. Output caps and the read cap are
applied here, so code under test sees what a real host would send back.

```python
def handler(req):
    if isinstance(req, RunRequest) and req.argv[:1] == ["nvidia-smi"]:
        return "No devices were found"
    raise FileNotFoundError(getattr(req, "path", req))

host = MockHost(handler)
```

A handler may also be a coroutine function (`async def handler(req)`): it is awaited, so a test can simulate a slow
host (`await anyio.sleep(2)`) and cancellation reaches it as it would reach a real host's call (as httpx's
`MockTransport` accepts an async handler).
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Awaitable, Callable, Union

from orchestrator.hosts.base import CommandResult
from orchestrator.hosts.output import CappedBuffer


@dataclass(frozen=True)
class RunRequest:
    argv: list[str]
    stdin: str | None = None
    timeout_s: float = 60.0


@dataclass(frozen=True)
class ReadRequest:
    path: str
    max_bytes: int = 1_000_000


@dataclass(frozen=True)
class FindRequest:
    root: str
    pattern: str = "*"
    max_results: int = 10_000


Request = Union[RunRequest, ReadRequest, FindRequest]
Handler = Union[Callable[[Request], object], Callable[[Request], Awaitable[object]]]


def _capped(text: str, cap: int) -> tuple[str, bool]:
    buf = CappedBuffer(cap)  # the same head-and-tail cap as the real hosts apply
    buf.feed(text.encode())
    return buf.text(), buf.truncated


@dataclass
class MockHost:
    """A host whose every answer comes from `handler`; `requests` lists what was asked, in order."""

    handler: Handler
    name: str = "mock"
    requests: list[Request] = field(default_factory=list)
    closed: bool = False

    async def _answer(self, req: Request) -> object:
        self.requests.append(req)
        answer = self.handler(req)
        return await answer if inspect.isawaitable(answer) else answer

    async def run(self, argv: list[str], *, stdin: str | None = None, timeout_s: float = 60.0,
                  max_output: int = 1_000_000) -> CommandResult:
        answer = await self._answer(RunRequest(list(argv), stdin, timeout_s))
        if isinstance(answer, CommandResult):
            result = answer.model_copy(update={"argv": list(argv)})
        elif isinstance(answer, int) and not isinstance(answer, bool):
            result = CommandResult(argv=list(argv), exit_code=answer)
        elif isinstance(answer, str):
            result = CommandResult(argv=list(argv), exit_code=0, stdout=answer)
        else:
            raise TypeError(f"MockHost handler returned {type(answer).__name__} for a run; "
                            "return a CommandResult, a str (stdout) or an int (exit code)")
        out, out_cut = _capped(result.stdout, max_output)
        err, err_cut = _capped(result.stderr, max_output)
        return result.model_copy(update={"stdout": out, "stderr": err,
                                         "stdout_truncated": result.stdout_truncated or out_cut,
                                         "stderr_truncated": result.stderr_truncated or err_cut})

    async def read_file(self, path: str, *, max_bytes: int = 1_000_000) -> bytes:
        answer = await self._answer(ReadRequest(path, max_bytes))
        data = answer.encode() if isinstance(answer, str) else answer
        if not isinstance(data, bytes):
            raise TypeError(f"MockHost handler returned {type(answer).__name__} for a read; return bytes or str")
        return data[:max_bytes]

    async def find(self, root: str, pattern: str = "*", *, max_results: int = 10_000) -> list[str]:
        answer = await self._answer(FindRequest(root, pattern, max_results))
        if not isinstance(answer, (list, tuple)):
            raise TypeError(f"MockHost handler returned {type(answer).__name__} for a find; return a list of paths")
        return [str(p) for p in answer][:max_results]

    async def aclose(self) -> None:
        self.closed = True
