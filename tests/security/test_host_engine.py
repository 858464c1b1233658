"""Issue 23, "also broken" (engine probe), against a real sshd: a hostile serving process names a FIFO as its
`--config` (opening it for reading blocks until a writer comes) and answers `/metrics` with a redirect to another
address. The probe neither opens the FIFO nor follows the redirect."""

from __future__ import annotations

import http.server
import os
import threading
import time

import pytest

from orchestrator.hosts.ssh import SshHost
from orchestrator.prongs.serving_engine.probe import collect_engine_report
from orchestrator.settings import Settings
from support.stage_engine import start_engines
from support.staged_host import stage_host

pytestmark = pytest.mark.skipif(not os.path.exists("/usr/sbin/sshd"), reason="needs sshd")


class _Target(http.server.BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self):
        _Target.hits.append(self.path)
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *a):
        pass


async def test_a_fifo_config_is_not_opened_and_a_metrics_redirect_is_not_followed(tmp_path, sshd_factory):
    target = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Target)
    threading.Thread(target=target.serve_forever, daemon=True).start()
    staged = stage_host(tmp_path, variant="h200")
    fifo = tmp_path / "engine-config.yaml"
    os.mkfifo(fifo)
    config = tmp_path / "real-config.yaml"
    config.write_text("max-num-seqs: 64\n")
    engines = start_engines(staged, [
        {"command": f"vllm serve meta-llama/Llama-3.1-8B-Instruct --config {fifo}",
         "env": {"FAKE_ENGINE_REDIRECT": f"http://127.0.0.1:{target.server_port}/steal"}},
        {"command": f"vllm serve Qwen/Qwen3-8B --config {config}"},
    ])
    host = await SshHost(sshd_factory().target(), Settings()).connect()
    try:
        started = time.monotonic()
        report = await collect_engine_report(staged.wrap(host), [])
        took = time.monotonic() - started
    finally:
        await host.aclose()
        engines.stop()
        target.shutdown()
        target.server_close()
    assert report.available, report.reason
    assert took < 20, f"the probe blocked on the FIFO ({took:.0f} s)"
    assert _Target.hits == [], _Target.hits  # the redirect was never followed
    by_model = {e.model: e for e in report.engines}
    hostile = by_model["meta-llama/Llama-3.1-8B-Instruct"]
    assert hostile.metrics is not None and hostile.metrics.status == 302
    assert "not followed" in (hostile.metrics.error or "")
    # an ordinary config file is still read (its setting reaches the report)
    assert by_model["Qwen/Qwen3-8B"].value("max_num_seqs") == 64
