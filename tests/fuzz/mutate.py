"""A small seeded mutator: hostile variants of the corpus's seeds, the same ones for the same seed.

Structure-aware where the format allows (a JSON or YAML document is parsed, some of its values replaced by hostile
ones, written back; an SQLite export gets hostile rows and schema), and byte-level everywhere (truncation, repeated
slices, inserted tokens, flipped bytes, invalid UTF-8), so that both the parsers' bounds and what runs after them see
inputs no seed holds.
"""

from __future__ import annotations

import gzip
import json
import random
import sqlite3
from pathlib import Path
from typing import Any, Callable

import yaml

BIG_INT = "__FUZZ_BIG_INT__"
"""Stands for a 5,000-digit integer in a document before it is written (json cannot write one itself)."""


def _nested(n: int, rng: random.Random) -> Any:
    v: Any = rng.choice([1, "x", None])
    for _ in range(n):
        v = [v] if rng.random() < 0.5 else {"k": v}
    return v


def hostile_value(rng: random.Random) -> Any:
    return rng.choice([
        lambda: _nested(rng.choice([63, 65, 150, 400]), rng),
        lambda: 1e308, lambda: -1.7e308, lambda: float("nan"), lambda: float("inf"), lambda: -1, lambda: 0,
        lambda: 2**63, lambda: -(2**63) - 1, lambda: BIG_INT, lambda: 5e-324,
        lambda: "x" * rng.choice([1025, 70_000]), lambda: "", lambda: None, lambda: [], lambda: {}, lambda: True,
        lambda: "1_000", lambda: "\x1b]0;pwned\x07\x1b[2J", lambda: "\u202e\ud800", lambda: "sm1_" * 3000,
        lambda: ["x"] * 2000, lambda: {f"k{i}": i for i in range(500)}, lambda: "NaN", lambda: "-0.0e5",
    ])()


def _paths(doc: Any, limit: int = 2000) -> list[tuple[Any, Any]]:
    """(container, key) of every value in doc, breadth first, at most `limit`."""
    out: list[tuple[Any, Any]] = []
    queue = [doc]
    while queue and len(out) < limit:
        c = queue.pop(0)
        items = list(c.items()) if isinstance(c, dict) else list(enumerate(c)) if isinstance(c, list) else []
        for k, v in items:
            out.append((c, k))
            if isinstance(v, (dict, list)):
                queue.append(v)
    return out


def mutate_doc(doc: Any, rng: random.Random, edits: int = 3) -> Any:
    """doc with a few values replaced, keys added or dropped, lists repeated."""
    for _ in range(edits):
        paths = _paths(doc)
        if not paths:
            return hostile_value(rng)
        c, k = rng.choice(paths)
        op = rng.random()
        if op < 0.6:
            c[k] = hostile_value(rng)
        elif op < 0.75 and isinstance(c, dict):
            c[rng.choice(["evil", "", "__proto__", "x" * 300, str(k) + "_"])] = hostile_value(rng)
        elif op < 0.85:
            if isinstance(c, dict):
                c.pop(k, None)
            elif c:
                c.pop(k if k < len(c) else -1)
        elif isinstance(c[k], list) and c[k]:
            c[k] = c[k] * rng.choice([2, 50])
        else:
            c[k] = str(c[k])
    return doc


def dump_json(doc: Any) -> str:
    return json.dumps(doc, allow_nan=True).replace(json.dumps(BIG_INT), "9" * 5000)


TOKENS = ["[" * 100_000, "{" * 70, "]", "}", ",", ":", "1e999", "NaN", "-Infinity", "9" * 5000, "\x00", "\\u0000",
          "\\ud800", '"', "\\", "&a [*a, *a]", "*a", "<<: *x", "!!python/object:os.system", "\t", "\r\n",
          "x" * 100_000, "---\n", "...\n", "%YAML 1.1\n", "? ", "- - - -", "server_args=ServerArgs(" * 300,
          "non-default args: {" * 300, "\x1b]52;c;ZXZpbA==\x07"]


def mutate_bytes(data: bytes, rng: random.Random, edits: int = 2) -> bytes:
    b = bytearray(data)
    for _ in range(edits):
        op = rng.random()
        at = rng.randrange(len(b) + 1)
        if op < 0.25:
            b = b[:at]
        elif op < 0.5:
            tok = rng.choice(TOKENS).encode("utf-8", "surrogatepass")
            b[at:at] = tok
        elif op < 0.65 and b:
            end = min(len(b), at + rng.randrange(1, 200))
            b[at:at] = b[at:end] * rng.choice([2, 100])
        elif op < 0.8 and b:
            for _ in range(rng.randrange(1, 8)):
                b[rng.randrange(len(b))] = rng.randrange(256)
        else:
            b[at:at] = rng.choice([b"\xff\xfe", b"\xc3", b"\xed\xa0\x80", b"\x1f\x8b", b"SQLite format 3\x00"])
    return bytes(b)


