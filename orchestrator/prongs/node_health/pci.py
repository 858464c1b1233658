"""PCI readings shared by the node's parsers and its facts: one device under its several address spellings, and the
link generation of a transfer speed. Imports nothing of the node's models (the facts read the models, the models'
`facts()` reads the facts)."""

from __future__ import annotations


GEN_OF_SPEED = {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4, 32.0: 5, 64.0: 6}


def same_pci(a: str | None, b: str | None) -> bool:
    """Whether two PCI addresses name the same device ("00000000:18:00.0", "0000:18:00", "18:00.0")."""
    if not a or not b:
        return False

    def key(x: str) -> tuple[str, str, str]:
        x = x.strip().lower().removeprefix("pci:")
        parts = x.split(":")
        if len(parts) == 3:
            dom, bus, rest = parts
        elif len(parts) == 2:
            dom, (bus, rest) = "0", parts
        else:
            return ("?", x, "")
        dev = rest.split(".")[0]
        return (dom.lstrip("0") or "0", bus.lstrip("0") or "0", dev.lstrip("0") or "0")

    return key(a) == key(b)
