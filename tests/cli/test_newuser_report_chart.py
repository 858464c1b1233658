"""Issue 14 item 10: the roofline chart's labels and ticks stay inside the chart at every size, checked in headless
Chromium at 1400 px and 800 px wide (and narrower): the browser measures every label of the `report` command's HTML."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from support.cli import ROOT, investigate

CHROMIUM = Path("/usr/bin/chromium")
pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason="needs /usr/bin/chromium (bash .ci/run installs it)")

MEASURE = """<script>
addEventListener('load', () => {
  const out = [];
  document.querySelectorAll('svg.roofline').forEach(svg => {
    const r = svg.getBoundingClientRect();
    svg.querySelectorAll('text').forEach(t => {
      const b = t.getBoundingClientRect();
      out.push({text: t.textContent, left: b.left - r.left, right: r.right - b.right, top: b.top - r.top,
                bottom: r.bottom - b.bottom, width: r.width, cls: t.getAttribute('class') || ''});
    });
  });
  document.body.setAttribute('data-labels', JSON.stringify(out));
});
</script>"""


def _labels(html: Path, width: int, tmp_path: Path) -> list[dict]:
    page = tmp_path / f"measure-{width}.html"
    page.write_text(html.read_text().replace("</body>", MEASURE + "</body>"))
    proc = subprocess.run([str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           f"--user-data-dir={tmp_path / 'profile'}", f"--window-size={width},2000",
                           "--virtual-time-budget=3000", "--dump-dom", page.as_uri()],
                          capture_output=True, text=True, timeout=120)
    marker = 'data-labels="'
    start = proc.stdout.index(marker) + len(marker)
    raw = proc.stdout[start:proc.stdout.index('"', start)]
    import html as h

    return json.loads(h.unescape(raw))


def _assert_inside(labels: list[dict], width: int) -> None:
    assert labels, "no roofline labels measured"
    for lb in labels:
        for side in ("left", "right", "top", "bottom"):
            assert lb[side] >= -0.5, (width, side, lb)


def _stress_report(tmp_path: Path) -> Path:
    """A chart with the hard cases: ridge near the right, a long operating-point name far right, achieved at the axis."""
    from orchestrator.diagnosis import Diagnosis, Number
    from orchestrator.render.html import render_html

    nums = [Number(name="dense FP8 tensor peak", value=4500, unit="TFLOPS", source="knowledge"),
            Number(name="dense BF16 tensor peak", value=2250, unit="TFLOPS", source="knowledge"),
            Number(name="HBM bandwidth", value=8000, unit="GB/s", source="knowledge"),
            Number(name="prefill GEMM arithmetic intensity at batch 8192 tokens (TP8, EP8)", value=8000,
                   unit="FLOP/B", peak=562, source="ev-1"),
            Number(name="GEMM throughput", value=3.1, unit="TFLOPS", source="ev-2")]
    d = Diagnosis(question="q", verdict="v", numbers=nums)
    out = tmp_path / "stress.html"
    out.write_text(render_html(d, None))
    return out


@pytest.mark.parametrize("width", [1400, 800, 420])
def test_roofline_labels_stay_inside_the_chart(tmp_path, width):
    report = tmp_path / "seed.html"
    proc = investigate("report", ROOT / "transcripts" / "seed-rtx-pro-6000-fp4.jsonl", "-o", report, tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    _assert_inside(_labels(report, width, tmp_path), width)
    _assert_inside(_labels(_stress_report(tmp_path), width, tmp_path), width)


def test_roofline_notes_do_not_cover_each_other(tmp_path):
    labels = [lb for lb in _labels(_stress_report(tmp_path), 1400, tmp_path) if "note" in lb["cls"]]
    boxes = [(lb["left"], lb["top"], lb["width"] - lb["right"], lb["top"] + 12) for lb in labels]
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            overlap_x = min(a[2], b[2]) - max(a[0], b[0])
            overlap_y = min(a[3], b[3]) - max(a[1], b[1])
            assert overlap_x <= 1 or overlap_y <= 1, (labels[boxes.index(a)]["text"], labels[boxes.index(b)]["text"])
