"""Rendering: pure functions from models to text (terminal, Markdown, HTML) and the run timeline.

`specs` (spec sheets and rooflines as text), `timeline` (a transcript's agents and tools over time, `show`),
`html` (the self-contained report), `progress` (live progress lines on stderr). The Diagnosis model renders itself
to terminal and Markdown (`orchestrator/diagnosis.py`). Nothing here runs a probe, a model or a host.
"""
