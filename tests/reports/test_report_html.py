"""The HTML report: what a person sees in a real browser, and the pure pieces behind it."""

from __future__ import annotations

import re
import struct

import pytest

from orchestrator.diagnosis import Diagnosis, Number
from orchestrator.analysis.roof_from_numbers import find_roof
from orchestrator.render.html import (
    anchor,
    diagnosis_from_events,
    evidence_entries,
    render_html,
    roofline_svg,
)
from orchestrator.render.timeline import build_timeline
from reports import browser
from reports.sample import HOSTILE, sample_diagnosis
from reports.synth import fanout_run, read_jsonl, write_jsonl

needs_browser = pytest.mark.skipif(not browser.available(), reason="needs /usr/bin/chromium (CI installs it)")
URL_ATTR = re.compile(r"^\s*(?:https?:)?//", re.I)


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    """One hostile report rendered once by Chromium: (html file, serialized DOM, events, diagnosis)."""
    tmp = tmp_path_factory.mktemp("report")
    d = sample_diagnosis(hostile=True)
    events = fanout_run(n_sub=4, diagnosis=d.model_dump())
    page = tmp / "report.html"
    page.write_text(render_html(d, events), encoding="utf-8")
    dom = browser.dump_dom(page, tmp / "profile") if browser.available() else ""
    return page, dom, events, d


@needs_browser
@pytest.mark.browser
def test_browser_shows_the_verdict_bound_and_ranked_causes(rendered):
    _, dom, _, d = rendered
    idx = browser.DomIndex(dom)
    verdict = idx.find(id="verdict")
    assert len(verdict) == 1
    assert " ".join(verdict[0].text.split()) == " ".join(d.verdict.split())
    causes = idx.find("ol", "causes")[0]
    items = [e for e in idx.elements if e.tag == "li" and "ol" in e.parents]
    assert [c.title in i.text for c, i in zip(d.causes, items)] == [True, True]
    assert "bound: memory" in dom and causes is not None


@needs_browser
@pytest.mark.browser
def test_every_evidence_link_lands_on_an_entry_with_agent_tool_and_excerpt(rendered):
    _, dom, _, d = rendered
    idx = browser.DomIndex(dom)
    links = idx.find("a", "ev")
    assert {a.text for a in links} >= {"ev-2.1", "ev-3.2", "ev-4.1"}
    ids = {e.attrs["id"] for e in idx.elements if "id" in e.attrs}
    for a in links:
        assert a.attrs["href"].startswith("#") and a.attrs["href"][1:] in ids, a.attrs["href"]
    entry = idx.find("dt", id="ev-3.2")[0]
    dd = idx.elements[idx.elements.index(entry) + 1]
    assert dd.tag == "dd" and "autotune-inspection-3" in dd.text and "tactic=-1" in dd.text


@needs_browser
@pytest.mark.browser
def test_svg_timeline_draws_one_bar_per_agent(rendered):
    _, dom, events, _ = rendered
    idx = browser.DomIndex(dom)
    bars = idx.find("rect", "agent-bar")
    assert all("svg" in b.parents for b in bars)
    tl = build_timeline(events)
    assert [b.attrs["data-agent"] for b in bars] == [a.agent_id for a in tl.agents]
    assert len(bars) == 5


@needs_browser
@pytest.mark.browser
def test_roofline_chart_is_drawn_from_gemm_numbers(rendered):
    _, dom, _, _ = rendered
    idx = browser.DomIndex(dom)
    assert len(idx.find("svg", "roofline")) == 1
    assert len(idx.find("polyline", "roof")) == 1
    assert len(idx.find("circle", "achieved")) == 1 and len(idx.find("circle", "attainable")) == 1


@needs_browser
@pytest.mark.browser
def test_page_loads_nothing_external_and_runs_no_injected_markup(rendered):
    _, dom, _, _ = rendered
    idx = browser.DomIndex(dom)
    for el in idx.elements:
        for attr in ("src", "href", "xlink:href", "action", "data", "poster"):
            assert not URL_ATTR.match(el.attrs.get(attr, "")), (el.tag, attr, el.attrs[attr])
    assert not idx.find("script") and not idx.find("img") and not idx.find("link") and not idx.find("iframe")
    assert "url(" not in dom and "@import" not in dom
    # the hostile excerpt is shown as text, where a person reads it
    entry = idx.find("dt", id="ev-2.1")[0]
    dd = idx.elements[idx.elements.index(entry) + 1]
    assert HOSTILE in " ".join(dd.text.split())


@needs_browser
@pytest.mark.browser
def test_screenshot_of_the_report_is_a_real_picture(rendered, tmp_path):
    page, _, _, _ = rendered
    blank = tmp_path / "blank.html"
    blank.write_text("<!DOCTYPE html><html><body></body></html>", encoding="utf-8")
    png = browser.screenshot(page, tmp_path / "report.png", tmp_path / "profile")
    empty = browser.screenshot(blank, tmp_path / "blank.png", tmp_path / "profile")
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert (width, height) == (1000, 2400)
    assert len(data) > 10 * len(empty.read_bytes()) and len(data) > 50_000


def test_all_text_is_escaped():
    out = render_html(sample_diagnosis(hostile=True), None)
    assert "<script>" not in out and "<img" not in out
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in out


