"""The prong records (orchestrator/prongs/): each part they name exists, and every composition point takes what
PRONGS hands it: the tool registry, the rules, the report sections, the input checks and the lead's plan."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.agentdefs import AgentDef, PlanStep, load_agents, with_prong_steps
from orchestrator.errors import InputError
from orchestrator.prong import Prong, load
from orchestrator.prongs import PRONGS, check_inputs, sections

ROOT = Path(__file__).resolve().parents[2]


def test_every_part_a_prong_names_exists():
    for p in PRONGS:
        for field in ("tools", "probe_models", "rules"):
            assert all(x is not None for x in p.parts(field)), (p.name, field)
        for renderer in ("html", "markdown", "terminal"):
            if getattr(p, renderer):
                assert callable(p.section(renderer)), (p.name, renderer)
        if p.check:
            assert callable(load(p.check))


def test_a_bad_reference_names_itself():
    with pytest.raises(ValueError, match="not 'package.module:attribute'"):
        load("orchestrator.prongs.trace.tool.TraceAnalysis")


def test_each_prong_folder_has_one_record_in_prongs():
    folders = sorted(d.name for d in (ROOT / "orchestrator" / "prongs").iterdir()
                     if d.is_dir() and (d / "__init__.py").exists())
    assert sorted(p.name for p in PRONGS) == folders
    assert len({p.name for p in PRONGS}) == len(PRONGS)


def test_the_agent_a_prong_names_is_a_built_in_definition():
    agents = load_agents()
    for p in PRONGS:
        if p.agent:
            assert p.agent in agents, p.name


def test_composition_points_take_each_prongs_parts():
    from orchestrator.analysis.rules import RULES
    from orchestrator.tools.registry import default_registry

    reg = default_registry()
    for p in PRONGS:
        for tool in p.parts("tools"):
            assert isinstance(reg.get(tool.name), tool), (p.name, tool.name)
        for rule in p.parts("rules"):
            assert rule in RULES, (p.name, rule)
    assert len(sections("html")) == sum(1 for p in PRONGS if p.html)


def test_a_prongs_input_check_runs_before_any_work(tmp_path):
    with pytest.raises(InputError, match="--baseline-trace needs --trace"):
        check_inputs(traces=[], baseline_traces=[str(tmp_path / "base.json")])
    with pytest.raises(InputError):
        check_inputs(traces=[str(tmp_path / "missing.json")], baseline_traces=[])
    check_inputs(traces=[], baseline_traces=[])  # nothing given: nothing to check


def _agent(name: str, **kw) -> AgentDef:
    return AgentDef(name=name, description=name, **kw)


def test_lead_plan_puts_standing_prongs_then_its_own_steps_then_joining_prongs():
    order = [p.agent for p in PRONGS if p.agent]
    joining = order[-1]
    agents = {"lead": _agent("lead", role="lead", plan=[PlanStep(tool="observations")]),
              joining: _agent(joining, brief="look at {run.traces}", joins="run.traces"),
              "zz-user": _agent("zz-user", brief="a user's own prong"),
              "general": _agent("general")}
    plan = with_prong_steps(agents).plan
    assert [(s.tool, s.args.get("agent"), s.when) for s in plan] == [
        ("task", "zz-user", None), ("observations", None, None), ("task", joining, "run.traces")]


def test_a_lead_that_starts_its_own_subagents_keeps_its_plan_as_written():
    own = [PlanStep(tool="task", args={"agent": "q", "brief": "x"})]
    agents = {"lead": _agent("lead", role="lead", plan=own), "p": _agent("p", brief="y"), "q": _agent("q")}
    assert with_prong_steps(agents).plan == own


def test_task_tool_does_not_offer_a_prong_whose_input_was_not_given():
    from orchestrator.inputs import RunInputs
    from orchestrator.tools.task import TaskTool

    class Shape:
        def __init__(self, inputs):
            self.inputs = inputs
            self.agents = {"lead": _agent("lead", role="lead"), "always": _agent("always"),
                           "traced": _agent("traced", joins="run.traces")}

    tool = TaskTool()
    enum = lambda inputs: tool.prepare(tool.spec(), Shape(inputs)).input_schema["properties"]["agent"]["enum"]
    assert enum(RunInputs(question="q")) == ["always"]
    assert enum(RunInputs(question="q", traces=["t.json"])) == ["always", "traced"]


def test_a_prong_record_is_data_only():
    """Reading the records imports none of their parts (a command that needs no prong pays for none)."""
    import subprocess
    import sys

    code = ("import sys, orchestrator.prongs as p; "
            "print(sorted(m for m in sys.modules if m.startswith('orchestrator.prongs.') and m.count('.') > 2))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
    assert all(isinstance(p, Prong) for p in PRONGS)


async def test_a_prongs_follow_up_is_the_offline_leads_second_round(monkeypatch):
    """The lead's first round finds something; the prong's follow-up starts an agent to chase it; the diagnosis
    comes after both rounds."""
    from support.core import core_registry

    from orchestrator import prongs
    from orchestrator.inputs import RunInputs
    from orchestrator.events import AgentStarted, ToolCall
    from orchestrator.models.offline import OfflineBackend
    from orchestrator.run import Run
    from orchestrator.settings import Settings

    chase = Prong(name="chase", follow_up="support.core:chase_first_sleep")
    monkeypatch.setattr(prongs, "PRONGS", (*prongs.PRONGS, chase))
    agents = {"lead": _agent("lead", role="lead", tools=["task", "sleep"],
                             plan=[PlanStep(tool="sleep", args={"label": "first"})]),
              "chaser": _agent("chaser", tools=["sleep"], plan=[PlanStep(tool="sleep", args={"label": "chased"})])}

    async def run(agents):
        async with Run(inputs=RunInputs(question="q"), settings=Settings(prefetch_probes=False),
                       backend=OfflineBackend(), agents=agents, registry=core_registry(), transcript=False) as r:
            await r.investigate()
        return r.result

    result = await run(agents)
    assert result.status == "ok"
    assert [e.name for e in result.events if isinstance(e, AgentStarted)] == ["lead", "chaser"]
    lead_calls = [(e.turn, e.tool) for e in result.events if isinstance(e, ToolCall) and e.agent_id == "lead"]
    assert lead_calls == [(1, "sleep"), (2, "task"), (3, "submit_diagnosis")]
    # nothing to chase: no second round, the lead submits at its second turn as before
    quiet = {**agents, "lead": replace_plan(agents["lead"], "nothing")}
    result = await run(quiet)
    assert [e.name for e in result.events if isinstance(e, AgentStarted)] == ["lead"]


async def test_a_prong_that_waits_for_a_sampling_window_joins_the_second_round():
    """A prong whose results arrive when a window closes (`round: 2`) is started with the lead's second round, beside
    what the first round calls for, so that the second round runs inside the window; with nothing to chase it still
    runs, in the second round, and the lead submits at its third turn."""
    from support.core import core_registry

    from orchestrator.events import AgentStarted, ToolCall
    from orchestrator.inputs import RunInputs
    from orchestrator.models.offline import OfflineBackend
    from orchestrator.run import Run
    from orchestrator.settings import Settings

    agents = {"lead": _agent("lead", role="lead", tools=["task", "sleep"],
                             plan=[PlanStep(tool="sleep", args={"label": "nothing"})]),
              "quick": _agent("quick", tools=["sleep"], brief="look", plan=[PlanStep(tool="sleep", args={"label": "q"})]),
              "window": _agent("window", tools=["sleep"], brief="sample", round=2,
                               plan=[PlanStep(tool="sleep", args={"label": "w"})])}
    lead = with_prong_steps(agents)
    assert [(s.args.get("agent"), s.round) for s in lead.plan if s.tool == "task"] == [("quick", 1), ("window", 2)]
    async with Run(inputs=RunInputs(question="q"), settings=Settings(prefetch_probes=False),
                   backend=OfflineBackend(), agents={**agents, "lead": lead}, registry=core_registry(),
                   transcript=False) as r:
        await r.investigate()
    events = r.result.events
    assert [e.name for e in events if isinstance(e, AgentStarted)] == ["lead", "quick", "window"]
    lead_calls = [(e.turn, e.tool, e.args.get("agent")) for e in events
                  if isinstance(e, ToolCall) and e.agent_id == "lead"]
    assert lead_calls == [(1, "task", "quick"), (1, "sleep", None), (2, "task", "window"),
                          (3, "submit_diagnosis", None)]


def replace_plan(lead: AgentDef, label: str) -> AgentDef:
    return lead.model_copy(update={"plan": [PlanStep(tool="sleep", args={"label": label})]})


# --- no finding id compared as a string outside its own prong ------------------------------------------------------

PACKAGE = ROOT / "orchestrator"


def _docstrings(tree) -> set[int]:
    import ast

    return {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)) and n.body
            and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}


def finding_ids(source: str) -> set[str]:
    """The ids a module gives the findings it makes: `Finding(id="x")` as "x", `Finding(id=f"x-{...}")` as "x-*"."""
    import ast

    out = set()
    for n in ast.walk(ast.parse(source)):
        if isinstance(n, ast.Call) and getattr(n.func, "id", getattr(n.func, "attr", None)) == "Finding":
            for k in n.keywords:
                v = k.value
                if k.arg == "id" and isinstance(v, ast.Attribute) and v.attr == "lower":  # f"...".lower()
                    v = v.value
                if k.arg == "id" and isinstance(v, ast.Constant) and isinstance(v.value, str) and v.value:
                    out.add(v.value)
                elif k.arg == "id" and isinstance(v, ast.JoinedStr) and v.values \
                        and isinstance(v.values[0], ast.Constant) and len(v.values[0].value) >= 4:
                    out.add(v.values[0].value + "*")
    return out


def foreign_ids(source: str, ids: dict[str, str], own: str | None) -> list[str]:
    """`line: literal (prong)` for every string literal (docstrings aside) that names a finding another prong
    makes: the id itself, or the fixed start of an id the other prong builds."""
    import ast

    tree = ast.parse(source)
    docs = _docstrings(tree)
    out: list[tuple[int, str]] = []
    for n in ast.walk(tree):
        if not (isinstance(n, ast.Constant) and isinstance(n.value, str)) or id(n) in docs:
            continue
        for fid, prong in ids.items():
            if prong == own:
                continue
            hit = (n.value.startswith(fid[:-1]) and len(n.value) >= 4) if fid.endswith("*") else n.value == fid
            if hit:
                out.append((n.lineno, f"line {n.lineno}: {n.value!r} ({prong})"))
    return [x for _, x in sorted(out)]


def prong_ids() -> dict[str, str]:
    ids = {}
    for folder in sorted((PACKAGE / "prongs").iterdir()):
        if (folder / "__init__.py").exists():
            for m in folder.rglob("*.py"):
                ids.update({fid: folder.name for fid in finding_ids(m.read_text())})
    return ids


def test_no_finding_id_is_compared_as_a_string_outside_its_own_prong():
    ids = prong_ids()
    assert len(ids) > 40  # every prong's findings were found
    found = {}
    for m in sorted(PACKAGE.rglob("*.py")):
        rel = m.relative_to(PACKAGE)
        own = rel.parts[1] if rel.parts[0] == "prongs" and len(rel.parts) > 2 else None
        hits = foreign_ids(m.read_text(), ids, own)
        if hits:
            found[rel.as_posix()] = hits
    assert not found, found


def test_a_planted_id_comparison_is_named():
    ids = {"trace-step-account*": "trace", "account-gpu-idle": "resource_account"}
    planted = 'x = [f for f in found if f.id.startswith("trace-step-account")]\ny = by_id.get("account-gpu-idle")\n'
    assert foreign_ids(planted, ids, own=None) == ["line 1: 'trace-step-account' (trace)",
                                                   "line 2: 'account-gpu-idle' (resource_account)"]
    assert foreign_ids(planted, ids, own="trace") == ["line 2: 'account-gpu-idle' (resource_account)"]


def claimed_tiers(source: str) -> set[str]:
    """The `Rank` tiers a module's `BoundClaim(rank=...)` calls name."""
    import ast

    out = set()
    for n in ast.walk(ast.parse(source)):
        if isinstance(n, ast.Call) and getattr(n.func, "id", None) == "BoundClaim":
            for k in n.keywords:
                if k.arg == "rank":
                    out |= {a.attr for a in ast.walk(k.value)
                            if isinstance(a, ast.Attribute) and getattr(a.value, "id", None) == "Rank"}
    return out


def test_each_prong_declares_the_tiers_at_which_its_findings_set_the_bound():
    from orchestrator.ranks import Rank

    names = {v: k for k, v in vars(Rank).items() if isinstance(v, int)}
    for p in PRONGS:
        claimed = set().union(*(claimed_tiers(m.read_text()) for m in (PACKAGE / "prongs" / p.name).rglob("*.py")))
        assert claimed == {names[t] for t in p.bound_tiers}, p.name
