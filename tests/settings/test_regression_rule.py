"""The regression rule over recorded evidence (prongs/settings_audit/rules.py): versions from the question, from two engine
logs or from two hosts; the changed defaults ranked by the symptom the two benchmark runs show worse."""

from __future__ import annotations

from orchestrator.analysis.evidence_view import EvidenceView
from orchestrator.prongs.settings_audit.rules import settings_rule
from orchestrator.evidence import Evidence
from orchestrator.observations import BaselineLog, BenchResult, Latency, Observations
from orchestrator.prongs.serving_engine.models import EngineInstance, EngineLogLine, EngineReport


def _engine_ev(eid: str, version: str, host: str | None = None, lines: list[str] = ()) -> Evidence:
    rep = EngineReport(host=host or "local", engines=[EngineInstance(name="vllm", version=version, pid=1)],
                       log_files=["/var/log/vllm.log"] if lines else [],
                       lines=[EngineLogLine(path="/var/log/vllm.log", line_no=i + 1, line=ln)
                              for i, ln in enumerate(lines)])
    return Evidence(id=eid, agent_id="a", tool="engine_config", args={"host": host} if host else {},
                    host=host, data=rep.model_dump(mode="json"))


def _obs_ev(obs: Observations) -> Evidence:
    return Evidence(id="ev-0.1", agent_id="lead", tool="observations",
                    data={"kind": "observations", "observations": obs.model_dump(mode="json")})


def _run(label: str | None, itl: float, ttft: float, tput: float) -> BenchResult:
    return BenchResult(format="vllm-bench-serve", source=f"{label or 'after'}.json", label=label, max_concurrency=32,
                       request_rate="inf", input_len=1024, output_len=256, output_throughput=tput,
                       ttft=Latency(p50=ttft, p99=ttft * 2), itl=Latency(p50=itl, p99=itl * 1.5))


def _ids(findings) -> set[str]:
    return {f.id for f in findings}


def test_two_hosts_at_two_versions_rank_the_defaults_that_differ():
    view = EvidenceView([_engine_ev("ev-1.1", "0.28.0", "a"), _engine_ev("ev-1.2", "0.29.0", "b")],
                        question="decode on host b is slower than on host a, same model and flags, why?")
    found = {f.id: f for f in settings_rule(view)}
    f = found["changed-default-vllm-vllm_allreduce_use_flashinfer"]
    assert "the hosts (a runs 0.28.0, b runs 0.29.0)" in f.claim and set(f.evidence) == {"ev-1.1", "ev-1.2"}
    # one host, or two at one version: nothing to compare
    one = EvidenceView([_engine_ev("ev-1.1", "0.29.0", "a"), _engine_ev("ev-1.2", "0.29.0", "b")],
                       question="decode on host b is slower than on host a, why?")
    assert not any(x.startswith("changed-default") for x in _ids(settings_rule(one)))


def test_two_logs_give_the_versions_when_the_question_names_none():
    after = ["(APIServer pid=1) INFO 11-28 10:02:44 [api_server.py:1896] vLLM API server version 0.29.0",
             "(APIServer pid=1) INFO 11-28 10:02:44 [utils.py:233] non-default args: {'model': 'm', "
             "'max_num_seqs': 128, 'async_scheduling': False}"]
    before = ["(APIServer pid=1) INFO 10-02 14:31:07 [api_server.py:1896] vLLM API server version 0.28.0",
              "(APIServer pid=1) INFO 10-02 14:31:07 [utils.py:233] non-default args: {'model': 'm', "
              "'max_num_seqs': 256}"]
    obs = Observations(baseline_log=BaselineLog(source="before.log", lines=before))
    view = EvidenceView([_obs_ev(obs), _engine_ev("ev-1.1", "0.29.0", lines=after)],
                        question="inter-token latency got worse after the upgrade, why?")
    found = {f.id: f for f in settings_rule(view)}
    assert "read from the two logs" in found["changed-default-vllm-vllm_allreduce_use_flashinfer"].claim
    # a setting the new deployment changed, with a curated effect on the asked symptom: a cause of its own
    assert found["changed-setting-vllm-async_scheduling"].title.startswith("--async-scheduling changed")
    listed = found["changed-settings-logs"].claim
    assert "max_num_seqs: 256 -> 128" in listed and "async_scheduling: default -> False" in listed
    without = EvidenceView([_engine_ev("ev-1.1", "0.29.0", lines=after)],
                           question="inter-token latency got worse after the upgrade, why?")
    assert not any(x.startswith("changed-") for x in _ids(settings_rule(without)))


def test_what_the_runs_show_unchanged_is_listed_not_ranked():
    q = "slower after upgrading vllm from 0.28.0 to 0.29.0, why?"
    engine = _engine_ev("ev-1.1", "0.29.0")
    itl_worse = Observations(bench=[_run("baseline", 24.0, 200.0, 1200.0), _run(None, 29.5, 201.0, 990.0)])
    found = {f.id: f for f in settings_rule(EvidenceView([_obs_ev(itl_worse), engine], question=q))}
    f = found["changed-default-vllm-vllm_allreduce_use_flashinfer"]
    assert "ITL p50 24 -> 29.5 ms (+23 %, worse)" in f.claim and "at the same load" in f.claim
    # only TTFT got worse: the all-reduce default (ITL, throughput) is listed among the changed defaults, not a cause
    ttft_worse = Observations(bench=[_run("baseline", 24.0, 200.0, 1200.0), _run(None, 24.2, 320.0, 1195.0)])
    found = {f.id: f for f in settings_rule(EvidenceView([_obs_ev(ttft_worse), engine], question=q))}
    assert "changed-default-vllm-vllm_allreduce_use_flashinfer" not in found
    assert "VLLM_ALLREDUCE_USE_FLASHINFER: False -> True" in found["changed-defaults-vllm"].claim
