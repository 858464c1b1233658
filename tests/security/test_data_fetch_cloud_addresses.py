"""Issue 23: 168.63.129.16 (Azure WireServer) and the other cloud metadata/control addresses are private to fetch."""

from __future__ import annotations

import ipaddress

import anyio
import pytest

from orchestrator.tools.netpolicy import FetchRefused, address_refusal, resolve_checked


@pytest.mark.parametrize("addr", ["168.63.129.16", "::ffff:168.63.129.16", "64:ff9b::a83f:8110", "169.254.169.254",
                                  "fd00:ec2::254", "fd00:ec2::23", "100.100.100.200", "169.254.0.23"])
def test_cloud_metadata_and_control_addresses_are_refused(addr):
    why = address_refusal(ipaddress.ip_address(addr))
    assert why is not None and str(ipaddress.ip_address(addr)) in why


def test_the_refusal_names_the_azure_wireserver_and_holds_for_a_literal_url_host():
    with pytest.raises(FetchRefused, match="WireServer"):
        anyio.run(lambda: resolve_checked("168.63.129.16", 80, allow_private=False))


@pytest.mark.parametrize("addr", ["168.63.129.15", "168.63.129.17", "8.8.8.8", "2606:4700::1111"])
def test_neighbouring_public_addresses_stay_public(addr):
    assert address_refusal(ipaddress.ip_address(addr)) is None
