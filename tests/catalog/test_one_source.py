"""One home for a rule's words and numbers: a rule with a catalog entry computes numbers and picks which of its
entry's words apply, and the words themselves (titles, claims, clauses, fixes) and its confidence live in the
entry's YAML; a rule without one keeps them in its own module. A literal in any rule module (the analysis and every
prong) that repeats a stretch of an entry's text, or a literal confidence on a finding that names its entry, is a
second copy that can drift from the first: these tests name it.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import orchestrator.analysis as analysis_pkg
from orchestrator.knowledge.catalog import Entry, catalog

ANALYSIS = Path(analysis_pkg.__file__).resolve().parent
PACKAGE = ANALYSIS.parent


def rule_modules() -> list[Path]:
    """Every rule module: in the analysis and in every prong, each module of rules (`rules.py`, `*_rules.py`) and
    each module that makes a `Finding` (a probe's parser or a flag table is not one: its strings are the software's
    own, which an entry's fix may quote)."""
    mods = sorted(ANALYSIS.glob("*.py")) + sorted((PACKAGE / "prongs").rglob("*.py"))
    return [m for m in mods if m.name == "rules.py" or m.name.endswith("_rules.py") or "Finding(" in m.read_text()]


KNOWN = {("analysis/observation_rules.py", "tp-scaling-implicates-allreduce")}
"""Copies left as they are, each to be resolved where its words live: the parallelism comparison's reasoning is
the finding's claim (analysis/rules.py parallelism_scaling) while the entry's YAML claim says the same in other
words; moving the Python words into the entry changes what `knowledge_search` shows of it (knowledge/)."""

MIN_STRETCH = 24
"""Shorter shared stretches are ordinary phrases ("tokens per expert"), not a copied sentence."""

_PLACEHOLDER = re.compile(r"\{[^{}]*\}")


def _texts(e: Entry) -> list[str]:
    out = [e.title, e.claim, e.explanation, e.reasoning or "", e.notes or "", *e.all_fixes(), *e.words.values()]
    return [t for t in out if t]


def _stretches(template: str) -> list[str]:
    """The literal runs of a template between its placeholders, long enough to be a copied sentence."""
    return [s.strip() for s in _PLACEHOLDER.split(template) if len(s.strip()) >= MIN_STRETCH]


def _literals(source: str) -> list[tuple[int, str]]:
    """Every string literal of a module with its line (an f-string's literal parts one by one); docstrings and
    comments are prose about the rule, not the rule's words, and are left out."""
    tree = ast.parse(source)
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)) and n.body
            and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    out = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs:
            out.append((n.lineno, n.value))
    return out


def duplicates(source: str, entries: list[Entry]) -> list[str]:
    """`line: entry field text` for every literal of `source` that holds a stretch of an entry's text, or is a
    long stretch of one."""
    stretches = [(e.id, s) for e in entries for t in _texts(e) for s in _stretches(t)]
    found = []
    for line, lit in _literals(source):
        for eid, s in stretches:
            if s in lit or (len(lit.strip()) >= MIN_STRETCH and lit.strip() in s):
                found.append(f"line {line}: {eid}: {s!r}")
    return found


def literal_confidences(source: str) -> list[str]:
    """`line: entry` for every `Finding(...)` that names its catalog entry and states a number as its confidence
    (the entry's YAML holds it: the rule reads it through `entry_words`)."""
    out = []
    for n in ast.walk(ast.parse(source)):
        if isinstance(n, ast.Call) and getattr(n.func, "id", getattr(n.func, "attr", None)) == "Finding":
            kw = {k.arg: k.value for k in n.keywords}
            entry, conf = kw.get("entry"), kw.get("confidence")
            named = entry is not None and not (isinstance(entry, ast.Constant) and entry.value is None)
            if named and isinstance(conf, ast.Constant) and isinstance(conf.value, (int, float)):
                out.append(f"line {n.lineno}: {ast.unparse(entry)}")
    return out


def test_every_rule_module_is_checked():
    names = {m.relative_to(PACKAGE).as_posix() for m in rule_modules()}
    assert {"analysis/rules.py", "prongs/tensor_core_specs/rules.py", "prongs/resource_account/rules.py",
            "prongs/trace/rules.py", "prongs/settings_audit/rules.py"} <= names


def test_no_rule_module_states_text_its_catalog_entry_holds():
    entries = list(catalog())
    found = {m.relative_to(PACKAGE).as_posix(): duplicates(m.read_text(), entries) for m in rule_modules()}
    found = {m: [x for x in d if (m, x.split(": ")[1]) not in KNOWN] for m, d in found.items()}
    assert not {m: d for m, d in found.items() if d}, found


def test_no_finding_that_names_its_entry_states_its_own_confidence():
    found = {m.relative_to(PACKAGE).as_posix(): literal_confidences(m.read_text()) for m in rule_modules()}
    assert not {m: d for m, d in found.items() if d}, found


def test_a_planted_literal_confidence_on_an_entry_finding_is_named():
    planted = 'f = Finding(id="x", category="kernel", confidence=0.8, entry="gemm-far-below-roofline", claim="c")\n'
    assert literal_confidences(planted) == ["line 1: 'gemm-far-below-roofline'"]
    assert literal_confidences('f = Finding(id="x", category="kernel", confidence=0.8, claim="c")\n') == []


def test_a_planted_copy_of_an_entry_title_or_clause_is_named():
    source = (ANALYSIS / "rules.py").read_text()
    e = catalog().get("autotune-fallback-tactics")
    assert e is not None
    planted = source + f"\n\nPLANTED = {e.title!r}\n"
    assert any("autotune-fallback-tactics" in d for d in duplicates(planted, [e]))
    # a copied f-string: only its literal parts are compared, and they still hold the entry's words
    m = catalog().get("gemm-far-below-roofline")
    assert m is not None
    planted = source + '\n\ndef _t(dtype, m):\n    return f"{dtype} GEMM kernel far below its roofline at M={m}"\n'
    assert any("gemm-far-below-roofline" in d for d in duplicates(planted, [m]))
