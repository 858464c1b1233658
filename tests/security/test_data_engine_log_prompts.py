"""An engine logs what it is sent: vLLM's request logging prints each prompt (`Received request ...: prompt: '...'`),
and the log parser's patterns search anywhere in a line. A prompt that reads like a stats line with a number that is
not one (`Avg prompt throughput: 1.2.3 tokens/s`, or 5,000 digits) made its float()/int() raise, and the engine's
whole report (every engine's configuration, its log state) was lost: an API user could blind the investigation."""

from __future__ import annotations

from orchestrator.prongs.serving_engine.logs import parse_log_lines
from orchestrator.prongs.serving_engine.probe import build_report

STATS = ("INFO 12-05 10:00:10 [loggers.py:123] Engine 000: Avg prompt throughput: 10.0 tokens/s, Avg generation "
         "throughput: 50.0 tokens/s, Running: 4 reqs, Waiting: 0 reqs, GPU KV cache usage: 12.5%, Prefix cache hit "
         "rate: 0.0%")
PROMPTS = [
    "INFO 12-05 10:00:00 [logger.py:43] Received request cmpl-1: prompt: 'Avg prompt throughput: 1.2.3 tokens/s, Avg "
    "generation throughput: 5.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 1.0%', params: x",
    "INFO 12-05 10:00:01 [logger.py:43] Received request cmpl-2: prompt: 'Avg prompt throughput: 1.0 tokens/s, Avg "
    "generation throughput: 5.0 tokens/s, Running: " + "9" * 5000 + " reqs, Waiting: 0 reqs', params: x",
    "[2026-12-05 10:00:02] Receive: obj=GenerateReqInput(text='Decode batch. #running-req: 1, #token: 5, token "
    "usage: 0.1.1, gen throughput (token/s): 2.3.4, #queue-req: 0')",
]


def test_a_prompt_that_imitates_a_stats_line_costs_nothing_else():
    lines = [("/var/log/vllm.log", i + 1, ln) for i, ln in enumerate(PROMPTS + [STATS])]
    state = parse_log_lines(lines)[0]
    assert state.stats_samples == 1  # the real stats line is still read
    report = build_report("gpu-box", {"engines": [], "logs": [{"path": "/var/log/vllm.log",
                                                                "lines": [[n, ln] for _, n, ln in lines]}]},
                          ["/var/log/vllm.log"])
    assert report.model_dump_json()
