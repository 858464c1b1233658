"""Every limit, cap and timeout in one settings model, with its default.

Read from `~/.config/investigate/config.toml` (platformdirs), then `INVESTIGATE_*` environment variables, then
flags (passed as init arguments). The whole model is recorded in `RunStarted.settings`.
"""

from __future__ import annotations

import math
import tomllib
from pathlib import Path
from typing import Any

import platformdirs
from pydantic import Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from orchestrator.errors import InputError

APP = "investigate"


def config_path() -> Path:
    return Path(platformdirs.user_config_dir(APP)) / "config.toml"


def state_dir() -> Path:
    return Path(platformdirs.user_state_dir(APP))


class _TomlSource(PydanticBaseSettingsSource):
    """Reads the user's config.toml; a missing file is an empty config."""

    def __init__(self, settings_cls: type[BaseSettings], path: Path | None):
        super().__init__(settings_cls)
        self.path = path

    def get_field_value(self, field, field_name):  # pragma: no cover - unused, __call__ does the work
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        path = self.path or config_path()
        if not path.is_file():
            return {}
        try:
            return tomllib.loads(path.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ValueError(f"config file {path} is not valid TOML ({exc}); fix or remove it") from exc
        except OSError as exc:
            raise ValueError(f"config file {path} cannot be read ({exc.strerror or exc}); fix or remove it") from exc


class Settings(BaseSettings):
    """Limits and defaults of a run."""

    model_config = SettingsConfigDict(env_prefix="INVESTIGATE_", extra="forbid")

    # model backends
    anthropic_api_key: SecretStr | None = None
    """API key from the config file or INVESTIGATE_ANTHROPIC_API_KEY; ANTHROPIC_API_KEY is read as the SDK does."""
    anthropic_base_url: str | None = None
    """Messages API base URL override; ANTHROPIC_BASE_URL is read as the SDK does."""
    lead_model: str = "claude-opus-5-5"
    """Default model of the lead agent (anthropic backend)."""
    subagent_model: str = "claude-sonnet-5-5"
    """Default model of subagents (anthropic backend)."""
    max_tokens: int = 8192
    """max_tokens per model call."""
    temperature: float | None = None
    """Sampling temperature; None leaves the API default."""
    anthropic_max_retries: int = 4
    """Retries the SDK makes per call, on top of which the shared rate gate waits."""
    rate_gate_max_wait_s: float = 60.0
    """Cap on one shared back-off wait after a 429/529."""
    rate_gate_base_s: float = 1.0
    """First back-off step after a 429/529 without retry-after (doubles per consecutive trip, jittered, capped)."""
    model_timeout_s: float = 300.0
    """Timeout of one model HTTP request."""
    run_budget_tokens: int | None = None
    """Run-wide token budget across all agents (None: none)."""
    run_budget_usd: float | None = None
    """Run-wide cost budget in dollars (None: none)."""
    prices: dict[str, dict[str, float]] = Field(default_factory=dict)
    """Price overrides per model id: {input, output, cache_read, cache_write} dollars per million tokens."""
    web_search: bool = False
    """Enable the server-side web search tool (accounts that have it)."""
    web_fetch_server: bool = False
    """Enable the server-side web fetch tool (accounts that have it)."""

    # agent limits (defaults; agent definitions override)
    max_turns: int = 12
    """Default turn cap per agent."""
    agent_timeout_s: float = 600.0
    """Default wall-time limit per agent."""
    max_tokens_budget: int = 400_000
    """Default token budget per agent."""
    final_turn_reserve_s: float = 20.0
    """Seconds of an agent's wall time kept back for its "report what you have" turn."""

    # tools
    tool_timeout_s: float = 120.0
    """Default per-call tool timeout."""
    tool_output_chars: int = 20_000
    """Cap on the text one tool call returns to a model (head and tail kept)."""
    excerpt_chars: int = 400
    """Length of evidence excerpts shown in diagnoses."""

    # hosts
    command_timeout_s: float = 60.0
    """Default timeout of one command on a host."""
    command_output_bytes: int = 4_000_000
    """Cap on one command's stdout (and separately stderr)."""
    file_max_bytes: int = 4_000_000
    """Cap on one file read."""
    ssh_max_channels: int = 8
    """Channels open at once per SSH connection."""
    ssh_connect_timeout_s: float = 15.0
    """TCP + handshake + auth timeout."""
    ssh_keepalive_s: float = 15.0
    """SSH keepalive interval."""
    hosts_in_flight: int = Field(default=16, ge=1)
    """Hosts probed at once in a multi-host run (connections opened and commands in flight); the rest wait."""
    power_sample_s: float = 2.0
    """How long the power and clock sampler watches the GPUs (2 s: four readings at the default 0.5 s interval; it
    is the longest of the read-only probes, so it sets an offline investigation's wall time)."""
    account_sample_s: float = Field(default=2.0, gt=0, le=60)
    """The resource account's sampling window (prongs/resource_account/probe.py): GPUs, threads, cgroup and host counters are read at
    both ends of it. It starts with the other prefetched probes, so it overlaps the investigation (CLI --sample-s).
    2 s, as long as the power watch it runs beside: on a real H200 box a 3 s window added 1.5 s to a 1.8 s offline
    investigation (bench/device/round5_run.sh), the power watch being the run's floor before."""
    prefetch_probes: bool = True
    """Start the read-only probes the agents may call as soon as the host is connected (probes/session.py)."""

    # fetch
    fetch_max_bytes: int = 2_000_000
    """Cap on one fetched response body."""
    fetch_timeout_s: float = 20.0
    """Total time for one fetch."""
    fetch_allow_private: bool = False
    """Allow loopback, link-local and private addresses in fetch (off: refused, redirects included)."""
    fetch_allow_hosts: list[str] = Field(default_factory=list)
    """Host names or CIDR networks fetch may reach although they are not public (e.g. an internal docs mirror)."""

    # measurement probes
    gemm_budget_s: float = 60.0
    """Time budget of the GEMM probe."""
    comm_budget_s: float = 60.0
    """Time budget of the all-reduce probe."""
    measure_wait_s: float = 0.0
    """How long a measurement probe waits for another process to leave its GPUs before it measures anyway and marks
    its figures as taken on a shared GPU (`--measure-wait`; 0: do not wait)."""

    @field_validator("*", mode="after")
    @classmethod
    def _in_domain(cls, v: Any, info: Any) -> Any:
        """Every number finite and not negative; timeouts, caps and counts positive; nothing absurdly large."""
        return _check_number(info.field_name, v)

    @classmethod
    def settings_customise_sources(cls, settings_cls, init_settings, env_settings, dotenv_settings, file_secret_settings):
        return (init_settings, env_settings, _TomlSource(settings_cls, None))


_MAY_BE_ZERO = {"temperature", "anthropic_max_retries", "final_turn_reserve_s", "run_budget_usd", "run_budget_tokens",
                "measure_wait_s"}
_LARGEST = 1e12
"""Above any sane cap or budget; below what overflows a timer (1e308 seconds) or an allocation."""
_LONGEST_S = 7 * 24 * 3600.0
"""No timeout, wait or budget of this tool needs more than a week."""


def _check_number(name: str, v: Any) -> Any:
    if isinstance(v, dict):  # prices: {model: {input: $/Mtok, ...}}
        for inner in v.values():
            _check_number(name, inner)
        return v
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return v
    if isinstance(v, float) and not math.isfinite(v):
        raise ValueError("must be a finite number")
    if v < 0:
        raise ValueError("must not be negative")
    if v == 0 and name not in _MAY_BE_ZERO and name != "prices":
        raise ValueError("must be more than 0")
    if name.endswith("_s") and v > _LONGEST_S:
        raise ValueError(f"must be at most {_LONGEST_S:,.0f} seconds (a week)")
    if v > _LARGEST:
        raise ValueError(f"must be at most {_LARGEST:,.0f}")
    if name == "temperature" and v > 2:
        raise ValueError("must be between 0 and 2")
    return v


def _short(text: object, limit: int = 60) -> str:
    s = " ".join(str(text).split())
    return s if len(s) <= limit else f"{s[:limit]}… ({len(s):,} characters)"


NOT_SETTINGS = frozenset({
    "INVESTIGATE_AGENTS_DIR",            # extra agent-definition folders (orchestrator/agentdefs.py)
    "INVESTIGATE_ALLOW_MODEL_REQUESTS",  # the kill switch for model requests (orchestrator/models/base.py)
    "INVESTIGATE_STRICT_RULES",          # a failing rule raises instead of becoming a gap (tests)
    "INVESTIGATE_STAGED_TAG",            # the staged test hosts' process tag (probes/scripts/discover.py)
    "INVESTIGATE_NODE_ROOT",             # the node probe's file-system root (probes/scripts/node.py)
    "INVESTIGATE_TEST_SSHD",             # the sshd binary of the test suite (tests/support/sshd.py)
    "INVESTIGATE_RECORD_SEED_INSIDE",    # scripts/record_seed.py inside its namespaces
    "INVESTIGATE_RESIDUAL",              # the test suite runs the residual scenario cases (tests/scenarios/harness.py)
    "INVESTIGATE_RESIDUAL_STRICT",       # ...and holds them to passing
    "INVESTIGATE_CASE_DUMP",             # the scenario harness writes each case's evidence here
    "INVESTIGATE_RANKED_RECORD",         # the scenario scorecard records the ranked causes
})
"""`INVESTIGATE_*` environment variables that are not settings: every other one must name a setting, as every key of
the config file must (a misspelt `INVESTIGATE_MAX_TURN=3` was silently ignored). Add yours here."""


def _unknown_environment() -> str | None:
    """The first `INVESTIGATE_*` variable of the environment that names no setting, with the closest setting."""
    import difflib
    import os

    known = {f"INVESTIGATE_{name.upper()}" for name in Settings.model_fields}
    for var in sorted(os.environ):
        if var.upper().startswith("INVESTIGATE_") and var.upper() not in known and var.upper() not in NOT_SETTINGS:
            near = difflib.get_close_matches(var.upper(), sorted(known), n=1, cutoff=0.75)
            hint = f" (did you mean {near[0]}?)" if near else ""
            return f"unknown setting {_short(var)} in the environment{hint}; unset it or name a setting"
    return None


def load_settings(**overrides: Any) -> Settings:
    """Settings from file, environment and the given overrides (None values are ignored).

    A bad value, an unknown key or an unknown `INVESTIGATE_*` variable raises InputError: one line naming the
    setting and where to fix it.
    """
    if (unknown := _unknown_environment()) is not None:
        raise InputError(unknown)
    try:
        return Settings(**{k: v for k, v in overrides.items() if v is not None})
    except ValidationError as exc:
        err = exc.errors()[0]
        name = ".".join(_short(x) for x in err["loc"]) or "settings"
        top = _short(err["loc"][0]).upper() if err["loc"] else name
        if err["type"] == "extra_forbidden":
            raise InputError(f"unknown setting {name}; remove it from {config_path()} (or the INVESTIGATE_ "
                             "environment)") from None
        kind = err["type"]
        msg = ("must be a whole number" if kind.startswith("int_") else "must be a number" if kind.startswith("float_")
               else "must be true or false" if kind.startswith("bool_") else err["msg"].removeprefix("Value error, "))
        value = err.get("input")
        shown = "" if isinstance(value, (dict, list)) or value is None else f" = {_short(value)}"
        raise InputError(f"invalid setting {name}{shown}: {msg}; fix it in {config_path()} or "
                         f"INVESTIGATE_{top}") from None
