"""The KV hand-off of a disaggregated deployment: the prefill worker computes the prompt's KV cache and a KV connector
moves it to the decode worker, which then streams the answer. The time to first token at the frontend is the prefill
worker's own plus the hand-off (the transfer and the decode worker's wait for the blocks and its first step); the
residual between the two figures is read against the bytes moved (prompt tokens x KV bytes per token), the rate they
imply, and the transport the connector's library negotiated (UCX says when the device it was given is not there and
it falls back to TCP; NCCL's socket transport; an environment that leaves no RDMA transport), against the host's links (the NIC's line rate, the RDMA devices' rate). Pure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

_CONNECTOR = (
    # vLLM: --kv-transfer-config '{"kv_connector":"NixlConnector",...}', and its "non-default args" line
    # (KVTransferConfig(kv_connector='NixlConnector', ...)); vllm/config/kv_transfer.py
    re.compile(r"""kv_connector['"]?\s*[:=]\s*['"]?([A-Za-z]\w+)"""),
    # SGLang: --disaggregation-mode prefill|decode [--disaggregation-transfer-backend mooncake|nixl|...]
    re.compile(r"--disaggregation-transfer-backend[ =](\w+)"),
    re.compile(r"--disaggregation-mode[ =](?:prefill|decode)\b()"),
)
_PREFILL_ROLE = re.compile(r"""kv_role['"]?\s*[:=]\s*['"]?kv_producer|--disaggregation-mode[ =]prefill\b""")
_UCX_FALLBACK = re.compile(r"UCX\s+WARN\s+network device '([^']+)' is not available, please use one or more of: (.+)")
"""UCX's own warning when the device UCX_NET_DEVICES names is not usable (openucx ucp_context.c): the transports it
lists instead are what it uses."""
_PREFILL_RUN = re.compile(r"(?i)\bprefill\b")
_RATE = re.compile(r"(\d+(?:\.\d+)?)\s*Gb/sec")

HANDOFF_SLOW_SHARE = 0.3
"""The hand-off's share of the frontend's TTFT from which it is a residual to explain (below it the prefill is the
bulk and the hand-off is said as reconciled)."""
HANDOFF_NOISE_MS = 100.0


@dataclass
class Handoff:
    connector: str
    connector_src: str
    frontend_ms: float
    frontend_src: str
    prefill_ms: float
    prefill_src: str
    tokens: float | None = None
    kv_bytes_per_token: float | None = None
    kv_src: str = ""
    transport: str | None = None
    transport_line: str = ""
    tcp_nic: str | None = None
    tcp_gbit: float | None = None
    tcp_rx_gbit: float | None = None
    rdma: str | None = None
    rdma_gbit: float | None = None

    @property
    def ms(self) -> float:
        return self.frontend_ms - self.prefill_ms

    @property
    def share(self) -> float:
        return self.ms / self.frontend_ms if self.frontend_ms > 0 else 0.0

    @property
    def slow(self) -> bool:
        return self.share >= HANDOFF_SLOW_SHARE and self.ms >= HANDOFF_NOISE_MS

    @property
    def bytes(self) -> float | None:
        return self.tokens * self.kv_bytes_per_token if self.tokens and self.kv_bytes_per_token else None

    @property
    def rate_gbit(self) -> float | None:
        """The rate the hand-off's bytes imply if the whole residual were the transfer (a lower bound of the link's
        rate in use)."""
        b = self.bytes
        return b * 8 / (self.ms / 1e3) / 1e9 if b and self.ms > 0 else None

    @property
    def at_tcp_line_rate(self) -> bool:
        r = self.rate_gbit
        return bool(r and self.tcp_gbit and 0.6 * self.tcp_gbit <= r <= 1.15 * self.tcp_gbit
                    and (self.rdma_gbit is None or r < 0.5 * self.rdma_gbit))

    def arithmetic(self) -> str:
        text = (f"TTFT {self.frontend_ms:,.0f} ms at the frontend ({self.frontend_src}) = the prefill worker's "
                f"{self.prefill_ms:,.0f} ms ({self.prefill_src}) + {self.ms:,.0f} ms ({self.share:.0%}) for the hand-off "
                "to the decode worker")
        if self.bytes:
            text += (f"; the KV cache of {self.tokens:,.0f} prompt tokens x {self.kv_bytes_per_token:,.0f} B per token "
                     f"= {self.bytes / 1e9:.3g} GB per request")
            if self.rate_gbit:
                text += (f", {self.bytes / 1e9:.3g} GB in {self.ms:,.0f} ms = {self.rate_gbit / 8:.3g} GB/s "
                         f"({self.rate_gbit:.3g} Gb/s)")
        return text

    def facts(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "request.kv.connector": self.connector, "request.kv.connector_source": self.connector_src,
            "request.kv.frontend_ttft_ms": self.frontend_ms, "request.kv.prefill_ttft_ms": self.prefill_ms,
            "request.kv.handoff_ms": self.ms, "request.kv.handoff_share": self.share,
            "request.kv.arithmetic": self.arithmetic()}
        if self.bytes:
            out["request.kv.bytes_gb"] = self.bytes / 1e9
        if self.rate_gbit:
            out["request.kv.rate_gbit"] = self.rate_gbit
            out["request.kv.rate_gbyte"] = self.rate_gbit / 8
        if self.transport:
            out["request.kv.transport"] = self.transport
            out["request.kv.transport_line"] = self.transport_line
        if self.tcp_nic:
            out["request.kv.tcp_nic"] = self.tcp_nic
            out["request.kv.tcp_nic_gbit"] = self.tcp_gbit
            if self.tcp_rx_gbit is not None:
                out["request.kv.tcp_nic_rx_gbit"] = self.tcp_rx_gbit
        if self.rdma:
            out["request.kv.rdma_device"] = self.rdma
            if self.rdma_gbit:
                out["request.kv.rdma_gbit"] = self.rdma_gbit
        if self.tcp_gbit and self.rate_gbit:
            out["request.kv.at_tcp_line_rate"] = self.at_tcp_line_rate
        return out


