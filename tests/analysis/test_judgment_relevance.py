"""Judgment (issue 24): the question's symptom, what each finding can explain, also noticed, the bound and the
first cause agreeing, at most five causes, and the real H200's ECC record read as history."""

from __future__ import annotations

import json
import re

import pytest

from orchestrator.analysis import relevance
from orchestrator.analysis.evidence_view import EvidenceView
from orchestrator.analysis.signals import catalog_findings
from orchestrator.analysis.synthesis import MAX_CAUSES, _agree_with_bound, synthesize
from orchestrator.diagnosis import Diagnosis, Noticed, SubmittedDiagnosis
from orchestrator.evidence import Evidence
from orchestrator.findings import Finding
from orchestrator.prongs.node_health.probe import health_from_output
from orchestrator.render.diagnosis import to_markdown
from orchestrator.render.html import render_html
from test_judgment_preconditions import realbox_node


@pytest.mark.parametrize("question,symptoms", [
    ("why is FP8 slow at small batch?", {"throughput"}),
    ("Decode latency on our H200 vLLM server doubled this afternoon without a deploy. Why?", {"itl", "regression"}),
    ("why is TTFT on long prompts high on our TGI server?", {"ttft"}),
    ("why does our vLLM pod take minutes to become ready after every restart?", {"startup"}),
    ("vLLM refuses to start with --tensor-parallel-size 8 on this H200 node since this morning. What happened?",
     {"errors"}),
    ("Is anything wrong with this H200 node? Throughput looks fine but we want to be sure before a launch.",
     {"errors"}),
    ("how many GPUs do we need to serve this at $2 per million tokens?", {"cost"}),
    ("Power limits we set on this A100 box keep reverting. Why?", {"regression"}),
    ("anything to tune on our SGLang server?", set()),
])
def test_the_question_names_its_symptom(question, symptoms):
    assert set(relevance.asked(question).symptoms) == symptoms


@pytest.mark.parametrize("question,symptoms", [
    # the complaint is the figure set against a reference; the TTFT is quoted beside it as context
    ("we get 17.2 ms per output token and 0.2 s TTFT at 16 concurrent requests. published numbers are ~4 ms per "
     "token. why are we 4x slower?", {"itl"}),
    ("TTFT is 2 s and ITL 30 ms; published numbers say 10 ms per token. why 3x slower?", {"itl"}),
    ("we get 900 tok/s and TTFT of 300 ms on H100; the vendor claims 2000 tok/s. why 2x slower?", {"throughput"}),
    # a timing named with a complaint of its own stays asked, and so does one without a reference
    ("our TTFT is terrible, about 3 s, and decode is 40 ms per token while published numbers are 20 ms per token. "
     "why 2x slower?", {"itl", "ttft"}),
    ("we get 17.2 ms per output token and 0.2 s TTFT. why so slow?", {"itl", "ttft"}),
])
def test_a_figure_quoted_beside_the_one_compared_is_context(question, symptoms):
    assert set(relevance.asked(question).symptoms) == symptoms


def _f(fid, **kw):
    return Finding(id=fid, claim=f"{fid} claim.", evidence=["ev-1"], **kw)


def test_a_finding_that_cannot_explain_the_symptom_is_not_ranked():
    startup = _f("cache", category="jit-cache", symptoms=["startup"])
    errors = _f("ecc", category="node", symptoms=["errors"])
    asked = relevance.asked("why is decode throughput low?")
    assert not asked.explains(startup) and not asked.explains(errors)
    assert relevance.asked("why does startup take ten minutes?").explains(startup)
    assert relevance.asked("is anything wrong? we see crashes").explains(errors)
    # boilerplate of an architecture only when the question is about kernels
    arch = _f("arch-no-wgmma", category="kernel", rule="arch_vs_peer", symptoms=["throughput"])
    assert not relevance.asked("why does vLLM take long to start?").explains(arch)
    assert not relevance.asked("why is decode throughput low on this box?").explains(arch)
    assert relevance.asked("why is my FP8 GEMM kernel slow?").explains(arch)


