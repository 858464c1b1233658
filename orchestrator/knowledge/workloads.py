"""Whose a GPU process is, by its name: the process titles serving engines and ML frameworks give their own processes
(workloads.yaml, each with its source). Read by the node probe's facts and by the analysis alike (one list)."""

from __future__ import annotations

import re
from functools import lru_cache

from pydantic import BaseModel, ConfigDict, Field

from orchestrator.knowledge import _load


class WorkloadTitle(BaseModel):
    model_config = ConfigDict(extra="forbid")
    pattern: str
    engine: str
    what: str
    sources: list[str] = Field(min_length=1)


@lru_cache(maxsize=None)
def workload_titles() -> tuple[tuple[WorkloadTitle, re.Pattern[str]], ...]:
    rows = [WorkloadTitle.model_validate(x) for x in _load("workloads.yaml")]
    return tuple((r, re.compile(r.pattern)) for r in rows)


def engine_of(*names: str | None) -> WorkloadTitle | None:
    """The engine or framework whose process title one of `names` is (a process name, its comm, its argv[0]; the name
    itself or its basename), or None."""
    for name in names:
        if not name:
            continue
        name = name.strip()
        for cand in dict.fromkeys((name, name.rsplit("/", 1)[-1], name.split()[0].rsplit("/", 1)[-1])):
            for row, rx in workload_titles():
                if rx.search(cand):
                    return row
    return None
