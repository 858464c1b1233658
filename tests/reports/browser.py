"""Headless Chromium (Debian's /usr/bin/chromium) driven as a subprocess: dump the rendered DOM, take a screenshot."""

from __future__ import annotations

import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-default-apps", "--mute-audio"]


def available() -> bool:
    return Path(CHROMIUM).exists() or shutil.which("chromium") is not None


def _run(args: list[str], profile: Path, timeout: float = 60) -> subprocess.CompletedProcess:
    cmd = [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=True)


def dump_dom(page: Path, profile: Path) -> str:
    """The DOM after Chromium loaded and laid out the page, serialized."""
    return _run(["--dump-dom", page.resolve().as_uri()], profile).stdout


def screenshot(page: Path, png: Path, profile: Path, size: str = "1000,2400") -> Path:
    _run([f"--screenshot={png}", f"--window-size={size}", "--hide-scrollbars", page.resolve().as_uri()], profile)
    return png


class Element:
    def __init__(self, tag: str, attrs: dict[str, str], parents: list[str]):
        self.tag, self.attrs, self.parents, self.text = tag, attrs, parents, ""

    @property
    def classes(self) -> set[str]:
        return set(self.attrs.get("class", "").split())


class DomIndex(HTMLParser):
    """Every element of a serialized DOM with its attributes, ancestors' tags and direct text."""

    VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}

    def __init__(self, markup: str):
        super().__init__(convert_charrefs=True)
        self.elements: list[Element] = []
        self._stack: list[Element] = []
        self.feed(markup)

    def handle_starttag(self, tag, attrs):
        el = Element(tag, {k: v or "" for k, v in attrs}, [e.tag for e in self._stack])
        self.elements.append(el)
        if tag not in self.VOID:
            self._stack.append(el)

    def handle_startendtag(self, tag, attrs):
        self.elements.append(Element(tag, {k: v or "" for k, v in attrs}, [e.tag for e in self._stack]))

    def handle_endtag(self, tag):
        for i in range(len(self._stack) - 1, -1, -1):
            if self._stack[i].tag == tag:
                del self._stack[i:]
                break

    def handle_data(self, data):
        for el in self._stack:
            el.text += data

    def find(self, tag: str | None = None, cls: str | None = None, **attrs) -> list[Element]:
        return [e for e in self.elements if (tag is None or e.tag == tag) and (cls is None or cls in e.classes)
                and all(e.attrs.get(k) == v for k, v in attrs.items())]
