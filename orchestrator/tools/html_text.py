"""HTML to readable text with the standard library's parser: headings, paragraphs, list items, links and code.

Script, style, navigation and other non-content elements are dropped; `pre` keeps its whitespace; links keep their
target as `text <href>` so a model can follow them with another fetch.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

SKIP = {"script", "style", "nav", "noscript", "template", "svg", "head", "iframe", "button", "form"}
BLOCK = {
    "p", "div", "section", "article", "main", "header", "footer", "aside", "table", "tr", "ul", "ol", "dl",
    "dt", "dd", "blockquote", "figure", "figcaption", "hr", "br", "li", "h1", "h2", "h3", "h4", "h5", "h6", "pre",
}
HEADINGS = {f"h{i}": i for i in range(1, 7)}


class _TextParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self.title: list[str] = []
        self.skip_depth = 0
        self.pre_depth = 0
        self.in_title = False
        self.links: list[str | None] = []
        self.li_depth = 0

    def _break(self, n: int = 2) -> None:
        if self.out and self.out[-1] == "- ":  # <li><p>text</p></li>: keep the text on the bullet's line
            return
        self.out.append("\n" * n)

    def handle_starttag(self, tag, attrs):
        if tag == "title":
            self.in_title = True
            return
        if tag in SKIP:
            self.skip_depth += 1
            return
        if self.skip_depth:
            return
        if tag in BLOCK and not (self.li_depth and tag in ("p", "div")):
            self._break(1 if tag in ("br", "li", "tr", "dt", "dd") else 2)
        if tag == "li":
            self.li_depth += 1
        if tag in HEADINGS:
            self.out.append("#" * HEADINGS[tag] + " ")
        elif tag == "li":
            self.out.append("- ")
        elif tag == "pre":
            self.pre_depth += 1
            self.out.append("```\n")
        elif tag in ("td", "th"):
            self.out.append(" | ")
        elif tag == "a":
            self.links.append(dict(attrs).get("href"))

    def handle_endtag(self, tag):
        if tag == "title":
            self.in_title = False
            return
        if tag in SKIP:
            self.skip_depth = max(self.skip_depth - 1, 0)
            return
        if self.skip_depth:
            return
        if tag == "pre":
            self.pre_depth = max(self.pre_depth - 1, 0)
            self.out.append("```" if self.out and self.out[-1].endswith("\n") else "\n```")
        if tag == "a" and self.links:
            href = self.links.pop()
            if href and not href.startswith(("#", "javascript:")):
                self.out.append(f" <{href}>")
        if tag == "li":
            self.li_depth = max(self.li_depth - 1, 0)
        # Items are separated by their start tags; paragraphs inside an item stay on its line.
        if tag in BLOCK and tag not in ("li", "tr", "dt", "dd", "br") and not (self.li_depth and tag in ("p", "div")):
            self._break(2)

    def handle_data(self, data):
        if self.in_title:
            self.title.append(data)
            return
        if self.skip_depth:
            return
        if self.pre_depth:
            self.out.append(data)
        else:
            self.out.append(re.sub(r"\s+", " ", data))


def html_to_text(html: str) -> str:
    """Readable text of an HTML document (title first, as a top heading)."""
    parser = _TextParser()
    parser.feed(html)
    parser.close()
    body = "".join(parser.out)
    # Tidy outside code blocks only: there, strip each line and collapse blank runs; inside, keep indentation.
    lines, in_code = [], False
    for line in body.split("\n"):
        if line.strip() == "```":
            in_code = not in_code
            lines.append("```")
        elif in_code:
            lines.append(line.rstrip())
        else:
            lines.append(line.strip())
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
    title = " ".join("".join(parser.title).split())
    return f"# {title}\n\n{text}" if title and not text.startswith(f"# {title}") else text
