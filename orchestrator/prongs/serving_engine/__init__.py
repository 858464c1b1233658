"""Serving engine: how the engine is configured and what it reports (command line, selected backends, CUDA graphs,
KV cache, scheduler, /metrics, periodic log lines), and the measured latency against its roofline floor."""

from orchestrator.ranks import Rank
from orchestrator.prong import Prong

PRONG = Prong(
    name="serving_engine",
    agent="serving-engine",
    tools=("orchestrator.prongs.serving_engine.tool:EngineConfigTool",),
    probe_models=("orchestrator.prongs.serving_engine.models:EngineReport",),
    rules=("orchestrator.prongs.serving_engine.rules:serving_latency",
           "orchestrator.prongs.serving_engine.attention_rules:mla_triton_long_context"),
    bound_tiers=(Rank.BATCH_HELD, Rank.SERVING_FLOOR),
    html="orchestrator.prongs.serving_engine.report:engine_html",
    markdown="orchestrator.prongs.serving_engine.report:engine_markdown",
    terminal="orchestrator.prongs.serving_engine.report:render_engine_terminal",
)
