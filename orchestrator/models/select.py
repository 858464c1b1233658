"""Which backend a run uses when none is given: Claude when a key is configured, else the offline backend."""

from __future__ import annotations

import os

from orchestrator.models.base import Backend
from orchestrator.errors import InputError
from orchestrator.settings import Settings


def select_backend(*, offline: bool | None, model: str | None, settings: Settings) -> tuple[Backend, str | None]:
    """The anthropic backend when a key is configured (or a model is asked for), else offline with a notice.

    Returns the backend and the notice to record (None when the choice needs no explaining)."""
    from orchestrator.models.offline import OfflineBackend

    key = os.environ.get("ANTHROPIC_API_KEY") or (
        settings.anthropic_api_key.get_secret_value() if settings.anthropic_api_key else None
    )
    if offline:
        return OfflineBackend(), None
    if key:
        from orchestrator.models.anthropic import AnthropicBackend

        return AnthropicBackend(settings, model=model, api_key=key,
                                base_url=os.environ.get("ANTHROPIC_BASE_URL") or settings.anthropic_base_url), None
    if model:
        raise InputError(f"--model {model} needs an API key; set ANTHROPIC_API_KEY or use --offline")
    return OfflineBackend(), "no API key configured: running the offline backend (set ANTHROPIC_API_KEY for Claude)"
