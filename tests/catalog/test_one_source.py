"""One source per catalog rule: a Python rule computes numbers and picks which of its entry's words apply; the
words themselves (titles, claims, clauses, fixes) live in the entry's YAML. A literal in a rule module that repeats
a stretch of an entry's text is a second copy that can drift from the first: this test names it.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import orchestrator.analysis as analysis_pkg
from orchestrator.knowledge.catalog import Entry, catalog

ANALYSIS = Path(analysis_pkg.__file__).resolve().parent
RULE_MODULES = ("rules.py", "measure_rules.py")
"""The modules whose rules produce catalog findings by id through their entries' words."""

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


def test_no_rule_module_states_text_its_catalog_entry_holds():
    entries = list(catalog())
    found = {m: duplicates((ANALYSIS / m).read_text(), entries) for m in RULE_MODULES}
    assert not {m: d for m, d in found.items() if d}, found


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
