"""`--path-config FILE`: a layer's config the host cannot show, checked before any work and read by the path prong."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.errors import InputError
from orchestrator.prongs.path.probe import report_from
from orchestrator.request import RunRequest

NGINX = """events {}
http {
    upstream vllm { server 127.0.0.1:8000; }
    server {
        listen 80;
        gzip on;
        gzip_types text/event-stream application/json;
        location /v1/ { proxy_pass http://vllm; }
    }
}
"""


def test_a_layer_config_is_taken_and_reaches_the_run_inputs(tmp_path: Path) -> None:
    conf = tmp_path / "gateway.conf"
    conf.write_text(NGINX)
    req = RunRequest.of("why is TTFT high through the gateway?", path_configs=[conf], offline=True)
    assert req.path_configs == [conf]


@pytest.mark.parametrize("content, says", [
    (None, "not found"),
    ("", "is empty"),
    ("just some notes\n", "not a config this tool reads"),
    (b"\xff\xfe nginx", "not UTF-8"),
])
def test_a_bad_path_config_is_one_line_naming_it(tmp_path: Path, content, says: str) -> None:
    conf = tmp_path / "layer.conf"
    if isinstance(content, bytes):
        conf.write_bytes(content)
    elif content is not None:
        conf.write_text(content)
    with pytest.raises(InputError) as exc:
        RunRequest.of("why is TTFT high through the gateway?", path_configs=[conf], offline=True)
    msg = str(exc.value)
    assert "\n" not in msg and msg.startswith("--path-config ") and says in msg and "pass a config file" in msg


def test_an_empty_path_config_option_is_an_error() -> None:
    with pytest.raises(InputError, match=r"^--path-config is empty"):
        RunRequest.of("why is TTFT high?", path_configs=[""], offline=True)


def test_the_prong_reads_a_given_config_as_a_layer() -> None:
    rep = report_from("gpu-box", {}, {"/home/me/gateway.conf": NGINX})
    nginx = rep.layer("nginx")
    assert nginx is not None
    assert "text/event-stream" in str(nginx.settings["gzip_types"].value)
