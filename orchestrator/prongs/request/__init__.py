"""The request account: every term of the user's latency and tokens, from each place it was measured, reconciled
end to end; each term against its physical floor; where two figures that should agree do not (a residual), the
mechanisms the residual table (orchestrator/knowledge/residuals.yaml) gives for its shape, confirmed or ruled out on
the evidence, or the candidates and the one measurement that splits them; the work nobody asked for; and a second
round of probes when the first round leaves the top residual's candidates unsplit.

Facts the residual table reads from the whole-path probe (`probe: path_layers`; the path prong emits them as flat
`path.<layer>.<setting>` facts), by the names the table uses:

- `path.haproxy.server_maxconn` (the smallest `maxconn` on a backend's `server` lines), `path.haproxy.queue_ms`
  (Tw, the time requests waited in HAProxy's queue, from its log);
- `path.nginx.proxy_buffering` (bool, the effective value on the location that proxies the engine),
  `path.nginx.gzip_event_stream` (bool: gzip on with text/event-stream among gzip_types), `path.nginx.upstream_max_conns`;
- `path.envoy.max_requests`, `path.envoy.upstream_rq_pending_overflow` (counter), `path.istio.http2_max_requests`,
  `path.istio.http1_max_pending_requests`;
- `path.litellm.tpm_limit`, `path.litellm.rpm_limit`, `path.litellm.rate_limited` (count of 429 answers in its log);
- `path.ray_serve.max_ongoing_requests` (effective, the default where unset);
- `path.k8s.readiness_timeout_s`, `path.k8s.restart_count`, `path.k8s.not_ready_events`;
- `path.triton.postprocessing.compute_ms` (compute time per execution of an ensemble's postprocessing model).

Its own facts are `request.*` (the account: `request.engine.*`, `request.client.*`, `request.finish.*`,
`request.residual.<shape>`, `request.floor.*`, `request.log.*`, `request.host.<layer>`, `request.model.*`) and
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
    bound_tiers=(Rank.RESIDUAL,),
)
