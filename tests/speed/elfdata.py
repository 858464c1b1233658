"""Synthetic ELF files with a .nv_fatbin section (and a .rodata section), laid out as the probes read them."""

from __future__ import annotations

import struct

PLAIN = 0x8011
"""Flags of a plain sm_XX image, as read off torch 2.11's libtorch_cuda.so (64-bit, Linux, compressed)."""
ARCH_SPECIFIC = 0x108011
"""Flags of an sm_XXa image there."""


def entry(kind: int, arch: int, flags: int, payload: bytes = b"\x28\xb5\x2f\xfd" + b"x" * 13,
          header_size: int = 64) -> bytes:
    """One fatbin entry: header (kind, header size at 4, payload size at 8, arch at 28, flags at 40) + payload."""
    padded = payload + b"\0" * (-len(payload) % 8)
    head = bytearray(header_size)
    struct.pack_into("<HHIQ", head, 0, kind, 0x0101, header_size, len(padded))
    struct.pack_into("<I", head, 16, len(payload))
    struct.pack_into("<I", head, 28, arch)
    struct.pack_into("<Q", head, 40, flags)
    return bytes(head) + padded


def container(*entries: bytes) -> bytes:
    body = b"".join(entries)
    return struct.pack("<IHHQ", 0xBA55ED50, 1, 16, len(body)) + body


def elf(sections: dict[str, bytes]) -> bytes:
    """A 64-bit little-endian ELF file holding these sections (plus .shstrtab), section table at the end."""
    names = b"\0"
    name_off = {}
    for n in [*sections, ".shstrtab"]:
        name_off[n] = len(names)
        names += n.encode() + b"\0"
    data = bytearray(64)
    placed = []
    for n, body in [*sections.items(), (".shstrtab", names)]:
        data += b"\0" * (-len(data) % 16)
        placed.append((n, len(data), len(body)))
        data += body
    data += b"\0" * (-len(data) % 8)
    shoff = len(data)
    table = bytearray(64)  # the null section
    for n, off, size in placed:
        table += struct.pack("<IIQQQQIIQQ", name_off[n], 1, 0, 0, off, size, 0, 0, 1, 0)
    data += table
    head = bytearray(64)
    head[:7] = b"\x7fELF\x02\x01\x01"
    struct.pack_into("<HHI", head, 16, 3, 62, 1)
    struct.pack_into("<Q", head, 0x28, shoff)
    struct.pack_into("<HHHHHH", head, 0x34, 64, 0, 0, 64, len(placed) + 1, len(placed))
    data[:64] = head
    return bytes(data)