def test_the_first_cause_never_contradicts_the_bound():
    compute = _f("power", bound="compute")
    comm = _f("p2p", bound="communication")
    assert _agree_with_bound([compute, comm], "communication")[0] is comm
    assert _agree_with_bound([compute, comm], "compute")[0] is compute
    assert _agree_with_bound([compute, comm], "unknown")[0] is compute


def _ev(node):
    return Evidence(id="ev-1", agent_id="a", tool="node_health", host="h", text="", data=node.model_dump(mode="json"))


def test_real_h200_ecc_history_is_not_a_cause_of_an_fp8_question():
    d = synthesize("why is FP8 slow at small batch?", None, [_ev(realbox_node())], [])
    assert not any("ECC" in c.title or "ECC" in c.explanation for c in d.causes)
    (noticed,) = [a for a in d.also_noticed if "ECC" in a.title]
    assert "none since the driver loaded" in noticed.note and "history, nothing active" in noticed.note
    assert "watch GPU 0" in noticed.note and noticed.evidence == ["ev-1"]
    said = " ".join([d.verdict] + [r.action for r in d.recommendations] + [a.note for a in d.also_noticed])
    assert not re.search(r"\bRMA\b|pending row remap takes effect|nvidia-smi -r", said), said


def test_an_active_ecc_error_is_ranked_for_a_crash_question():
    node = realbox_node({"ecc_errors/volatile/dram_uncorrectable": "2", "ecc_errors/aggregate/dram_uncorrectable": "2"})
    d = synthesize("vLLM on this H200 keeps crashing, why?", None, [_ev(node)], [])
    assert d.causes[0].title == "GPU has active uncorrectable ECC memory errors"
    assert "2 uncorrectable ECC error(s) since the driver loaded (2 in DRAM, 0 in SRAM; 3 over its lifetime" in \
        d.causes[0].explanation


def test_at_most_five_ranked_causes_the_rest_noticed():
    many = [_f(f"c{i}", category="kernel", confidence=0.8 - i / 100, symptoms=["throughput"]) for i in range(8)]
    from orchestrator.analysis import synthesis

    orig = synthesis.collect_findings
    synthesis.collect_findings = lambda *a, **k: many  # type: ignore[assignment]
    try:
        d = synthesize("why is throughput low?", None, [Evidence(id="ev-1", agent_id="a", tool="x", text="x")], [])
    finally:
        synthesis.collect_findings = orig
    assert [c.title for c in d.causes] == [f"c{i}" for i in range(MAX_CAUSES)]
    assert [a.title for a in d.also_noticed] == ["c5", "c6", "c7"]


def test_also_noticed_renders_everywhere_and_old_diagnoses_keep_their_shape():
    d = Diagnosis(question="q", verdict="v", also_noticed=[Noticed(title="GPU has ECC history", note="watch it",
                                                                   evidence=["ev-1"])])
    assert "## Also noticed" in to_markdown(d) and "GPU has ECC history" in to_markdown(d)
    assert 'id="also-noticed"' in render_html(d) and "watch it" in render_html(d)
    assert json.loads(d.model_dump_json())["also_noticed"][0]["note"] == "watch it"
    old = Diagnosis(question="q", verdict="v")
    assert "also_noticed" not in json.loads(old.model_dump_json())  # recorded diagnoses keep their shape
    assert Diagnosis.model_validate({"question": "q", "verdict": "v"}).also_noticed == []
    # the submit_diagnosis tool's schema (and so recorded runs' request fingerprints) does not change
    assert "also_noticed" not in json.dumps(SubmittedDiagnosis.model_json_schema())


