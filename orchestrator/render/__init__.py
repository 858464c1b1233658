"""Rendering: pure functions from models to text (terminal, Markdown, HTML) and the run timeline.

`diagnosis` (the Diagnosis as terminal text and Markdown; `Diagnosis._repr_markdown_` uses it), `summaries` (each
probe model's compact text: what the tools return and `investigate probe` prints), `specs` (spec sheets and rooflines
as text), `timeline` (a transcript's agents and tools over time, `show`), `html` (the self-contained report),
`engine` (the serving engine's configuration table and latency against the roofline floor), `progress` (live progress
lines on stderr). Tools may use `summaries` and `specs`, never the others. Nothing here runs a probe, a model or a
host.
"""
