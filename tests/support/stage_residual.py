"""Staging for the layers between the user and the engine: programs on PATH that answer from staged files (`kubectl`,
`docker`, `systemctl`, `ss`, ...) and HTTP services with the command lines real proxies and servers have (LiteLLM,
Triton, Envoy's admin port, HAProxy's stats page), each serving staged text.

    commands:
      kubectl:                                  # a program on the staged PATH
        - {args: 'get (pod|pods)\\b.*-o json', stdout: pod.json}   # first rule whose regex matches the arguments
        - {args: 'get events', stdout: events.txt}
        - {args: '.*', stderr: 'error: the server doesn''t have a resource type', rc: 1}
    services:
      - command: litellm --config /etc/litellm/config.yaml --port {port}   # {port}: a free port chosen here
        paths: {/metrics: litellm-metrics.txt, /health/readiness: '{"status": "connected"}'}
        headers: {x-litellm-version: 1.74.9}    # added to every answer

A command's rules are regular expressions searched in its arguments joined by spaces; the first that matches prints
its `stdout` (a file of the case directory or inline text), its `stderr`, and exits with `rc` (default 0). Arguments no
rule matches go to the program of that name that was on the staged PATH before (e.g. a `systemctl` the node stagers
installed), else print `<name>: no staged answer for: <args>` and exit 1. A service is a real process (argv as the
command reads, its first word a console script in the staged bin/) carrying the staged tag; it answers GET and POST on
127.0.0.1 with the staged text of the path (404 for any other path) and is stopped after the case.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from typing import Any

from support.stage_engine import free_port
from support.stagers import StageContext, StageError, stager

COMMAND = r'''#!{python}
"""Staged {name}: answers from the rules in .{name}.rules.json beside it (tests/support/stage_residual.py)."""
import json, os, re, sys
here = os.path.dirname(os.path.abspath(__file__))
args = " ".join(sys.argv[1:])
for rule in json.load(open(os.path.join(here, ".{name}.rules.json"))):
    if re.search(rule["args"], args):
        sys.stdout.write(rule.get("stdout", ""))
        sys.stderr.write(rule.get("stderr", ""))
        sys.exit(int(rule.get("rc", 0)))
prev = os.path.join(here, ".{name}.prev")
if os.path.exists(prev):
    os.execv(prev, [prev] + sys.argv[1:])
sys.stderr.write("{name}: no staged answer for: %s\n" % args)
sys.exit(1)
'''

SERVICE = r'''#!{python}
"""A staged service: answers the staged paths of .service-N.json on 127.0.0.1 until killed."""
import http.server, json, os, sys, threading, time
spec = json.load(open(os.environ["STAGED_SERVICE_SPEC"]))


class H(http.server.BaseHTTPRequestHandler):
    def _answer(self):
        path = self.path.split("?", 1)[0]
        body = spec["paths"].get(path)
        if body is None:
            self.send_response(404)
            data = b"not found"
        else:
            self.send_response(200)
            data = body.encode()
            kind = "application/json" if body.lstrip().startswith(("{", "[")) else "text/plain; version=0.0.4; charset=utf-8"
            self.send_header("Content-Type", kind)
        for k, v in spec.get("headers", {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = _answer

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._answer()

    def log_message(self, *a):
        pass


srv = http.server.ThreadingHTTPServer(("127.0.0.1", spec["port"]), H)


def _orphaned(parent=os.getppid()):  # exits with the test process that started it
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(0)


threading.Thread(target=_orphaned, daemon=True).start()
threading.Timer(600, lambda: os._exit(0)).start()
ready = os.environ["STAGED_SERVICE_READY"]
with open(ready + ".tmp", "w") as f:
    f.write(str(spec["port"]))
os.replace(ready + ".tmp", ready)
srv.serve_forever()
'''


def _name_ok(name: str) -> bool:
    return bool(name) and "/" not in name and not name.startswith(".")


@stager("commands")
def stage_commands(ctx: StageContext, arg: Any) -> None:
    """`commands: {kubectl: [{args: REGEX, stdout: FILE-or-text, stderr: text, rc: 0}, ...], ...}` (module docstring)."""
    if not isinstance(arg, dict):
        raise StageError("commands: expected a mapping of program name -> list of {args, stdout, stderr, rc}")
    bindir = ctx.root / "bin"
    for name, rules in arg.items():
        name = str(name)
        if not _name_ok(name) or not isinstance(rules, list):
            raise StageError(f"commands: {name!r} needs a plain program name and a list of rules")
        out = []
        for r in rules:
            if not isinstance(r, dict) or "args" not in r or set(r) - {"args", "stdout", "stderr", "rc"}:
                raise StageError(f"commands: {name}: each rule is {{args: REGEX, stdout, stderr, rc}}, got {r!r}")
            out.append({"args": str(r["args"]), "stdout": ctx.text(r["stdout"]) if "stdout" in r else "",
                        "stderr": ctx.text(r["stderr"]) if "stderr" in r else "", "rc": int(r.get("rc", 0))})
        exe = bindir / name
        if exe.exists() and not (bindir / f".{name}.prev").exists():
            os.replace(exe, bindir / f".{name}.prev")
        (bindir / f".{name}.rules.json").write_text(json.dumps(out))
        exe.write_text(COMMAND.replace("{python}", sys.executable).replace("{name}", name))
        exe.chmod(0o755)


@stager("services")
def stage_services(ctx: StageContext, arg: Any) -> None:
    """`services: [{command: "litellm --port {port} ...", paths: {/metrics: FILE-or-text}, headers: {...}, env: {...}}]`
    (module docstring): real processes serving staged text on 127.0.0.1, stopped after the case."""
    if not isinstance(arg, list) or not all(isinstance(s, dict) and s.get("command") for s in arg):
        raise StageError("services: expected a list of {command: ..., paths: {...}}")
    bindir, datadir = ctx.root / "bin", ctx.root / "services"
    datadir.mkdir(parents=True, exist_ok=True)
    procs: list[subprocess.Popen] = []

    def stop() -> None:
        for p in procs:
            if p.poll() is None:
                os.kill(p.pid, signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=5)

    ctx.cleanups.append(stop)
    for i, s in enumerate(arg):
        bad = set(s) - {"command", "paths", "headers", "env"}
        if bad:
            raise StageError(f"services: unknown field(s) {', '.join(sorted(bad))}")
        port = free_port()
        command = str(s["command"]).replace("{port}", str(port)).replace("{root}", str(ctx.root))
        argv = shlex.split(command)
        if not _name_ok(argv[0]):
            raise StageError(f"services: the command's first word must be a program name, got {argv[0]!r}")
        exe = bindir / argv[0]
        if not exe.exists():
            exe.write_text(SERVICE.replace("{python}", sys.executable))
            exe.chmod(0o755)
        spec = {"port": port, "paths": {str(k): ctx.text(v) for k, v in dict(s.get("paths") or {}).items()},
                "headers": {str(k): str(v) for k, v in dict(s.get("headers") or {}).items()}}
        spec_file, ready = datadir / f"service-{i}.json", datadir / f"ready-{i}"
        spec_file.write_text(json.dumps(spec))
        env = {**os.environ, **ctx.env, **{str(k): str(v) for k, v in dict(s.get("env") or {}).items()},
               "STAGED_SERVICE_SPEC": str(spec_file), "STAGED_SERVICE_READY": str(ready)}
        proc = subprocess.Popen([str(exe), *argv[1:]], env=env, cwd=str(ctx.root), stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
        procs.append(proc)
        deadline = time.monotonic() + 15
        while not ready.exists():
            if proc.poll() is not None or time.monotonic() > deadline:
                err = proc.stderr.read().decode(errors="replace") if proc.poll() is not None and proc.stderr else ""
                raise StageError(f"services: {argv[0]} did not start: {err[-300:] or 'timed out'}")
            time.sleep(0.05)
        if proc.stderr is not None:
            proc.stderr.close()