def test_a_pcie_link_trained_low_in_a_tp_group_sets_the_communication_bound():
    import xml.etree.ElementTree as ET
    from pathlib import Path

    from orchestrator.probes.scripts._smi import smi_strip_doctype
    from support.stage_node import topo_text

    d = Path(__file__).parent.parent / "node" / "data" / "h200x2"
    root = ET.fromstring(smi_strip_doctype((d / "smi-qx-load.xml").read_text()))
    root.findall("gpu")[1].find("pci/pci_gpu_link_info/link_widths/current_link_width").text = "8x"
    xml = ET.tostring(root, encoding="unicode")

    def finding(**more):
        node = health_from_output({"smi_xml": xml, **more})
        ev = Evidence(id="ev-1", agent_id="a", tool="node_health", host="h", text="", data=node.model_dump(mode="json"))
        (f,) = [f for f in catalog_findings(EvidenceView([ev])) if f.entry == "gpu-pcie-link-downtrained"]
        return f

    # the real pair is on NVLink (NV18): the narrow link carries host traffic, not the TP all-reduce
    nv = finding(nvlink_s=(d / "nvlink-s.txt").read_text(), nvlink_e=(d / "nvlink-e.txt").read_text(),
                 topo=(d / "topo-m.txt").read_text())
    assert nv.bound is None
    # the same GPUs reaching each other over PCIe only: every all-reduce waits on that link
    pcie = finding(topo=topo_text({"count": 2}, 2))
    assert pcie.bound == "communication" and "no NVLink on this host" in pcie.claim


@pytest.mark.parametrize("args,says", [
    (["--measure-wait", "30"], "--measure-wait goes with --measure"),
    (["--measure", "--measure-wait", "-5"], "--measure-wait -5 is out of range; pass 0 to 3600 seconds"),
    (["--measure", "--measure-wait", "99999"], "--measure-wait 99999 is out of range; pass 0 to 3600 seconds"),
])
def test_bad_measure_wait_is_one_line_exit_2_before_the_run(tmp_path, args, says):
    from support.cli import investigate

    transcript = tmp_path / "t.jsonl"
    proc = investigate("why slow", "--offline", *args, "--transcript", transcript, "--no-progress", tmp_path=tmp_path)
    assert proc.returncode == 2 and proc.stderr.strip().count("\n") == 0, proc.stderr
    assert says in proc.stderr and "Traceback" not in proc.stderr
    assert not transcript.exists()


def _fs(id_: str, symptoms: list, **kw) -> Finding:
    return Finding(id=id_, claim=f"{id_} holds.", evidence=["ev-1"], symptoms=symptoms, title=id_, **kw)


def test_an_uncertain_reading_keeps_a_finding_ranked_with_the_symptom_it_explains():
    slow = relevance.asked("why is our box slow?")
    assert slow.uncertain
    prefill = _fs("prefill-step", ["ttft"])
    assert slow.explains(prefill) and not slow.stated(prefill)
    d = synthesize("why is our box slow?", None, [Evidence(id="ev-1", agent_id="a", tool="x", text="")], [])
    assert d.causes == []  # no finding: nothing to keep
    certain = relevance.asked("why is throughput (tok/s) low?")
    assert not certain.uncertain and not certain.explains(prefill)
    assert certain.explains(_fs("decode-step", ["itl"]))  # a slower decode step is lower throughput
    assert not certain.explains(_fs("startup-only", ["startup"]))


def test_a_property_that_is_the_same_before_and_after_cannot_explain_a_regression():
    after = relevance.asked("our Llama-3.3-70B TP4 on H100 dropped from 1900 to 1500 tok/s after maintenance, why?")
    topology = _fs("pcie-allreduce", ["throughput", "itl"], static=True)
    assert "regression" in after.certain and not after.explains(topology)
    assert relevance.asked("why is TP8 slower than TP4 on our L40S box?").explains(topology)