def connector_of(lines: list[str]) -> tuple[str, str, bool] | None:
    """The KV connector the engine was started with (its name, the line, whether this engine is the prefill side)."""
    for ln in lines:
        for rx in _CONNECTOR:
            m = rx.search(ln)
            if m:
                return (m.group(1) or "disaggregation"), ln.strip()[:300], bool(_PREFILL_ROLE.search(ln))
    return None


_NCCL_SOCKET = re.compile(r"NCCL INFO (?:NET/Socket : Using|Using network Socket)")
"""NCCL's own line when it moves data over sockets rather than InfiniBand/RoCE (a KV connector built on NCCL)."""
_NOT_RDMA_TLS = {"tcp", "sm", "shm", "self", "posix", "sysv", "cma", "knem", "xpmem", "cuda_copy", "cuda_ipc",
                 "rocm_copy", "rocm_ipc", "gdr_copy", "cuda", "rocm"}
"""UCX transports (UCX_TLS names) that carry nothing between hosts but TCP: a list of only these leaves UCX no RDMA
transport (rc, dc, ud and their _x/_mlx5 forms, or `ib`)."""


def transport_of(lines: list[str], env: dict[str, str] | None = None) -> tuple[str, str] | None:
    """The transport the KV connector's library uses between hosts, where it is not RDMA ("tcp"), with what says so:
    UCX's own fallback warning, NCCL's socket line, or the process's environment leaving no RDMA transport
    (UCX_TLS of only TCP and local transports; NCCL_IB_DISABLE=1)."""
    for ln in lines:
        m = _UCX_FALLBACK.search(ln)
        if m and "(tcp)" in m.group(2):
            return "tcp", ln.strip()[:300]
        if _NCCL_SOCKET.search(ln):
            return "tcp", ln.strip()[:300]
    env = env or {}
    tls = env.get("UCX_TLS", "").strip()
    if tls and not tls.startswith("^") and tls.lower() != "all":
        names = {t.strip().lower() for t in tls.split(",") if t.strip()}
        if names and names <= _NOT_RDMA_TLS and "tcp" in names:
            return "tcp", f"UCX_TLS={tls} in the engine's environment"
    if env.get("NCCL_IB_DISABLE", "").strip() == "1":
        return "tcp", "NCCL_IB_DISABLE=1 in the engine's environment"
    return None


def rdma_rate(devices: list[Any]) -> tuple[str, float] | None:
    """The fastest active RDMA port on the host (`400 Gb/sec (4X NDR)`)."""
    best: tuple[str, float] | None = None
    for d in devices:
        for p in getattr(d, "ports", []) or []:
            m = _RATE.search(str(getattr(p, "rate", "") or ""))
            if m and "ACTIVE" in str(getattr(p, "state", "") or "").upper():
                g = float(m.group(1))
                if best is None or g > best[1]:
                    best = (str(getattr(d, "name", "?")), g)
    return best


def handoff(lines: list[str], runs: list[tuple[str, str, float]], engine_ttft: tuple[float, str] | None,
            tokens: float | None, kv: tuple[float, str] | None, nics: list[Any],
            rdma: tuple[str, float] | None, env: dict[str, str] | None = None) -> Handoff | None:
    """The hand-off where the engine runs with a KV connector and both TTFT figures are known: the frontend's (a
    client run) and the prefill worker's (a run measured there: its label or source names the prefill, or this
    engine's own TTFT when it is the prefill side). `runs`: (label, source, TTFT ms)."""
    conn = connector_of(lines)
    if conn is None:
        return None
    pre = next(((lab, t) for lab, src, t in runs if _PREFILL_RUN.search(f"{lab} {src}")), None)
    if pre is None and conn[2] and engine_ttft is not None:
        pre = (engine_ttft[1], engine_ttft[0])
    front = next(((lab, t) for lab, src, t in runs if not _PREFILL_RUN.search(f"{lab} {src}")), None)
    if pre is None or front is None or front[1] <= 0:
        return None
    h = Handoff(connector=conn[0], connector_src=conn[1], frontend_ms=front[1], frontend_src=front[0],
                prefill_ms=pre[1], prefill_src=pre[0], tokens=tokens, kv_bytes_per_token=kv[0] if kv else None,
                kv_src=kv[1] if kv else "")
    tr = transport_of(lines, env)
    if tr:
        h.transport, h.transport_line = tr
    busiest = max((n for n in nics if getattr(n, "speed_mbit", None)), default=None,
                  key=lambda n: max(n.rx_bytes_per_s, n.tx_bytes_per_s))
    if busiest is not None:
        h.tcp_nic, h.tcp_gbit = busiest.name, busiest.speed_mbit / 1e3
        h.tcp_rx_gbit = busiest.rx_bytes_per_s * 8 / 1e9
    if rdma:
        h.rdma, h.rdma_gbit = rdma
    return h
