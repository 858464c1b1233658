"""Stage serving engines on a staged host: real processes with the command lines real engines have, serving a
Prometheus `/metrics` from a real HTTP server on 127.0.0.1, with a planted secret in their environment.

- `vllm serve MODEL ...`: a console script `bin/vllm` (shebang = this interpreter), so /proc/PID/cmdline reads
  `python3 .../bin/vllm serve MODEL --tensor-parallel-size 8 ...` exactly as a pip-installed vLLM's does.
- `python3 -m vllm.entrypoints.openai.api_server ...`, `python3 -m sglang.launch_server ...`, `python3 -m dynamo.vllm
  ...` (NVIDIA Dynamo's vLLM worker): modules in the staged site-packages (the host's PYTHONPATH).
- `trtllm-serve MODEL ...`, `text-generation-launcher --model-id ...`: console scripts in `bin/`.
Every entry point runs the same fake server (`fake_engine.py`): it binds the --port / -p given (or the engine's
default), answers `/metrics` (vLLM, SGLang, TGI) or `/prometheus/metrics` (trtllm-serve) with the exposition text
staged for it, `/health` with 200, everything else 404.

The processes carry `INVESTIGATE_STAGED_TAG` (also in the staged host's env) so the probe on this staged host sees
only the engines staged for it, never another test's. `stop()` ends exactly the processes it started, by pid.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

SECRET_ENV = {"HF_TOKEN": "hf_STAGEDsecretVALUEdoNOTleak0123456789", "VLLM_API_KEY": "sk-staged-engine-key-DO-NOT-LEAK-42",
              "AWS_SECRET_ACCESS_KEY": "stagedAwsSecretDoNotLeak/abcdefghij0123456789"}
"""Planted in every staged engine's environment: none of these values may reach a transcript, prompt or report."""

FAKE_ENGINE = r'''#!{python}
"""Fake serving engine for tests: serves staged Prometheus text on 127.0.0.1:--port until killed."""
import http.server, os, sys
argv = sys.argv[1:]
port = None
for i, a in enumerate(argv):
    if a in ("--port", "-p") and i + 1 < len(argv):
        port = int(argv[i + 1])
    elif a.startswith("--port="):
        port = int(a.split("=", 1)[1])
port = port or int(os.environ.get("FAKE_ENGINE_DEFAULT_PORT", "8000"))
metrics_file = os.environ.get("FAKE_ENGINE_METRICS", "")
metrics_path = os.environ.get("FAKE_ENGINE_METRICS_PATH", "/metrics")


class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        redirect = os.environ.get("FAKE_ENGINE_REDIRECT")  # a hostile engine: /metrics answers with a redirect
        if self.path == metrics_path and redirect:
            self.send_response(302)
            self.send_header("Location", redirect)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if self.path == metrics_path and metrics_file and os.path.exists(metrics_file):
            body = open(metrics_file, "rb").read()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
        elif self.path == "/health":
            body = b""
            self.send_response(200)
        else:
            body = b"not found"
            self.send_response(404)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


srv = http.server.ThreadingHTTPServer(("127.0.0.1", port), H)
# Safety nets: a staged engine exits with the test process that started it (even one killed before its cleanup
# ran), and never outlives its test by long even if nobody stops it.
import threading, time


def _orphaned(parent=os.getppid()):
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(0)


threading.Thread(target=_orphaned, daemon=True).start()
threading.Timer(float(os.environ.get("FAKE_ENGINE_TTL_S", "600")), lambda: os._exit(0)).start()
ready = os.environ.get("FAKE_ENGINE_READY")
if ready:  # written whole, then renamed: the stager never reads a half-written file
    with open(ready + ".tmp", "w") as f:
        f.write(str(port))
    os.replace(ready + ".tmp", ready)
srv.serve_forever()
'''

SCRIPT = "#!{python}\nimport runpy, os, sys\nrunpy.run_path(os.path.join({bindir!r}, 'fake_engine.py'), run_name='__main__')\n"
MODULE = "import runpy, os\nrunpy.run_path(os.path.join({bindir!r}, 'fake_engine.py'), run_name='__main__')\n"

