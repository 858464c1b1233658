"""Harvest the documented settings of the layers in front of the engine from the projects' own definitions.

    python scripts/harvest_path_settings.py nginx PATH-TO-nginx.org-CHECKOUT   (a work tree or a bare clone)

nginx: every directive of the modules on an LLM request's path (core http, proxy, upstream, gzip, limit_req,
limit_conn), from the XML the nginx.org site is built from (xml/en/docs/http/<module>.xml: `<directive name>`,
`<syntax>`, `<default>`, `<context>`, `<appeared-in>` and the first paragraph), written to
orchestrator/knowledge/settings/path/nginx.json with the checkout's commit as provenance. Never edited by hand; the
curated effects live in orchestrator/knowledge/settings/path/effects.yaml. The other layers' settings, whose sources
are prose or proto comments, are curated in <layer>.yaml beside it, each with its source.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

NGINX_MODULES = ("ngx_http_core_module", "ngx_http_proxy_module", "ngx_http_upstream_module", "ngx_http_gzip_module",
                 "ngx_http_limit_req_module", "ngx_http_limit_conn_module")
OUT = Path(__file__).resolve().parent.parent / "orchestrator" / "knowledge" / "settings" / "path"


def _text(el: ET.Element | None) -> str:
    return re.sub(r"\s+", " ", "".join(el.itertext())).strip() if el is not None else ""


# The notes nginx's pages give where a directive's default changed in a release ("Prior to version 1.19.10, the default
# value was 100."), read into (first version, default) change points: the <default> element is the newest only.
_DEFAULT_NOTES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"Prior to version ([\d.]+), the default value was (.+?)(?: on all platforms)?\."), "old"),
    (re.compile(r"Prior to version ([\d.]+), by default there was no limit\."), "0"),
    (re.compile(r"Before ([\d.]+), version ([\d.]+) was used by default\."), "old"),
    (re.compile(r"Since ([\d.]+), (?:by default the cache for connections is activated|keepalive connections are "
                r"enabled by default)"), "none"),
)


def default_changes(body: str, since: str | None, default: str | None) -> list[list[str | None]] | None:
    """(first version, default) change points from a directive's prose, oldest first; None when it names none."""
    for rx, kind in _DEFAULT_NOTES:
        m = rx.search(body)
        if m:
            old = m.group(2).strip() if kind == "old" else ("0" if kind == "0" else None)
            return [[since or "0", old], [m.group(1), default]]
    return None


def nginx(checkout: Path) -> dict:
    bare = not (checkout / "xml").is_dir()  # a bare clone (a mirror): the files are read from its HEAD
    git = ["git", f"--git-dir={checkout}"] if bare else ["git", "-C", str(checkout)]
    commit = subprocess.run(git + ["rev-parse", "HEAD"], capture_output=True, text=True,
                            check=False).stdout.strip() or None
    settings = []
    for module in NGINX_MODULES:
        rel = f"xml/en/docs/http/{module}.xml"
        text = subprocess.run(git + ["show", f"HEAD:{rel}"], capture_output=True, text=True, check=True).stdout \
            if bare else (checkout / rel).read_text()
        # the site's XML names a DTD and entities the parser need not resolve: drop the doctype
        raw = re.sub(r"<!DOCTYPE[^>]*>", "", text)
        raw = re.sub(r"&(\w+);", lambda m: m.group(0) if m.group(1) in ("lt", "gt", "amp", "quot", "apos") else " ",
                     raw)
        root = ET.fromstring(raw)
        for d in root.iter("directive"):
            default = d.find("default")
            para = d.find("para")
            since = _text(d.find("appeared-in")) or None
            current = _text(default) if default is not None and _text(default) else None
            changes = default_changes(_text(d), since, current)
            settings.append({
                "name": d.get("name"), "module": module, "syntax": _text(d.find("syntax")),
                "default": _text(default) if default is not None and _text(default) else None,
                "context": [_text(c) for c in d.findall("context")],
                "since": since,
                **({"defaults": changes} if changes else {}),
                "help": _text(para)[:400],
                "url": f"https://nginx.org/en/docs/http/{module}.html#{d.get('name')}",
                "source": f"nginx/nginx.org xml/en/docs/http/{module}.xml" + (f"@{commit[:12]}" if commit else ""),
            })
    return {"layer": "nginx", "label": "nginx", "harvested_from": "nginx/nginx.org", "commit": commit,
            "modules": list(NGINX_MODULES), "count": len(settings), "settings": settings}


def main(argv: list[str]) -> int:
    if len(argv) != 3 or argv[1] != "nginx":
        print("usage: harvest_path_settings.py nginx PATH-TO-nginx.org-CHECKOUT", file=sys.stderr)
        return 2
    data = nginx(Path(argv[2]))
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "nginx.json").write_text(json.dumps(data, indent=1, sort_keys=False) + "\n")
    print(f"nginx: {data['count']} directives")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