def test_a_throughput_finding_explains_ttft_only_where_requests_queue():
    ttft = relevance.asked("why is TTFT high under load?")
    cap = _fs("batch-cap", ["throughput"])
    view = EvidenceView([Evidence(id="ev-1", agent_id="a", tool="x", text="")], None)
    assert not relevance.with_paths(ttft, view, [cap]).explains(cap)
    queued = relevance.with_paths(ttft, view, [cap, _fs("account-engine-queue", ["ttft"]).model_copy(update={"queue_wait": True})])
    assert queued.explains(cap)
    assert not queued.explains(_fs("other-phase", ["itl", "throughput"], secondary=True))  # context, not a shortfall


def _bench_obs(**kw):
    from orchestrator.observations import Observations

    run = {"format": "client", "label": "load test", "max_concurrency": 64, "output_len": 300,
           "ttft": {"p50": 150.0}, "itl": {"p50": 13.0}, "e2el": {"p50": 4040.0}}
    run.update(kw)
    return Observations.model_validate({"bench": [run]})


def test_a_quoted_term_that_is_a_small_share_of_each_request_is_not_what_is_asked():
    """TTFT 0.15 s quoted beside 13 ms per token and the rate, in 4 s requests: 3.7 % of each request, so what explains
    the TTFT alone cannot explain the request's time or the rate: it is not ranked, and its arithmetic is said."""
    q = "at 256 users we get TTFT ~0.15 s, ~13 ms per token, ~63 requests/s. is the load generator holding us back?"
    a = relevance.asked(q, _bench_obs())
    assert "ttft" not in a.symptoms and {"itl", "throughput"} <= a.symptoms
    (term, words), = a.minor
    assert term == "ttft" and "150 ms is 3.7% of a 4,040 ms request" in words and "(300 - 1) x 13 ms" in words
    prefill = _f("prefill-floor", category="workload", symptoms=["ttft"])
    assert not a.explains(prefill)
    # complained of, it is asked whatever its share
    assert "ttft" in relevance.asked("TTFT is too high at ~0.15 s with ~13 ms per token; why?", _bench_obs()).symptoms
    # a large share (short answers) is asked
    assert "ttft" in relevance.asked(q, _bench_obs(output_len=4, e2el={"p50": 190.0})).symptoms
    # the only term asked stays asked
    assert relevance.asked("TTFT ~0.15 s at 256 users.", _bench_obs()).symptoms == {"ttft"}


def test_a_whole_request_taking_long_reads_as_its_terms():
    """"take over a minute to finish": the request's time, the sum of its TTFT and its decode; with the figures, the
    TTFT's 2 % share leaves the per-token latency."""
    q = "some answers take over a minute to finish, most are under 15 s. is the gateway slowing the long ones down?"
    assert relevance.asked(q).symptoms == {"itl", "ttft"}
    a = relevance.asked(q, _bench_obs(output_len=267, ttft={"p50": 319.0}, itl={"p50": 62.8}, e2el={"p50": 13007.0}))
    assert a.symptoms == {"itl"} and a.minor[0][0] == "ttft"


def test_a_change_named_as_the_fix_being_checked_is_not_a_regression():
    """"after switching to base64 we serve 24,000 embeddings/s; is the network still the limit?": the change is the
    fix whose effect is asked about, nothing got worse; a rate in items per second is throughput."""
    q = ("after switching our indexing job to base64 embeddings, vLLM serves ~24,000 embeddings/s with the GPU ~97% "
         "busy. is the 1 GbE network still what limits us?")
    assert relevance.asked(q).symptoms == {"throughput"}
    # something got worse, or no sign that the change is the fix: a regression, as before
    assert "regression" in relevance.asked("after switching to base64, throughput dropped to 9,000 embeddings/s").symptoms
    assert "regression" in relevance.asked("after moving to the new cluster, TTFT is 2 s").symptoms
    assert "regression" in relevance.asked("since the upgrade from 0.6.3 to 0.7.1 it is still 30 tok/s").symptoms
