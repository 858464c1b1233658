"""Named, append-only upgrade steps for transcripts written with an older `schema_version`.

Each step takes the header and the (line number, record) pairs of version N and returns them as version N+1.
Never edit a step once released: add a new one.
"""

from __future__ import annotations

from typing import Any, Callable

Records = list[tuple[int, dict[str, Any]]]
Step = Callable[[dict[str, Any], Records], tuple[dict[str, Any], Records]]


def v1_to_v2_usage_names_and_untrusted(header: dict[str, Any], records: Records) -> tuple[dict[str, Any], Records]:
    """v1 used the Messages API's usage names and had no `untrusted` flag on tool results.

    Usage: cache_read_input_tokens -> cache_read_tokens, cache_creation_input_tokens -> cache_write_tokens.
    ToolResult: host-derived tools (anything with a host) are marked untrusted, as v2 records them.
    """

    def fix_usage(u: Any) -> Any:
        if isinstance(u, dict):
            if "cache_read_input_tokens" in u:
                u["cache_read_tokens"] = u.pop("cache_read_input_tokens")
            if "cache_creation_input_tokens" in u:
                u["cache_write_tokens"] = u.pop("cache_creation_input_tokens")
        return u

    out: Records = []
    for n, rec in records:
        rec = dict(rec)
        if "usage" in rec:
            rec["usage"] = fix_usage(rec["usage"])
        if isinstance(rec.get("response"), dict) and "usage" in rec["response"]:
            rec["response"] = {**rec["response"], "usage": fix_usage(rec["response"]["usage"])}
        if isinstance(rec.get("usage_by_agent"), dict):
            rec["usage_by_agent"] = {k: fix_usage(v) for k, v in rec["usage_by_agent"].items()}
        if rec.get("type") == "tool_result" and "untrusted" not in rec:
            rec["untrusted"] = bool(rec.get("host"))
        out.append((n, rec))
    return {**header, "schema_version": 2}, out


STEPS: dict[int, Step] = {1: v1_to_v2_usage_names_and_untrusted}
"""Step that upgrades FROM the key version."""


def upgrade(version: int, header: dict[str, Any], records: Records) -> tuple[dict[str, Any], Records]:
    from orchestrator.events import SCHEMA_VERSION

    while version < SCHEMA_VERSION:
        step = STEPS.get(version)
        if step is None:
            raise ValueError(f"no upgrade step from transcript schema_version {version}")
        header, records = step(header, records)
        version += 1
    return header, records
