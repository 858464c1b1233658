"""Issue 30 item 13: `specs H100` and `specs A100` answer with the parts the short name stands for (exit 0); a short
name of one part shows its sheet; a name of no part is still one line and exit 2."""

from __future__ import annotations

import pytest

from support.cli import investigate, one_line


@pytest.mark.parametrize("short,parts", [
    ("H100", ["NVIDIA H100 80GB HBM3", "NVIDIA H100 PCIe", "NVIDIA H100 NVL"]),
    ("A100", ["NVIDIA A100-PCIE-40GB", "NVIDIA A100 80GB PCIe", "NVIDIA A100-SXM4-40GB", "NVIDIA A100-SXM4-80GB"]),
])
def test_a_short_name_of_several_parts_lists_them(tmp_path, short, parts):
    proc = investigate("specs", short, tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert f"{short!r} stands for {len(parts)} GPUs" in proc.stdout
    rows = [ln.split("  ")[0] for ln in proc.stdout.splitlines() if ln.startswith("NVIDIA ")]
    assert sorted(rows) == sorted(parts)
    assert "investigate specs \"" in proc.stdout  # how to see one sheet


def test_a_short_name_of_one_part_shows_its_sheet(tmp_path):
    proc = investigate("specs", "MI300", tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("AMD Instinct MI300X  (CDNA 3")


def test_a_name_of_no_part_is_still_bad_input(tmp_path):
    one_line(investigate("specs", "H999", tmp_path=tmp_path), 2, "unknown GPU 'H999'")


def test_roofline_reads_a_short_name_as_specs_does(tmp_path):
    # issue 43: `roofline --gpu H100` said "unknown GPU 'H100'" while `specs H100` answered
    proc = investigate("roofline", "--gpu", "H100", "--dtype", "fp8", "-m", "16", "-n", "4096", "-k", "4096",
                       tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "'H100' stands for 3 GPUs" in proc.stdout
    rows = [ln.strip() for ln in proc.stdout.splitlines()[1:]]
    assert [r.split("  ")[0] for r in rows] == ["NVIDIA H100 80GB HBM3", "NVIDIA H100 PCIe", "NVIDIA H100 NVL"]
    assert all("memory" in r and "floor" in r for r in rows)
    one = investigate("roofline", "--gpu", "NVIDIA H100 PCIe", "--dtype", "fp8", "-m", "16", "-n", "4096", "-k",
                      "4096", tmp_path=tmp_path)
    assert one.stdout.startswith("GEMM M=16 N=4096 K=4096 fp8 on NVIDIA H100 PCIe")


def test_reference_reads_a_short_name_as_specs_does(tmp_path):
    proc = investigate("reference", "--gpu", "H100", "--model", "llama-3.1-70b", tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("'H100' stands for 3 GPUs") and "read as NVIDIA H100 80GB HBM3" in proc.stdout
    one_line(investigate("roofline", "--gpu", "H1OO", "--dtype", "fp8", "-m", "1", "-n", "1", "-k", "1",
                         tmp_path=tmp_path), 2, "unknown GPU 'H1OO'")
