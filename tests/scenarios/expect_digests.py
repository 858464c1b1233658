"""The SHA-256 of every residual case's `expect:` block, as the commit that added the cases recorded them.

    python tests/scenarios/expect_digests.py            # print `sha256 <hex> <class>/<id>`, one line per case
    python tests/scenarios/expect_digests.py --check REF # compare with the lines in commit REF's message (exit 1 on
                                                         # a changed, missing or extra case)

The digest is over `yaml.safe_dump(case["expect"], sort_keys=True)`: the expectations as data, so re-indenting or
re-quoting a case.yaml does not change it, and any change to what a case expects does.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent
CLASSES = ("residual", "residual-blind", "residual-blind-r3")
LINE = re.compile(r"^sha256 ([0-9a-f]{64}) (\S+)$")


def digest(case: dict) -> str:
    return hashlib.sha256(yaml.safe_dump(case["expect"], sort_keys=True).encode()).hexdigest()


def digests(root: Path = ROOT) -> dict[str, str]:
    """`<class>/<id>` -> the digest of its expectations, for every case of the residual classes."""
    out = {}
    for cls in CLASSES:
        for path in sorted((root / cls).glob("*/case.yaml")):
            case = yaml.safe_load(path.read_text())
            out[f"{cls}/{case['id']}"] = digest(case)
    return out


def recorded(ref: str) -> dict[str, str]:
    """The `sha256 <hex> <class>/<id>` lines of commit `ref`'s message."""
    msg = subprocess.run(["git", "log", "-1", "--format=%B", ref], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout
    return {m.group(2): m.group(1) for m in map(LINE.match, msg.splitlines()) if m}


def main(argv: list[str]) -> int:
    now = digests()
    if argv[:1] == ["--check"] and len(argv) == 2:
        then = recorded(argv[1])
        bad = [f"changed: {k}" for k in sorted(now.keys() & then.keys()) if now[k] != then[k]]
        bad += [f"not in {argv[1]}: {k}" for k in sorted(now.keys() - then.keys())]
        bad += [f"missing now: {k}" for k in sorted(then.keys() - now.keys())]
        print("\n".join(bad) or f"{len(now)} cases, expectations as recorded in {argv[1]}")
        return 1 if bad else 0
    if argv:
        print("usage: expect_digests.py [--check COMMIT]", file=sys.stderr)
        return 2
    for key, hexd in now.items():
        print(f"sha256 {hexd} {key}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