def _text_doc(data: bytes, rng: random.Random, yaml_doc: bool) -> bytes:
    text = data.decode()
    doc = yaml.safe_load(text) if yaml_doc else json.loads(text)
    doc = mutate_doc(doc, rng)
    if yaml_doc and rng.random() < 0.5:
        try:
            out = yaml.safe_dump(doc, default_flow_style=rng.random() < 0.5, allow_unicode=True)
        except RecursionError:  # PyYAML's representer recurses: deep values are written as JSON (YAML reads it)
            out = dump_json(doc)
        return out.replace(f"'{BIG_INT}'", "9" * 5000).replace(BIG_INT, "9" * 5000).encode("utf-8", "surrogatepass")
    return dump_json(doc).encode("utf-8", "surrogatepass")


def mutate_file(kind: str, seed: Path, out: Path, rng: random.Random) -> Path:
    """A mutant of `seed` (a corpus file of `kind`) written to `out` (its name gets the seed's suffixes)."""
    data = gzip.decompress(seed.read_bytes()) if seed.name.endswith(".gz") else seed.read_bytes()
    name = seed.name[:-3] if seed.name.endswith(".gz") else seed.name
    path = out / name
    if kind == "nsys":
        path.write_bytes(data)
        _mutate_sqlite(path, rng)
        return path
    structured = rng.random() < 0.7
    if kind == "transcript":
        lines = data.decode().splitlines()
        i = rng.randrange(1, len(lines))
        if structured:
            lines[i] = dump_json(mutate_doc(json.loads(lines[i]), rng, edits=2))
        else:
            lines[i] = mutate_bytes(lines[i].encode(), rng).decode("utf-8", "replace")
        data = ("\n".join(lines) + "\n").encode("utf-8", "surrogatepass")
    elif structured and name.endswith((".json", ".yaml")):
        data = _text_doc(data, rng, name.endswith(".yaml"))
    elif structured and name.endswith(".jsonl"):
        lines = data.decode().splitlines()
        i = rng.randrange(len(lines))
        lines[i] = dump_json(mutate_doc(json.loads(lines[i]), rng))
        data = ("\n".join(lines) + "\n").encode("utf-8", "surrogatepass")
    else:
        data = mutate_bytes(data, rng)
    if kind == "trace" and rng.random() < 0.3:
        path = out / (name + ".gz")
        data = gzip.compress(data, 1, mtime=0)
    path.write_bytes(data)
    return path


_SQL: list[Callable[[random.Random], str]] = [
    lambda r: f"UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET {r.choice(['start', 'end', 'deviceId', 'streamId', 'correlationId', 'demangledName'])} = {r.choice(['NULL', chr(39) + 'x' + chr(39), '1e308', '-1e308', '9223372036854775807', X_BLOB, '-1'])} WHERE rowid % {r.randrange(1, 4)} = 0",
    lambda r: f"UPDATE StringIds SET value = {r.choice([X_BLOB, 'NULL', '123', 'hex(zeroblob(600))', chr(39) + 'sm1_' * 2000 + chr(39)])}",
    lambda r: f"DROP TABLE {r.choice(['StringIds', 'CUPTI_ACTIVITY_KIND_RUNTIME', 'NVTX_EVENTS', 'TARGET_INFO_GPU', 'CUPTI_ACTIVITY_KIND_MEMCPY'])}",
    lambda r: "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL SELECT start + 1000000, end + 1000000, deviceId, streamId, "
              "correlationId, demangledName, shortName, graphNodeId FROM CUPTI_ACTIVITY_KIND_KERNEL",
    lambda r: "ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL ADD COLUMN g INTEGER GENERATED ALWAYS AS (start * 2) VIRTUAL",
    lambda r: "ALTER TABLE StringIds RENAME COLUMN value TO v",
    lambda r: "CREATE VIEW v AS SELECT * FROM StringIds",
    lambda r: "UPDATE NVTX_EVENTS SET text = " + r.choice(["'ProfilerStep#1'", "NULL", X_BLOB, "'x'"]),
    lambda r: "DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL",
]
X_BLOB = "X'00ff41'"


def _mutate_sqlite(path: Path, rng: random.Random) -> None:
    db = sqlite3.connect(path)
    try:
        for _ in range(rng.randrange(1, 4)):
            try:
                db.execute(rng.choice(_SQL)(rng))
            except sqlite3.DatabaseError:
                pass
        db.commit()
    finally:
        db.close()
    if rng.random() < 0.2:  # a damaged file
        data = bytearray(path.read_bytes())
        for _ in range(rng.randrange(1, 20)):
            data[rng.randrange(100, len(data))] = rng.randrange(256)
        path.write_bytes(bytes(data))
