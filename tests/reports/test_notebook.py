"""The example notebook runs top to bottom in a real Jupyter kernel and shows what it promises."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

NOTEBOOK = Path(__file__).resolve().parents[2] / "examples" / "investigate.ipynb"


def _outputs(cell) -> tuple[str, dict]:
    text, data = "", {}
    for out in cell.get("outputs", []):
        if out["output_type"] == "stream":
            text += out["text"]
        elif out["output_type"] in ("execute_result", "display_data"):
            data.update(out["data"])
    return text, data


@pytest.mark.slow
def test_example_notebook_runs_an_investigation_and_tabulates_agent_timings(tmp_path):
    import nbclient
    import nbformat

    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbclient.NotebookClient(nb, timeout=180, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    code = [c for c in nb.cells if c.cell_type == "code"]

    ran, _ = _outputs(code[1])
    m = re.match(r"ok - (\d+) events recorded to (\S+)", ran)
    assert m, ran
    transcript_path = Path(m.group(2))
    assert transcript_path.is_file()

    # rich display: the result renders as the HTML report and as Markdown
    _, shown = _outputs(code[2])
    from orchestrator import load_transcript
    from orchestrator.render.html import diagnosis_from_events
    from orchestrator.render.timeline import build_timeline

    transcript = load_transcript(transcript_path)
    verdict = diagnosis_from_events(transcript.events).verdict
    assert "text/html" in shown and 'class="agent-bar"' in shown["text/html"]
    assert "text/markdown" in shown and verdict in shown["text/markdown"]

    # the timings table has one row per agent of the recorded run
    _, table = _outputs(code[3])
    rows = [r for r in table["text/markdown"].splitlines() if r.startswith("| ") and not r.startswith("| agent")]
    agents = [a.agent_id for a in build_timeline(transcript.events).agents]
    assert [r.split("|")[1].strip() for r in rows] == agents
    assert len(agents) >= 2  # a lead and at least one subagent

    summary, _ = _outputs(code[4])
    assert "agents, at most" in summary and "slowest agent:" in summary

    saved, _ = _outputs(code[5])
    report = Path(saved.split()[0])
    assert report.is_file() and "<svg" in report.read_text(encoding="utf-8")
