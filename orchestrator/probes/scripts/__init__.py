"""Fixed probe scripts sent to `python3 -` on the investigated host (stdlib only, Python >= 3.8).

Each script reads its parameters as JSON from argv[1] and prints one JSON document on stdout. The text of a script
is never assembled at run time: `load(name)` returns the file as shipped.
"""

from __future__ import annotations

from importlib import resources


def load(name: str) -> str:
    """The source of the fixed script `name` (e.g. "pyenv")."""
    return resources.files(__package__).joinpath(f"{name}.py").read_text()
