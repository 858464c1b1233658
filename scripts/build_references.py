#!/usr/bin/env python3
"""Build orchestrator/knowledge/references.json — published reference throughput with provenance — from its sources.

    python3 scripts/build_references.py                 # from the committed copies (tests/references/sources)
    python3 scripts/build_references.py --fetch DIR     # refresh: download every source of the manifest into DIR
                                                        # (pinned commits, raw GitHub URLs), then build from DIR
    python3 scripts/build_references.py --check         # build in memory and fail if the shipped file differs

The manifest (scripts/reference_sources.yaml) names each source: where it lives (URL at a commit), its local copy,
how it measured, and how its GPU and model names map to ours. Rows per source are printed; every row a parser could
not make is printed with its reason (a table without its unit line, a model name the manifest does not map, …) and
the build fails when a source gives no row at all, or fewer rows than the shipped file had for it (a harvest that
finds far fewer than last time is a broken parser, not a smaller world).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from orchestrator.knowledge.references import (  # noqa: E402  (the repository's package, not an installed one)
    ReferenceData, ReferenceRow, ReferenceSource, parse_mlperf_summary, parse_trtllm_perf_overview)

MANIFEST = ROOT / "scripts" / "reference_sources.yaml"
SOURCES = ROOT / "tests" / "references" / "sources"
OUT = ROOT / "orchestrator" / "knowledge" / "references.json"


def build(manifest: dict[str, Any], sources_dir: Path) -> tuple[ReferenceData, list[str]]:
    models: dict[str, list[str]] = manifest["models"]
    rows: list[ReferenceRow] = []
    problems: list[str] = []
    srcs: list[ReferenceSource] = []
    counts: dict[str, int] = {}
    for s in manifest["sources"]:
        text = (sources_dir / s["file"]).read_text(encoding="utf-8")
        if s["kind"] == "trtllm-perf-overview":
            got, bad = parse_trtllm_perf_overview(text, s, models)
        elif s["kind"] == "mlperf-summary":
            system = json.loads((sources_dir / s["system_file"]).read_text(encoding="utf-8"))
            got, bad = parse_mlperf_summary(text, system, s, models)
        else:
            raise SystemExit(f"{s['id']}: unknown source kind {s['kind']!r}")
        rows += got
        problems += bad
        counts[s["id"]] = len(got)
        srcs.append(ReferenceSource(id=s["id"], title=s["title"], url=s["url"], commit=s.get("commit"),
                                    date=s.get("date"), method=s.get("method", "")))
    return ReferenceData(sources=srcs, rows=rows, models=models, counts=counts), problems


def dump(data: ReferenceData) -> str:
    return json.dumps(data.model_dump(mode="json", exclude_defaults=True), indent=1, sort_keys=False) + "\n"


def _fetch(manifest: dict[str, Any], into: Path) -> None:
    import httpx  # a dependency of the package; only a refresh reaches the network

    for s in manifest["sources"]:
        for raw_key, file_key in (("raw", "file"), ("system_raw", "system_file")):
            if raw_key not in s:
                continue
            dest = into / s[file_key]
            dest.parent.mkdir(parents=True, exist_ok=True)
            r = httpx.get(s[raw_key], timeout=60, follow_redirects=True)
            r.raise_for_status()
            dest.write_bytes(r.content)
            print(f"fetched {s[raw_key]} -> {dest}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sources", type=Path, default=SOURCES, help="folder of the sources' local copies")
    ap.add_argument("--fetch", type=Path, metavar="DIR", help="download every source into DIR, then build from it")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--check", action="store_true", help="fail if the built data differs from --out")
    args = ap.parse_args(argv)
    manifest = yaml.safe_load(MANIFEST.read_text(encoding="utf-8"))
    sources_dir = args.sources
    if args.fetch:
        _fetch(manifest, args.fetch)
        sources_dir = args.fetch
    data, problems = build(manifest, sources_dir)
    for p in problems:
        print(f"not used: {p}")
    previous = ReferenceData.model_validate_json(args.out.read_text()) if args.out.exists() else None
    failed = False
    for sid, n in data.counts.items():
        before = previous.counts.get(sid) if previous else None
        print(f"{sid}: {n} rows" + (f" (was {before})" if before is not None else ""))
        if n == 0 or (before is not None and n < 0.8 * before):
            print(f"FAILED: {sid} gave {n} rows" + (f", far fewer than the {before} of the shipped file" if before else ""))
            failed = True
    text = dump(data)
    if args.check:
        same = args.out.exists() and args.out.read_text(encoding="utf-8") == text
        print("references.json is up to date" if same else f"{args.out} differs from what the sources build")
        return 0 if same and not failed else 1
    if failed:
        return 1
    args.out.write_text(text, encoding="utf-8")
    print(f"wrote {len(data.rows)} rows from {len(data.sources)} sources to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
