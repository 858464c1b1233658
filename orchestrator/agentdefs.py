"""Agent definitions: Markdown files with YAML front matter (Claude Code's shape plus our keys), loaded as data.

Built-in definitions come from the repo's `agents/` in an editable install and from `orchestrator/_builtin/agents`
in a wheel; user directories (`--agents DIR`, `INVESTIGATE_AGENTS_DIR`) override built-ins of the same name.
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path
from typing import Any, Iterable, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from orchestrator.errors import InputError


class PlanStep(BaseModel):
    """One tool call the offline backend makes; args may hold `{run.FIELD}` placeholders."""

    model_config = ConfigDict(extra="forbid")
    tool: str
    args: dict[str, Any] = Field(default_factory=dict)
    when: str | None = None
    """Optional `run.FIELD`: the step runs only when that input is truthy."""
    foreach: Literal["hosts"] | None = None
    """`hosts`: one call per usable host of a multi-host run, each with `host: NAME` (the calls run concurrently,
    at most `hosts_in_flight` hosts at once); in a one-host run, the one call as written."""
    round: Literal[1, 2] = 1
    """The lead's round the step is made in: 2 for a prong whose results arrive only when the host's sampling windows
    close (see `AgentDef.round`)."""


class AgentDef(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    description: str
    tools: list[str] = Field(default_factory=list)
    model: str = "inherit"
    """Alias (sonnet/opus/haiku), full model id, or `inherit` (the run's default for this role)."""
    max_turns: int | None = None
    timeout_s: float | None = None
    max_tokens_budget: int | None = None
    plan: list[PlanStep] = Field(default_factory=list)
    role: str = "subagent"
    """`lead` or `subagent`."""
    brief: str | None = None
    """A prong agent's brief: the lead's offline plan starts it with this brief (`{run.FIELD}` placeholders filled)
    in the order of `orchestrator.prongs.PRONGS`. None: the lead's plan does not start it (a `general` agent)."""
    joins: str | None = None
    """`run.FIELD`: the prong joins a run only when that input is given (its plan step is left out, and the `task`
    tool does not offer it, otherwise)."""
    round: Literal[1, 2] = 1
    """2: the prong's results arrive only when a sampling window on the host closes (the resource account's, the
    power sampler's: their probes start when the host is connected). The lead's offline plan starts it with the
    second round, beside the steps the first round's evidence calls for, so that the second round runs inside the
    window instead of after it; the lead waits for every step of a round as always."""
    prompt: str = ""
    """The system prompt (the file's body, with `{{include NAME}}` fragments from prompts/ expanded)."""
    source: str = ""
    """File the definition came from."""


class AgentDefError(InputError):
    """A definition file does not fit; the message names the file and the field."""


def _repo_root() -> Path:
    return Path(__file__).resolve().parent.parent


def builtin_dir(kind: str) -> Path:
    """Folder of built-in `agents`, `prompts` or `transcripts`: inside the wheel, else the repo's."""
    packaged = resources.files("orchestrator") / "_builtin" / kind
    if packaged.is_dir():
        return Path(str(packaged))
    return _repo_root() / kind


def load_prompt_fragment(name: str, extra_dirs: list[Path] | None = None) -> str:
    for d in [*(extra_dirs or []), builtin_dir("prompts")]:
        p = Path(d) / f"{name}.md"
        if p.is_file():
            return p.read_text(encoding="utf-8").strip()
    raise AgentDefError(f"prompt fragment {name!r} not found in prompts/")


def _expand(body: str) -> str:
    out = []
    for line in body.splitlines():
        s = line.strip()
        if s.startswith("{{include ") and s.endswith("}}"):
            out.append(load_prompt_fragment(s[len("{{include ") : -2].strip()))
        else:
            out.append(line)
    return "\n".join(out).strip()


MAX_AGENT_FILE_BYTES = 1024 * 1024
"""An agent definition is a prompt and a few keys: the built-in ones are a few KB."""


def parse_agent_file(path: Path) -> AgentDef:
    # bounded like every YAML a user hands us (orchestrator/safeload.py): size checked before reading; an alias bomb,
    # deep nesting, a 4,300+-digit integer or a duplicate key is one line naming the file
    from orchestrator.safeload import SafeLoadError, load_yaml, read_capped

    try:
        text = read_capped(path, what="agent definition", max_bytes=MAX_AGENT_FILE_BYTES)
    except SafeLoadError as exc:
        raise AgentDefError(f"{path}: {exc}; an agent definition is a Markdown file of at most "
                            f"{MAX_AGENT_FILE_BYTES:,} bytes") from None
    if not text.startswith("---"):
        raise AgentDefError(f"{path}: missing YAML front matter (start the file with ---)")
    try:
        _, front, body = text.split("---", 2)
    except ValueError:
        raise AgentDefError(f"{path}: front matter is not closed (end it with a line ---)") from None
    try:
        meta = load_yaml(front, source="front matter", fast=True) or {}
    except SafeLoadError as exc:
        raise AgentDefError(f"{path}: {exc}; fix the front matter between the --- lines") from None
    if not isinstance(meta, dict):
        raise AgentDefError(f"{path}: front matter is not a mapping of keys (name:, description:, tools: ...)")
    if isinstance(meta.get("tools"), str):  # Claude Code allows "a, b, c"
        meta["tools"] = [t.strip() for t in meta["tools"].split(",") if t.strip()]
    try:
        return AgentDef(**meta, prompt=_expand(body), source=str(path))
    except ValidationError as exc:
        err = exc.errors()[0]
        raise AgentDefError(f"{path}: field {'.'.join(map(str, err['loc']))}: {err['msg']}") from None


def user_dirs(extra_dirs: Iterable[str | Path] = ()) -> list[Path]:
    """The user's definition directories in override order: `INVESTIGATE_AGENTS_DIR` (os.pathsep-separated), then
    `--agents DIR`s."""
    env = os.environ.get("INVESTIGATE_AGENTS_DIR", "")
    return [Path(p) for p in env.split(os.pathsep) if p] + [Path(d) for d in extra_dirs]


def load_agents(extra_dirs: Iterable[str | Path] | None = None) -> dict[str, AgentDef]:
    """Built-in definitions, then each user directory in order (later ones override)."""
    dirs: list[Path] = [builtin_dir("agents"), *user_dirs(extra_dirs or ())]
    agents: dict[str, AgentDef] = {}
    for d in dirs:
        if not d.is_dir():
            raise AgentDefError(f"agents directory {d} not found; pass an existing directory to --agents")
        for f in sorted(d.glob("*.md")):
            defn = parse_agent_file(f)
            agents[defn.name] = defn
    if "lead" not in agents:
        raise AgentDefError("no agent named 'lead' among the definitions; the built-in agents/ folder is missing")
    agents["lead"] = with_prong_steps(agents)
    return agents


def with_prong_steps(agents: dict[str, AgentDef]) -> AgentDef:
    """The lead with a `task` step for each agent that carries a `brief`, in the order of the prongs' records
    (`orchestrator.prongs.PRONGS`; agents no record names after them, by name): the standing prongs first, then
    the lead's own steps, then the prongs that join on an input (`joins`), so that what an ordinary run asks and
    the ids of its evidence do not depend on which optional prongs exist. A lead whose own plan starts subagents
    (a user's `lead.md` with `task` steps) keeps its plan as written."""
    from orchestrator.prongs import PRONGS

    lead = agents["lead"]
    if any(s.tool == "task" for s in lead.plan):
        return lead
    order = [p.agent for p in PRONGS if p.agent]
    names = [n for n in order if n in agents] + sorted(n for n in agents if n not in order)
    steps = [PlanStep(tool="task", args={"agent": n, "brief": a.brief}, when=a.joins, round=a.round)
             for n in names if (a := agents[n]).brief and a.role != "lead"]
    if not steps:
        return lead
    plan = [s for s in steps if not s.when] + lead.plan + [s for s in steps if s.when]
    return lead.model_copy(update={"plan": plan})
