"""The path prong's input (`--path-config`), checked before any work: each file is a readable text file of a layer
the prong reads (a proxy's or gateway's config, a Kubernetes manifest or events, a systemd unit, `docker inspect`)."""

from __future__ import annotations

from pathlib import Path

from orchestrator.errors import InputError

LAYERS = ("nginx, HAProxy, Envoy/Istio YAML, LiteLLM config, Ray Serve config, a Kubernetes manifest, "
          "HorizontalPodAutoscaler, KEDA ScaledObject or `kubectl get events`, a systemd unit, `docker inspect` JSON, a Triton config.pbtxt")
"""What `--path-config` reads, in the words of its error message."""


def check(path_configs: list[Path] | None = None) -> None:
    """Each `--path-config` names a regular UTF-8 file within the size read, whose layer can be told from its name
    or text (`InputError`: one line naming the file and the fix)."""
    from orchestrator.limits import PATH_CONFIG_MAX_BYTES
    from orchestrator.prongs.path.parsers import sniff
    from orchestrator.validate import check_input_file

    fix = f"pass a config file of a layer in front of the engine ({LAYERS})"
    for given in path_configs or ():
        p = check_input_file(given, "--path-config", fix, max_bytes=PATH_CONFIG_MAX_BYTES)
        try:
            text = p.read_bytes().decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(f"--path-config {p} is not UTF-8 text (byte {exc.start}); {fix}") from None
        if not text.strip():
            raise InputError(f"--path-config {p} is empty; {fix}")
        if sniff(text, str(p)) is None:
            raise InputError(f"--path-config {p} is not a config this tool reads; {fix}")