def test_cited_ids_missing_from_the_diagnosis_get_entries_from_the_transcript_or_a_placeholder():
    d = sample_diagnosis()
    d.evidence.pop("ev-3.2")
    d.evidence.pop("ev-4.1")
    events = fanout_run(n_sub=3)  # records ev-3.1, ev-3.2 (agent sub2-2) among others
    ev = evidence_entries(d, events)
    assert ev["ev-3.2"].agent == "sub2-2" and ev["ev-3.2"].tool == "shell" and ev["ev-3.2"].host == "gpu-box"
    assert ev["ev-4.1"].agent == "sub3-3"
    ev = evidence_entries(d, None)
    assert ev["ev-4.1"].excerpt == "(not recorded in this run)"
    out = render_html(d, None)
    assert 'href="#ev-4.1"' in out and 'id="ev-4.1"' in out


def test_odd_evidence_ids_get_safe_anchors():
    assert anchor("ev-2.1") == "ev-2.1"
    odd = anchor('ev-1" onmouseover="x')
    assert re.fullmatch(r"[A-Za-z0-9_.:-]+", odd) and odd.startswith("ev-x")


def test_roof_needs_two_of_compute_memory_and_ridge():
    def n(name, value, unit, peak=None):
        return Number(name=name, value=value, unit=unit, peak=peak, source="k")

    assert find_roof([n("GEMM throughput", 50, "TFLOPS", 1979)]) is None
    assert find_roof([n("tokens", 900, "tok/s", 2000), n("power", 300, "W", 600)]) is None
    r = find_roof([n("ridge point", 1100, "FLOP/B"), n("bandwidth", 1.2, "TB/s", 1.792)])
    assert r.memory == pytest.approx(1.792e12) and r.compute == pytest.approx(1100 * 1.792e12)
    r = find_roof([n("compute", 2, "PFLOP/s", 2), n("arithmetic intensity", 3.56, "FLOP/byte", 1100)])
    assert r.compute == pytest.approx(2e15) and r.ridge == pytest.approx(1100)
    assert r.points == [("arithmetic intensity", 3.56)]
    r = find_roof([n("HBM", 3000, "GiB/s", 4470), n("c", 900, "TFLOP/s", 989)])
    assert r.memory == pytest.approx(4470 * 1024**3)


def test_no_roofline_without_gemm_numbers():
    d = sample_diagnosis()
    d.numbers = [n for n in d.numbers if n.unit == "W"]
    assert 'class="roofline"' not in render_html(d, None)


def test_report_from_a_transcript_file_uses_the_submitted_diagnosis(tmp_path):
    d = sample_diagnosis()
    path = write_jsonl(tmp_path / "run.jsonl", fanout_run(n_sub=2, diagnosis=d.model_dump()))
    events = read_jsonl(path)
    assert diagnosis_from_events(events) == d
    out = render_html(diagnosis_from_events(events), events)  # what `investigate report` writes
    assert out.count('class="agent-bar"') == 3


def test_report_of_a_run_without_diagnosis_says_so_and_lists_unfinished_agents():
    events = fanout_run(n_sub=2, interrupted=True)
    d = diagnosis_from_events(events)
    assert isinstance(d, Diagnosis) and d.verdict.startswith("No diagnosis was submitted")
    assert {g.what for g in d.gaps} == {"lead", "sub1-1", "sub2-2"}
    assert "No diagnosis was submitted" in render_html(d, events)


def test_roof_from_spec_sheet_numbers_picks_the_ceiling_that_matches_the_ridge():
    # the shapes orchestrator/analysis/rules.py writes: spec peaks without `peak`, intensity with peak = ridge
    def n(name, value, unit, source, peak=None):
        return Number(name=name, value=value, unit=unit, peak=peak, source=source)

    numbers = [
        n("dense FP4 tensor peak", 2000, "TFLOPS", "knowledge: topcpu.net"),
        n("dense FP8 tensor peak", 1000, "TFLOPS", "knowledge: topcpu.net"),
        n("memory bandwidth", 1792, "GB/s", "knowledge: topcpu.net"),
        n("MoE GEMM arithmetic intensity", 28.5, "FLOP/B", "ev-3.1", peak=1116),
        n("implied expert-weight bandwidth", 640, "GB/s", "ev-3.1", peak=1792),
        n("throughput (tp8)", 2800, "tok/s", "ev-3.1", peak=9000),
    ]
    r = find_roof(numbers)
    assert r.compute == pytest.approx(2000e12)  # FP4: 2000 TF / 1.792 TB/s = 1116 FLOP/B
    assert r.memory == pytest.approx(1792e9) and r.achieved_bw == pytest.approx(640e9)
    assert r.achieved_flops is None  # spec peaks are ceilings, not measurements
    assert r.other_ceilings == [("dense FP8 tensor peak", pytest.approx(1000e12))]
    d = sample_diagnosis()
    d.numbers = numbers
    out = render_html(d, None)
    assert out.count('class="roof"') == 1 and out.count('class="roof-other"') == 1
    assert out.count('class="achieved"') == 1  # 640 GB/s x 28.5 FLOP/B


def test_a_negative_ceiling_is_no_ceiling():
    """A model-written number with a negative peak (nothing checks its sign) once made the ridge negative and the
    HTML report died in math.log."""
    spec = Number(name="H200 dense FP8 (spec sheet)", value=1979, unit="TFLOP/s", source="knowledge: gpus.yaml")
    bw = Number(name="HBM bandwidth", value=3.1, unit="TB/s", peak=4.8, source="ev-1.1")
    odd = Number(name="arithmetic intensity", value=3.5, unit="FLOP/B", peak=-1.0, source="ev-1.2")
    r = find_roof([spec, bw, odd])
    assert r is not None and r.ridge > 0 and r.points == [("arithmetic intensity", 3.5)]
    roofline_svg(r)  # draws
