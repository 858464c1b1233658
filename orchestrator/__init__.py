"""investigate: why is my LLM inference slow? A lead agent, concurrent subagents, and a diagnosis with evidence."""

from __future__ import annotations

__version__ = "0.1.0"

_API = ("investigate", "investigate_sync", "replay", "replay_sync", "resume", "load_transcript", "InvestigationResult",
        "InputError", "Run", "select_backend")

__all__ = ["__version__", *_API]


def __getattr__(name: str):
    # The library entry points import the whole engine; keep `import orchestrator` cheap for the CLI and probes.
    if name in _API:
        from orchestrator import api

        return getattr(api, name)
    raise AttributeError(f"module 'orchestrator' has no attribute {name!r}")
