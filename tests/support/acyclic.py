"""An import-linter contract type: no import circle between modules of the package.

`acyclic_siblings` (import-linter's own) looks at packages as wholes: the analysis package importing a prong's
record while a prong's rules import the evidence view is a circle between two folders, but not between any two
files. This contract looks at files: every import that grimp sees (at module level or inside a function; those
under TYPE_CHECKING when the configuration excludes them) is an arrow, and no arrow may lead back to where it
started. Configured in pyproject.toml (`[tool.importlinter] contract_types`).
"""

from __future__ import annotations

from grimp import ImportGraph
from importlinter.application import contract_utils, output
from importlinter.application.contract_utils import AlertLevel
from importlinter.domain import fields
from importlinter.domain.contract import Contract, ContractCheck


def circles(graph: ImportGraph, modules: set[str]) -> list[list[str]]:
    """The import circles among `modules`: each strongly connected component of more than one module (Tarjan,
    iterative), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    n = 0
    for root in sorted(modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root) & modules)))]
        index[root] = low[root] = n
        n += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = n
                    n += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.find_modules_directly_imported_by(w) & modules))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    x = stack.pop()
                    on.discard(x)
                    comp.append(x)
                    if x == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return sorted(out)


def _path(graph: ImportGraph, circle: list[str]) -> list[str]:
    """One way round a circle: from its first module back to it, each step a direct import."""
    members = set(circle)
    start = circle[0]
    for nxt in sorted(graph.find_modules_directly_imported_by(start) & members):
        back = graph.find_shortest_chain(importer=nxt, imported=start)
        if back and set(back) <= members:
            return [start, *back]
    return circle


class AcyclicModulesContract(Contract):
    """No import circle between the modules of `containers` (each module and subpackage of them)."""

    type_name = "acyclic_modules"

    containers = fields.SetField(subfield=fields.StringField())
    ignore_imports = fields.SetField(subfield=fields.ImportExpressionField(), required=False)
    unmatched_ignore_imports_alerting = fields.EnumField(AlertLevel, default=AlertLevel.ERROR)

    def check(self, graph: ImportGraph, verbose: bool) -> ContractCheck:
        removal = contract_utils.remove_ignored_imports_and_report(
            graph=graph, ignore_imports=self.ignore_imports,  # type: ignore[arg-type]
            unmatched_alerting=self.unmatched_ignore_imports_alerting)  # type: ignore[arg-type]
        modules: set[str] = set()
        for c in self.containers:  # type: ignore[attr-defined]
            modules |= {c, *graph.find_descendants(c)}
        found = circles(graph, modules)
        return ContractCheck(kept=not found, warnings=list(removal.warnings),
                             metadata={"circles": [_path(graph, c) for c in found]})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for path in check.metadata["circles"]:
            output.print_error(" -> ".join(path), bold=True)
            output.new_line()
