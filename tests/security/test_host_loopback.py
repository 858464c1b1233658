"""The probes' GETs on this host's loopback (an engine's /metrics, Triton's metrics port) are bounded in time in all,
not per read: whoever listens on the port a process names answers, and a local user's fake vLLM (or Triton) whose port
sends one byte every half second held the engine probe (and the path probe) until the run's probe timeout, so that the
engine's configuration (or the path) was lost from every investigation. A counter Triton's port reports as `1e999`
(infinity) made the path report raise."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from orchestrator.probes import scripts
from orchestrator.prongs.path.probe import report_from


def _ns(name: str | None = None) -> dict:
    src = scripts.load(name).rsplit("\nmain()", 1)[0] if name else scripts.prelude()
    ns: dict = {"__name__": "probe"}
    exec(compile(src, f"<{name or 'prelude'}>", "exec"), ns)
    return ns


@pytest.fixture
def trickle():
    """An HTTP server on loopback that sends its headers, then one byte of its body every 0.2 s."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    stop = threading.Event()

    def one(c):
        try:
            c.recv(65536)
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 100000\r\n\r\n")
            while not stop.is_set():
                c.sendall(b"#")
                time.sleep(0.2)
        except OSError:
            pass
        finally:
            c.close()

    def accept():
        while not stop.is_set():
            try:
                c, _ = srv.accept()
            except OSError:
                return
            threading.Thread(target=one, args=(c,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    yield srv.getsockname()[1]
    stop.set()
    srv.close()


def test_a_server_that_answers_a_byte_at_a_time_is_cut_off_at_the_deadline(trickle):
    engine, path, request = _ns("engine"), _ns("path"), _ns("request_files")
    for fetch in (lambda: engine["fetch_metrics"](trickle, ["/metrics"], 1.0, 2_000_000),
                  lambda: path["triton_metrics"](trickle, 1.0),
                  lambda: request["fetch"](trickle, "/metrics", 1.0, 2_000_000)):
        got: list = []
        t = threading.Thread(target=lambda f=fetch: got.append(f()), daemon=True)
        t.start()
        t.join(5)
        assert not t.is_alive(), "held past 5 s by a server that sends a byte every 0.2 s"
        assert got[0] is None or "no whole answer" in got[0]["error"], got
    assert "error" in engine["fetch_metrics"](99999, ["/metrics"], 1.0, 100)  # a port a process names: no exception


def test_a_loopback_answer_within_the_deadline_is_read(tmp_path):
    import http.server

    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            body = b'nv_inference_request_success{model="m",version="1"} 12\n' \
                   b'nv_inference_exec_count{model="m",version="1"} 1e999\n'
            self.send_response(200 if self.path == "/metrics" else 302)
            self.send_header("Location", "http://example.invalid/")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass

    srv = http.server.HTTPServer(("127.0.0.1", 0), H)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        port = srv.server_address[1]
        got = _ns("engine")["fetch_metrics"](port, ["/metrics"], 2.0, 1000)
        assert got["status"] == 200 and "nv_inference_request_success" in got["text"], got
        assert "not followed" in _ns("engine")["fetch_metrics"](port, ["/other"], 2.0, 1000)["error"]
        models = _ns("path")["triton_metrics"](port, 2.0)
        assert models == {"m": {"nv_inference_request_success": 12.0}}, models  # infinity is no count
        report_from("h", {"triton_metrics": [{"pid": 1, "port": port, "models": models}]})
    finally:
        srv.shutdown()
        srv.server_close()
