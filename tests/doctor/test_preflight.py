"""The multi-GPU preflight on real public outputs (tests/fixtures/doctor/interconnect/README.md names each source)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hipwizard.cli import main as cli_main
from hipwizard.doctor.interconnect import preflight
from hipwizard.doctor.judge.interconnect import MI300X, judge_environment, judge_kernel, preflight_checks
from hipwizard.doctor.read.interconnect import read_rccl_tests, read_topology, read_transferbench
from hipwizard.errors import UserError
from hipwizard.runner import RunResult

F = Path(__file__).resolve().parent.parent / "fixtures" / "doctor" / "interconnect"


def text(name: str) -> str:
    return (F / name).read_text()


def by_id(checks, cid):
    return [c for c in checks if c.id == cid]


def test_rccl_tests_allreduce_of_8_mi300x_is_read_and_passes():
    run = read_rccl_tests(text("rccl-tests-allreduce-8xMI300X-VF.txt"))
    assert run.ranks == 8 and set(run.devices) == {"AMD Instinct MI300X VF"} and run.hosts == ("c42f4555f685",)
    assert len(run.rows) == 25 and run.rows[0].size == 8 and run.largest.size == 134217728
    assert (run.largest.busbw_oop, run.largest.busbw_ip) == (293.07, 289.60) and run.avg_busbw == 54.8575
    [check] = preflight_checks(rccl=[run])
    assert check.status == "ok" and "293.1 GB/s" in check.found and f"{MI300X.allreduce_1node:g}" in check.found


def test_a_latency_bound_run_is_not_judged_and_wrong_results_fail():
    lines = text("rccl-tests-allreduce-8xMI300X-VF.txt").splitlines()
    small = "\n".join(ln for ln in lines if not ln.strip().startswith(("67108864", "134217728")))
    [check] = preflight_checks(rccl=[read_rccl_tests(small)])
    assert check.status == "warn" and "latency-bound" in check.found
    wrong = "\n".join(ln.replace("293.07      0", "293.07      3") for ln in lines)
    [check] = preflight_checks(rccl=[read_rccl_tests(wrong)])
    assert check.status == "fail" and "3 result(s) wrong" in check.found


def test_transferbench_p2p_of_mi300x_passes_the_cvs_floors():
    run = read_transferbench(text("transferbench-p2p-MI300X.txt"))
    assert run.gpus == 8 and run.unidir["GPU->GPU"] == 48.65 and run.bidir["GPU->GPU"] == 46.28
    assert run.unidir["CPU->GPU"] == 33.67 and len(run.gpu_pairs) == 56 and run.gpu_pairs[(0, 1)] == 48.83
    [check] = preflight_checks(transferbench=[run])
    assert check.id == "transferbench-p2p" and check.status == "ok"
    # the same output judged as another platform's: unjudged, never judged against MI300X numbers
    [check] = preflight_checks(transferbench=[run], platform="MI250X")
    assert check.status == "warn" and "not judged" in check.found


def test_one_slow_xgmi_pair_in_a_real_matrix_is_named():
    lines = text("transferbench-p2p-MI300X.txt").splitlines()
    i = next(k for k, ln in enumerate(lines) if ln.strip().startswith("GPU 03  ->"))
    lines[i] = lines[i].replace("49.07   1877.42", "12.30   1877.42")  # GPU 03 -> GPU 02 degraded
    [check] = preflight_checks(transferbench=[read_transferbench("\n".join(lines))])
    assert check.status == "warn" and "GPU 3->2 12.3 GB/s" in check.found


@pytest.mark.parametrize("name, tool, gpus, status, words", [
    ("amd-smi-topology-8xMI300X.txt", "amd-smi", 8, "ok", "28 pair(s) XGMI"),
    ("rocm-smi-showtopo-8xMI308X.txt", "rocm-smi", 8, "ok", "28 pair(s) XGMI"),
    ("rocm-smi-showtopo-4gpu-pcie.txt", "rocm-smi", 4, "fail", "not over xGMI: GPU0-GPU1"),
    ("rocm-smi-showtopo-MI300X-TPX.txt", "rocm-smi", 12, "warn", "link type unknown (XXXX) for GPU1-GPU2"),
])
def test_topologies_healthy_and_not(name, tool, gpus, status, words):
    topo = read_topology(text(name))
    assert topo.tool == tool and len(topo.devices) == gpus
    [check] = preflight_checks(topology=[topo])
    assert check.status == status and words in check.found, check.found


def test_hops_and_weights_are_read_where_printed():
    topo = read_topology(text("rocm-smi-showtopo-4gpu-pcie.txt"))
    assert set(topo.hops.values()) == {3} and set(topo.weight.values()) == {52}
    tpx = read_topology(text("rocm-smi-showtopo-MI300X-TPX.txt"))
    assert tpx.weight == {} and tpx.notes[0].startswith("get_link_weight_topology, Not supported")
    assert read_topology(text("transferbench-p2p-MI300X.txt")) is None  # not a topology
    assert read_rccl_tests(text("amd-smi-topology-8xMI300X.txt")) is None


def test_risky_collective_variables_and_kernel_settings():
    check = judge_environment({"NCCL_P2P_DISABLE": "1", "TORCH_NCCL_ASYNC_ERROR_HANDLING": "0", "NCCL_DEBUG": "INFO"})
    assert check.status == "warn" and "NCCL_P2P_DISABLE=1" in check.found and "hangs forever" in check.found
    assert "NCCL_DEBUG" not in check.fix
    assert judge_environment({"NCCL_DEBUG": "INFO", "NCCL_P2P_DISABLE": "0"}).status == "ok"
    acs = ["\t\tACSCtl:\tSrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd- EgressCtrl- DirectTrans-"]
    check = judge_kernel("BOOT_IMAGE=/vmlinuz amd_iommu=on quiet", "1\n", acs)
    assert check.status == "warn" and "iommu=pt" in check.found and "NUMA auto-balancing is on" in check.found
    assert "ACS redirection is on at 1 bridge" in check.found
    assert judge_kernel("BOOT_IMAGE=/vmlinuz amd_iommu=on iommu=pt", "0", []).status == "ok"


class RecordedNode:
    """This node as the fixtures recorded it: amd-smi answers, TransferBench and lspci are not installed."""

    def which(self, name):
        return name if name == "amd-smi" else None

    def run(self, argv, *, timeout=30.0, env=None, cwd=None):
        return RunResult(tuple(argv), "ok", 0, text("amd-smi-topology-8xMI300X.txt"))


def test_live_preflight_asks_the_node_and_says_what_is_missing(tmp_path):
    result = preflight(live=True, runner=RecordedNode(), env={})
    assert result.read == ["amd-smi topology: amd-smi topology (8 GPUs)"]
    assert "TransferBench is not installed: not measured live" in result.notes
    assert [c.id for c in result.checks][:1] == ["xgmi-links"] and not result.failed


def test_bad_inputs_are_one_line_refusals(tmp_path):
    with pytest.raises(UserError, match="is not a file"):
        preflight([tmp_path / "missing.txt"])
    other = tmp_path / "other.txt"
    other.write_text("hello\n")
    with pytest.raises(UserError, match="nothing to judge"):
        preflight([other])


def test_cli_exit_codes(capsys):
    assert cli_main(["preflight", str(F / "amd-smi-topology-8xMI300X.txt")]) == 0
    assert cli_main(["preflight", str(F / "rocm-smi-showtopo-4gpu-pcie.txt")]) == 1
    out = capsys.readouterr().out
    assert "✖ fail" in out and "not over xGMI" in out
    assert cli_main(["preflight", "/nonexistent/file.txt"]) == 2
