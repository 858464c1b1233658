# --- forks driver (probes/runner.py run_scripts): fixed probe scripts started together, one interpreter start ---
# The prelude (the helpers every script is sent with) is compiled and run once here; each part then runs in a child
# of this process (os.fork), all at the same time, exactly as `python3 -` runs the script alone: its parameters on
# argv[1], its own stdout and stderr, its exit code, its time limit (past it the child's process group is killed, as
# the host's `timeout` would). Prints one JSON object: {index: {rc, stdout, stderr, timed_out, stdout_truncated,
# stderr_truncated, s}}. stdlib only, Python >= 3.8, POSIX.
import json
import os
import select
import signal
import sys
import time
import traceback

MARKER = "\n[... %d bytes omitted by the output cap ...]\n"


class Capped(object):
    """The head (two thirds of the cap) and tail of a stream, as the host keeps a command's output."""

    def __init__(self, limit):
        self.head_cap = limit * 2 // 3
        self.tail_cap = limit - self.head_cap
        self.limit, self.head, self.tail, self.total = limit, bytearray(), bytearray(), 0

    def feed(self, data):
        self.total += len(data)
        room = self.head_cap - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data and self.tail_cap:
            self.tail += data
            if len(self.tail) > self.tail_cap:
                del self.tail[:len(self.tail) - self.tail_cap]

    def text(self):
        head = self.head.decode("utf-8", "replace")
        if self.total <= self.limit:
            return head + self.tail.decode("utf-8", "replace")
        return head + MARKER % (self.total - len(self.head) - len(self.tail)) + self.tail.decode("utf-8", "replace")


def _child(ns, source, params, out_w, err_w, others):
    """In the forked child: run one part as `python3 -` would, then leave without running the parent's exit."""
    code = 0
    try:
        try:
            os.setpgid(0, 0)
        except OSError:
            pass
        for fd in others:
            os.close(fd)
        os.dup2(out_w, 1)
        os.dup2(err_w, 2)
        os.close(out_w)
        os.close(err_w)
        sys.argv = ["-", json.dumps(params)]
        exec(compile(source, "<stdin>", "exec"), ns)
    except SystemExit as exc:
        if exc.code is None:
            code = 0
        elif isinstance(exc.code, int):
            code = exc.code
        else:
            sys.stderr.write("%s\n" % (exc.code,))
            code = 1
    except BaseException:
        traceback.print_exc()
        code = 1
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:
        pass
    os._exit(code & 0xFF)


def run_forked(prelude, parts):
    """parts: [[source, params, timeout_s, max_output]]; the prelude runs once, each part in a child of its own."""
    ns = {"__name__": "__main__", "__builtins__": __builtins__}
    exec(compile(prelude, "<stdin>", "exec"), ns)
    sys.stdout.flush()
    sys.stderr.flush()
    kids, fds = [], []
    for source, params, timeout_s, cap in parts:
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            _child(ns, source, params, out_w, err_w, fds + [out_r, err_r])
        os.close(out_w)
        os.close(err_w)
        fds += [out_r, err_r]
        kids.append({"pid": pid, "out": out_r, "err": err_r, "deadline": time.monotonic() + float(timeout_s),
                     "bufs": {out_r: Capped(int(cap)), err_r: Capped(int(cap))}, "open": set([out_r, err_r]),
                     "rc": None, "timed_out": False, "started": time.monotonic(), "s": None})
    while True:
        live = [k for k in kids if k["s"] is None]
        if not live:
            break
        now = time.monotonic()
        for k in live:
            if now >= k["deadline"]:  # the part's time limit: its whole process group goes
                try:
                    os.killpg(k["pid"], signal.SIGKILL)
                except OSError:
                    try:
                        os.kill(k["pid"], signal.SIGKILL)
                    except OSError:
                        pass
                k["timed_out"] = True
        reading = [fd for k in live for fd in k["open"]]
        wait = max(0.0, min(k["deadline"] for k in live) - time.monotonic())
        ready = select.select(reading, [], [], min(wait, 0.05))[0] if reading else []
        for k in live:
            for fd in list(k["open"]):
                if fd in ready:
                    data = os.read(fd, 65536)
                    if data:
                        k["bufs"][fd].feed(data)
                        continue
                    k["open"].discard(fd)
                    os.close(fd)
            if k["timed_out"] and k["open"] and time.monotonic() >= k["deadline"] + 2:
                for fd in k["open"]:  # a killed part's output is dropped; a holder of its pipe is not waited for
                    os.close(fd)
                k["open"].clear()
            if not k["open"]:
                pid, status = os.waitpid(k["pid"], 0 if k["timed_out"] else os.WNOHANG)
                if pid:
                    k["rc"] = os.WEXITSTATUS(status) if os.WIFEXITED(status) else -os.WTERMSIG(status)
                    k["s"] = round(time.monotonic() - k["started"], 4)
    out = {}
    for i, k in enumerate(kids):
        o, e = k["bufs"][k["out"]], k["bufs"][k["err"]]
        out[str(i)] = {"rc": None if k["timed_out"] else k["rc"], "timed_out": k["timed_out"],
                       "stdout": "" if k["timed_out"] else o.text(), "stderr": "" if k["timed_out"] else e.text(),
                       "stdout_truncated": o.total > o.limit, "stderr_truncated": e.total > e.limit, "s": k["s"]}
    sys.stdout.write(json.dumps(out) + "\n")
