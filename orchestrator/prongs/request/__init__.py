"""The request account: every term of the user's latency and tokens, from each place it was measured, reconciled
end to end; each term against its physical floor; where two figures that should agree do not (a residual), the
mechanisms the residual table (orchestrator/knowledge/residuals.yaml) gives for its shape, confirmed or ruled out on
the evidence, or the candidates and the one measurement that splits them; the work nobody asked for; and a second
round of probes when the first round leaves the top residual's candidates unsplit.

Facts the residual table reads from the whole-path prong (prongs/path: `probe: path_layers`), by its names:
`path.<layer>.present`, `path.haproxy.server_maxconn` / `backend_maxconn_total` / `servers`, `path.nginx.proxy_buffering`
/ `gzip` / `gzip_types`, `path.envoy.max_requests` / `istio_http2MaxRequests`, `path.litellm.tpm_limit` / `rpm_limit` /
`max_parallel_requests` / `max_deployments` (the most api_bases one model name has), `path.ray_serve.max_ongoing_requests`, `path.k8s.readiness_timeout_s` / `restarts` /
`events.readiness_probe_failed`, `path.docker.restarts`, `path.systemd.NRestarts`, `path.systemd.env.OLLAMA_NUM_PARALLEL`,
`path.runtime.gc_gen2_pause_ms_max`; the GPUs the orchestrator allocated (`path.k8s.limits_nvidia_com_gpu` and
the other vendors' GPU limits, `gres/gpu` in `path.slurm.tres`: `request.gpus.allocated` against `request.gpus.used`,
the engines' tensor x pipeline x data parallel sizes). And some the path prong does not read yet, named here for it:
`path.haproxy.queue_ms` (Tw, the time requests waited in HAProxy's queue, from its log), `path.nginx.upstream_max_conns`,
`path.envoy.upstream_rq_pending_overflow` (the sidecar's counter), `path.litellm.rate_limited` (429 answers in its log),
`path.client.pool_size` (the client's HTTP connection pool).

Its own facts are `request.*` (the account: `request.engine.*`, `request.client.*`, `request.finish.*`,
`request.residual.<shape>`, `request.gpus.*`, `request.kv.*` (a
disaggregated deployment's KV hand-off: prongs/request/handoff.py), `request.floor.*`, `request.log.*`, `request.host.<layer>`, `request.model.*`) and
`model_files.*` (the request probe: the served model's config, stop tokens, chat template, image processor).
"""

from orchestrator.prong import Prong
from orchestrator.ranks import Rank

PRONG = Prong(
    name="request",
    agent="request-account",
    tools=("orchestrator.prongs.request.tool:RequestAccountTool",),
    probe_models=("orchestrator.prongs.request.models:RequestFiles",),
    rules=("orchestrator.prongs.request.rules:request_account_findings",),
    html="orchestrator.prongs.request.report:account_html",
    markdown="orchestrator.prongs.request.report:account_markdown",
    terminal="orchestrator.prongs.request.report:render_account_terminal",
    follow_up="orchestrator.prongs.request.rules:second_round",
    bound_tiers=(Rank.RESIDUAL, Rank.ACCOUNT, Rank.SERVING_FLOOR),
)