DEFAULT_PORTS = {"vllm": 8000, "sglang": 30000, "trtllm": 8000, "tgi": 3000}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class StagedEngines:
    tag: str
    procs: list[subprocess.Popen] = field(default_factory=list)
    ports: list[int] = field(default_factory=list)

    def stop(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                try:
                    os.kill(p.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        for p in self.procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                os.kill(p.pid, signal.SIGKILL)
                p.wait(timeout=5)
            if p.stderr is not None:  # the pipe kept for a start-up failure's message
                p.stderr.close()
        self.procs.clear()


def install_entry_points(bindir: Path, site: Path) -> None:
    """bin/vllm, bin/trtllm-serve, bin/text-generation-launcher and the server modules, all running fake_engine."""
    (bindir / "fake_engine.py").write_text(FAKE_ENGINE.replace("{python}", sys.executable))
    for name in ("vllm", "trtllm-serve", "text-generation-launcher"):
        exe = bindir / name
        exe.write_text(SCRIPT.replace("{python}", sys.executable).replace("{bindir!r}", repr(str(bindir))))
        exe.chmod(0o755)
    # `python3 -m dynamo.vllm` (NVIDIA Dynamo's vLLM worker) runs the same fake through the package's __main__
    for mod in ("vllm/entrypoints/openai/api_server.py", "sglang/launch_server.py", "dynamo/vllm/__main__.py"):
        p = site / mod
        p.parent.mkdir(parents=True, exist_ok=True)  # namespace packages (PEP 420): `-m` finds them
        p.write_text(MODULE.replace("{bindir!r}", repr(str(bindir))))


def engine_argv(staged, command: list[str]) -> list[str]:
    """A command as the user typed it (`vllm serve M ...`, `python3 -m sglang.launch_server ...`) -> argv to exec."""
    head = command[0]
    if head in ("python", "python3"):
        return [sys.executable, *command[1:]]
    return [str(staged.bin / head), *command[1:]]


def start_engines(staged, engines: list[dict]) -> StagedEngines:
    """Start each engine: {"command": [...] | "vllm serve ...", "metrics": TEXT | None, "env": {...}}; a free port
    is passed as --port unless the command names one. Adds the tag to staged.env."""
    import shlex

    tag = staged.env.get("INVESTIGATE_STAGED_TAG") or uuid.uuid4().hex
    staged.env["INVESTIGATE_STAGED_TAG"] = tag
    install_entry_points(staged.bin, staged.site)
    out = StagedEngines(tag=tag)
    datadir = staged.root / "engines"
    datadir.mkdir(parents=True, exist_ok=True)
    for i, spec in enumerate(engines):
        command = spec["command"]
        command = shlex.split(command) if isinstance(command, str) else list(command)
        kind = spec.get("kind") or _kind(command)
        auto_port = spec.get("port", "auto") == "auto" and not any(
            a in ("--port", "-p") or a.startswith("--port=") for a in command)
        env = {**os.environ, **staged.env, **SECRET_ENV, **{k: str(v) for k, v in (spec.get("env") or {}).items()}}
        env["INVESTIGATE_STAGED_TAG"] = tag
        env["FAKE_ENGINE_DEFAULT_PORT"] = str(DEFAULT_PORTS.get(kind, 8000))
        env["FAKE_ENGINE_METRICS_PATH"] = "/prometheus/metrics" if kind == "trtllm" else "/metrics"
        ready = datadir / f"ready-{i}"
        env["FAKE_ENGINE_READY"] = str(ready)
        if spec.get("metrics") is not None:
            mfile = datadir / f"metrics-{i}.txt"
            mfile.write_text(spec["metrics"])
            env["FAKE_ENGINE_METRICS"] = str(mfile)
        else:
            env.pop("FAKE_ENGINE_METRICS", None)
        for attempt in range(4):  # a free port can be taken between choosing it and binding it: choose again
            # a port the case names (vllm's 8000, sglang's 30000) may be held by another case running alongside
            # (xdist): after the first refusal, the named port is replaced by a free one
            named = command if auto_port or attempt == 0 else _with_port(command, free_port())
            argv = engine_argv(staged, named + (["--port", str(free_port())] if auto_port else []))
            proc = subprocess.Popen(argv, env=env, cwd=str(staged.root), stdin=subprocess.DEVNULL,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
            out.procs.append(proc)
            err = _wait_ready(proc, ready)
            if err is None:
                break
            out.procs.remove(proc)
            proc.wait()  # it exited (the port was taken): reap it and close its stderr pipe
            if proc.stderr:
                proc.stderr.close()
            if not ("Address already in use" in err and attempt < 3):
                out.stop()
                raise RuntimeError(f"staged engine {command} did not start: {err[-500:]}")
        out.ports.append(int(ready.read_text()))
    return out


def _with_port(command: list[str], port: int) -> list[str]:
    """The command with the port it names (--port N, -p N, --port=N) replaced by `port`."""
    out = list(command)
    for i, a in enumerate(out):
        if a in ("--port", "-p") and i + 1 < len(out):
            out[i + 1] = str(port)
        elif a.startswith("--port="):
            out[i] = f"--port={port}"
    return out


def _wait_ready(proc: subprocess.Popen, ready: Path) -> str | None:
    """None once the engine wrote its ready file; else why it did not (its stderr, or a timeout)."""
    deadline = time.monotonic() + 15
    while not ready.exists():
        if proc.poll() is not None:
            return proc.stderr.read().decode(errors="replace") if proc.stderr else "exited"
        if time.monotonic() > deadline:
            proc.kill()
            proc.wait(timeout=5)
            return "timed out"
        time.sleep(0.05)
    return None


def _kind(command: list[str]) -> str:
    joined = " ".join(command)
    if "sglang" in joined:
        return "sglang"
    if "trtllm-serve" in joined:
        return "trtllm"
    if "text-generation" in joined:
        return "tgi"
    return "vllm"


# --- the scenario stager ------------------------------------------------------------------------------------------

from support.stagers import StageContext, StageError, stager  # noqa: E402


@stager("engines")
def stage_engines_for_case(ctx: StageContext, arg) -> None:
    """`engines: [{command: "vllm serve MODEL --enforce-eager ...", metrics: FILE-or-text, env: {K: V}}]`: real
    processes with these command lines (a free --port is appended unless the command names one; `{port}` is a free
    port, `{root}`/`{home}` the staged tree), serving the metrics text on 127.0.0.1 at the engine's metrics path,
    with the planted secret env; stopped after the case."""
    if not isinstance(arg, list) or not all(isinstance(e, dict) and e.get("command") for e in arg):
        raise StageError("engines: expected a list of {command: ..., metrics: ..., env: {...}}")
    specs = []
    for e in arg:
        bad = set(e) - {"command", "metrics", "env"}
        if bad:
            raise StageError(f"engines: unknown field(s) {', '.join(sorted(bad))}")
        # {root} / {home}: the staged tree (config files the command names); {port}: a free port chosen here
        command = str(e["command"]).replace("{root}", str(ctx.root)).replace("{home}", str(ctx.home))
        command = command.replace("{port}", str(free_port()))
        specs.append({**e, "command": command,
                      "metrics": ctx.text(e["metrics"]) if e.get("metrics") is not None else None})
    started = start_engines(ctx.staged, specs)
    ctx.cleanups.append(started.stop)
