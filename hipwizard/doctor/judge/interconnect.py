"""Judge a node's GPU interconnect before a multi-GPU run: bandwidths against AMD's published numbers, missing
XGMI links, NCCL/RCCL variables and kernel settings known to slow or hang collectives.

``preflight_checks(...)`` returns doctor ``Check`` rows (ok / warn / fail, what was found, why, the fix), one
per question. The expected numbers are AMD's own, each with its source (``EXPECTED``); a run on a platform they
do not cover is shown and said to be unjudged, never judged against another platform's numbers.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from hipwizard.doctor.models import Check
from hipwizard.doctor.read.interconnect import RcclRun, Topology, TransferBenchRun

CVS = ("AMD Cluster Validation Suite, cvs/input/config_file/health/mi300_health_config.json (ROCm/cvs "
       "dddd9143): transferbench results")
CVS_RCCL = "AMD Cluster Validation Suite, cvs/input/config_file/rccl/rccl_config.json (ROCm/cvs dddd9143), 2-node results"
BLOG = ("AMD ROCm blog 'Understanding RCCL Bandwidth and xGMI Performance on AMD Instinct MI300X' (2025-03-02): "
        "64 GB/s raw, about 48 GB/s usable per xGMI link, each GPU linked to its 7 peers")


@dataclass(frozen=True)
class Expected:
    """What a healthy node of one platform reaches (GB/s) and where the number comes from."""

    platform: str
    p2p_unidir: float
    p2p_bidir: float
    a2a_rtotal: float
    allreduce_1node: float  # bus bandwidth floor for 8 ranks at a message of at least ALLREDUCE_MIN_BYTES
    allreduce_2node: dict[int, float]  # message bytes -> bus bandwidth floor, 16 ranks
    sources: tuple[str, ...]


USABLE_LINK_GBPS = 48.0
PEERS = 7
ALLREDUCE_SHARE = 0.8  # of the usable xGMI bandwidth of a GPU's 7 links
ALLREDUCE_MIN_BYTES = 64 * 2**20  # smaller messages are latency-bound: their bandwidth says little
MI300X = Expected("MI300X", p2p_unidir=33.9, p2p_bidir=43.9, a2a_rtotal=320.0,
                  allreduce_1node=round(ALLREDUCE_SHARE * PEERS * USABLE_LINK_GBPS, 1),
                  allreduce_2node={8589934592: 330.0, 17179869184: 350.0}, sources=(CVS, CVS_RCCL, BLOG))
EXPECTED = {"MI300X": MI300X}
MI300X_CUS = 304


def platform_of(names: list[str] | tuple[str, ...]) -> str | None:
    """The platform whose numbers apply to these device names (MI300X, MI300X VF), or None."""
    text = " ".join(names)
    return "MI300X" if re.search(r"MI300X", text, re.I) else None


def judge_rccl(run: RcclRun, expected: Expected | None) -> Check:
    why = "All-reduce bus bandwidth is what data-parallel training waits on every step; a slow or broken link shows here."
    largest = run.largest
    found = (f"{run.test or 'rccl-tests'}: {run.ranks or '?'} ranks on {len(run.hosts) or '?'} host(s), "
             f"peak bus bandwidth {run.peak_busbw:.1f} GB/s, largest message {largest.size / 2**20:.0f} MiB "
             f"at {largest.busbw_oop:.1f} GB/s") if largest and run.peak_busbw is not None else "no result rows"
    wrong = sum(r.wrong for r in run.rows)
    if wrong:
        return Check("rccl-tests", "RCCL collectives", "fail", found + f"; {wrong} result(s) wrong", why,
                     "wrong results mean corrupted data: check the GPUs' RAS/ECC counters and the XGMI links "
                     "(amd-smi metric --ecc, amd-smi topology) before training")
    if expected is None or largest is None:
        return Check("rccl-tests", "RCCL collectives", "warn", found + "; no published numbers for this platform: "
                     "not judged", why, "")
    if "all_reduce" not in run.test and run.test:
        return Check("rccl-tests", "RCCL collectives", "ok", found + " (only all_reduce_perf is judged)", why, "")
    if largest.size < ALLREDUCE_MIN_BYTES:
        return Check("rccl-tests", "RCCL collectives", "warn", found + f"; messages under {ALLREDUCE_MIN_BYTES >> 20} "
                     "MiB are latency-bound: not judged", why, "run all_reduce_perf -b 8 -e 8G -f 2 to reach the "
                     "bandwidth-bound sizes")
    hosts = max(len(run.hosts), 1)
    if hosts == 1:
        floor, source = expected.allreduce_1node, (f"{ALLREDUCE_SHARE:.0%} of {PEERS} x {USABLE_LINK_GBPS:g} GB/s "
                                                   f"usable xGMI ({BLOG})")
        measured = max(r.busbw_oop for r in run.rows if r.size >= ALLREDUCE_MIN_BYTES)
    elif hosts == 2:
        sizes = [s for s in expected.allreduce_2node if any(r.size == s for r in run.rows)]
        if not sizes:
            return Check("rccl-tests", "RCCL collectives", "warn", found + "; the published 2-node numbers are at "
                         "8 GiB and 16 GiB messages, which this run did not reach: not judged", why,
                         "run all_reduce_perf -b 8 -e 16G -f 2")
        size = max(sizes)
        floor, source = expected.allreduce_2node[size], CVS_RCCL
        measured = next(r.busbw_oop for r in run.rows if r.size == size)
    else:
        return Check("rccl-tests", "RCCL collectives", "warn", found + f"; no published numbers for {hosts} nodes: "
                     "not judged", why, "")
    if measured < floor:
        return Check("rccl-tests", "RCCL collectives", "fail", found + f"; {measured:.1f} GB/s is below the "
                     f"{floor:g} GB/s a healthy {expected.platform} node reaches ({source})", why,
                     "find the slow link: run TransferBench p2p and look for a GPU pair far below the others; check "
                     "`amd-smi topology` for a missing XGMI link, NUMA balancing (off), IOMMU (iommu=pt)")
    return Check("rccl-tests", "RCCL collectives", "ok", found + f"; at least the {floor:g} GB/s expected "
                 f"({source.split(',')[0]})", why, "")


def judge_transferbench(run: TransferBenchRun, expected: Expected | None) -> list[Check]:
    why = "GPU-to-GPU copy bandwidth over xGMI is what RCCL builds its rings on."
    out = []
    uni, bi = run.unidir.get("GPU->GPU"), run.bidir.get("GPU->GPU")
    if run.unidir or run.bidir:
        found = f"p2p GPU->GPU averages: unidirectional {_gb(uni)}, bidirectional {_gb(bi)}"
        if uni is None and bi is None:
            out.append(Check("transferbench-p2p", "GPU peer-to-peer", "warn", found + " (no GPU pair measured: one "
                             "GPU, or peer access off)", why, "run it on a node with all its GPUs visible"))
        elif expected is None:
            out.append(Check("transferbench-p2p", "GPU peer-to-peer", "warn", found + "; no published numbers for "
                             "this platform: not judged", why, ""))
        else:
            low = []
            if uni is not None and uni < expected.p2p_unidir:
                low.append(f"unidirectional {uni:.1f} < {expected.p2p_unidir:g}")
            if bi is not None and bi < expected.p2p_bidir:
                low.append(f"bidirectional {bi:.1f} < {expected.p2p_bidir:g}")
            slow_pairs = _slow_pairs(run.gpu_pairs)
            if low:
                out.append(Check("transferbench-p2p", "GPU peer-to-peer", "fail", found + "; " + "; ".join(low)
                                 + f" GB/s ({CVS})", why, "look for the slow pair in the matrix and its link in "
                                 "`amd-smi topology`; reseat or RMA a card whose links are all slow"))
            elif slow_pairs:
                out.append(Check("transferbench-p2p", "GPU peer-to-peer", "warn", found + "; but " + slow_pairs,
                                 why, "a single slow pair is a degraded xGMI link: check `amd-smi metric --xgmi-err`"))
            else:
                out.append(Check("transferbench-p2p", "GPU peer-to-peer", "ok", found + f" GB/s; at least "
                                 f"{expected.p2p_unidir:g} / {expected.p2p_bidir:g} expected (AMD CVS)", why, ""))
    if run.a2a_rtotal:
        low_a2a = [(i, v) for i, v in enumerate(run.a2a_rtotal) if expected and v < expected.a2a_rtotal]
        found = "a2a RTotal per GPU: " + ", ".join(f"{v:.1f}" for v in run.a2a_rtotal) + " GB/s"
        if expected is None:
            out.append(Check("transferbench-a2a", "GPU all-to-all", "warn", found + "; not judged (platform)", why, ""))
        elif low_a2a:
            out.append(Check("transferbench-a2a", "GPU all-to-all", "fail", found + "; GPU " + ", ".join(
                str(i) for i, _ in low_a2a) + f" below {expected.a2a_rtotal:g} ({CVS})", why,
                "a GPU that receives slowly from all the others has a link or a card problem"))
        else:
            out.append(Check("transferbench-a2a", "GPU all-to-all", "ok", found + f"; at least {expected.a2a_rtotal:g} "
                             "expected (AMD CVS)", why, ""))
    return out


def _gb(v: float | None) -> str:
    return "N/A" if v is None else f"{v:.2f}"


def _slow_pairs(pairs: Mapping[tuple[int, int], float], share: float = 0.75) -> str:
    """GPU pairs under ``share`` of the median pair (one degraded link among healthy ones)."""
    if len(pairs) < 3:
        return ""
    values = sorted(pairs.values())
    med = values[len(values) // 2]
    slow = [f"GPU {a}->{b} {v:.1f} GB/s" for (a, b), v in sorted(pairs.items()) if v < share * med]
    return f"{len(slow)} pair(s) under {share:.0%} of the median {med:.1f} GB/s: " + ", ".join(slow[:6]) if slow else ""


def judge_topology(topo: Topology, *, expect_xgmi: bool = True) -> Check:
    why = ("On an MI300X platform every GPU reaches every other over one xGMI hop; a pair over PCIe routes "
           "collectives through the CPU (slow, and the ring RCCL builds can hang when a link drops).")
    n = len(topo.devices)
    pairs = [(i, j) for i in range(n) for j in range(n) if i < j]
    kinds: dict[str, list[tuple[int, int]]] = {}
    for p in pairs:
        kinds.setdefault(topo.link.get(p, "?"), []).append(p)
    found = f"{topo.tool}: {n} GPUs, " + ", ".join(f"{len(v)} pair(s) {k}" for k, v in sorted(kinds.items()))
    multi_hop = [p for p in pairs if topo.hops.get(p, 1) > 1 and topo.link.get(p) == "XGMI"]

    def names(ps: list[tuple[int, int]]) -> str:
        return ", ".join(f"{topo.devices[a]}-{topo.devices[b]}" for a, b in ps[:6]) + (" ..." if len(ps) > 6 else "")

    not_xgmi = [p for p in pairs if topo.link.get(p) not in ("XGMI", "XXXX")]
    unknown = kinds.get("XXXX", [])
    if not_xgmi and expect_xgmi:
        return Check("xgmi-links", "xGMI links", "fail", found + f"; not over xGMI: {names(not_xgmi)}", why,
                     "check that all GPUs are one hive (amd-smi static --bus, xgmi_hive_id in sysfs), the XGMI "
                     "firmware and cabling/baseboard; inside a VM make sure every GPU of the hive is passed through")
    if unknown:
        return Check("xgmi-links", "xGMI links", "warn", found + f"; link type unknown (XXXX) for {names(unknown)}"
                     + (f"; {topo.notes[0]}" if topo.notes else ""), why,
                     "rocm-smi cannot read links between partitions (CPX/TPX modes): read `amd-smi topology`, or run "
                     "TransferBench p2p to measure them")
    if multi_hop:
        return Check("xgmi-links", "xGMI links", "warn", found + f"; more than one hop: {names(multi_hop)}", why,
                     "a fully connected MI300X node has one hop between every pair")
    return Check("xgmi-links", "xGMI links", "ok", found, why, "")


# --- environment and kernel -------------------------------------------------------------------------------------
RISKY_ENV = {
    "NCCL_P2P_DISABLE": (lambda v: v not in ("", "0"), "turns off GPU peer access: collectives go through host memory "
                         "(several times slower on xGMI)"),
    "NCCL_SHM_DISABLE": (lambda v: v not in ("", "0"), "with P2P off as well, RCCL falls back to sockets"),
    "NCCL_IB_DISABLE": (lambda v: v not in ("", "0"), "multi-node traffic goes over TCP sockets instead of RDMA"),
    "TORCH_NCCL_ASYNC_ERROR_HANDLING": (lambda v: v == "0", "a failed or stuck collective then hangs forever instead "
                                        "of aborting the run with an error"),
    "NCCL_ASYNC_ERROR_HANDLING": (lambda v: v == "0", "a failed or stuck collective then hangs forever instead of "
                                  "aborting the run with an error"),
    "TORCH_NCCL_ENABLE_MONITORING": (lambda v: v == "0", "turns off torch's watchdog: a hang is never reported"),
    "NCCL_ALGO": (lambda v: bool(v), "forces one algorithm for every size: copied from other machines it slows "
                  "RCCL down and some settings hang on gfx942"),
    "NCCL_PROTO": (lambda v: bool(v), "forces one protocol for every size (LL128 is valid on gfx942 only with "
                   "RCCL's own checks): a known cause of hangs and corruption when copied"),
    "NCCL_MIN_NCHANNELS": (lambda v: bool(v), "overrides RCCL's tuned channel count"),
    "NCCL_MAX_NCHANNELS": (lambda v: bool(v), "overrides RCCL's tuned channel count (too few channels cannot fill "
                           "7 xGMI links)"),
    "NCCL_DEBUG": (lambda v: v.upper() == "TRACE", "TRACE logging slows every collective; use INFO to debug"),
    "HIP_LAUNCH_BLOCKING": (lambda v: v not in ("", "0"), "serialises every kernel: for debugging only"),
    "AMD_SERIALIZE_KERNEL": (lambda v: v not in ("", "0"), "serialises every kernel: for debugging only"),
    "CUDA_LAUNCH_BLOCKING": (lambda v: v not in ("", "0"), "serialises every kernel: for debugging only"),
}


def judge_environment(env: Mapping[str, str]) -> Check:
    why = "NCCL/RCCL variables copied from other machines or left from debugging are a common cause of slow or hung runs."
    risky = [(k, env[k], reason) for k, (bad, reason) in RISKY_ENV.items() if k in env and bad(env[k])]
    if not risky:
        seen = sorted(k for k in env if k.startswith(("NCCL_", "RCCL_", "TORCH_NCCL_")))
        return Check("collective-env", "NCCL/RCCL variables", "ok",
                     "none of the risky ones set" + (f" (set: {', '.join(seen)})" if seen else ""), why, "")
    found = "; ".join(f"{k}={v}: {reason}" for k, v, reason in risky)
    return Check("collective-env", "NCCL/RCCL variables", "warn", found, why,
                 "unset " + " ".join(k for k, _, _ in risky) + " unless a measurement on this node says otherwise")


def judge_kernel(cmdline: str | None, numa_balancing: str | None, acs_lines: list[str] | None) -> Check:
    why = ("IOMMU translation on every peer DMA, NUMA auto-balancing and PCIe ACS redirection slow GPU traffic, "
           "and ACS can block or reroute peer-to-peer transfers that RCCL relies on.")
    problems, seen = [], []
    if cmdline is not None:
        args = cmdline.split()
        seen.append("kernel command line read")
        iommu_on = any(a in ("amd_iommu=on", "intel_iommu=on") for a in args)
        if iommu_on and "iommu=pt" not in args:
            problems.append("the IOMMU is on without iommu=pt (every GPU DMA is translated; AMD's MI300X system "
                            "optimization guide sets iommu=pt)")
    if numa_balancing is not None:
        seen.append(f"numa_balancing={numa_balancing.strip()}")
        if numa_balancing.strip() not in ("0", ""):
            problems.append("NUMA auto-balancing is on (AMD's ROCm workload guide turns it off; it also halved the "
                            "throughput of split all-reduces in ROCm/rccl#1562)")
    if acs_lines:
        on = [ln.strip() for ln in acs_lines if re.search(r"ACSCtl:.*(SrcValid\+|ReqRedir\+|CmpltRedir\+)", ln)]
        seen.append(f"{len(acs_lines)} ACSCtl line(s)")
        if on:
            problems.append(f"PCIe ACS redirection is on at {len(on)} bridge(s) (peer traffic forced up to the root "
                            "complex)")
    if not seen:
        return Check("kernel-settings", "IOMMU / ACS / NUMA", "warn", "could not read /proc/cmdline, numa_balancing "
                     "or lspci", why, "run the doctor on the node itself, as a user who can read them")
    if problems:
        return Check("kernel-settings", "IOMMU / ACS / NUMA", "warn", "; ".join(problems), why,
                     "add iommu=pt to the kernel command line, `sysctl kernel.numa_balancing=0`, and disable ACS on "
                     "the GPU bridges (BIOS, or setpci) on a bare-metal node")
    return Check("kernel-settings", "IOMMU / ACS / NUMA", "ok", ", ".join(seen) + ": nothing known to hurt", why, "")


def preflight_checks(*, rccl: Sequence[RcclRun] = (), transferbench: Sequence[TransferBenchRun] = (),
                     topology: Sequence[Topology] = (), env: Mapping[str, str] | None = None,
                     cmdline: str | None = None, numa_balancing: str | None = None,
                     acs_lines: list[str] | None = None, platform: str | None = None) -> list[Check]:
    """Every check the inputs allow; ``platform`` None: from the devices rccl-tests named, else from TransferBench's
    304 CUs per GPU (an MI300X's count), else unjudged."""
    devices = [d for r in rccl for d in r.devices]
    plat = platform or platform_of(devices)
    if plat is None and any(tb.cus == MI300X_CUS for tb in transferbench):
        plat = "MI300X"
    expected = EXPECTED.get(plat or "")
    out: list[Check] = [judge_rccl(r, expected) for r in rccl]
    for tb in transferbench:
        out += judge_transferbench(tb, expected)
    out += [judge_topology(t) for t in topology]
    if env is not None:
        out.append(judge_environment(env))
    if cmdline is not None or numa_balancing is not None or acs_lines is not None:
        out.append(judge_kernel(cmdline, numa_balancing, acs_lines))
    return out
