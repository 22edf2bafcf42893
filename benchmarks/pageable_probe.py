"""Pageable host-to-device copy throughput against transparent huge pages (issue 24).

Usage: python3 -P benchmarks/pageable_probe.py [--json PATH] [--budget S] [--churn-gib N]
       [--dry-run]

The production grid's msm_chunk plans upload a/b/c and the witness from pageable numpy
arrays (CuPy `.set()`: cudaMemcpy through the driver's staging buffers), and those copies
moved by 10-25 % between device calls and within a run. This probe asks whether the host's
transparent huge pages explain it: per case, one array the size of a 2^26 / 2^27 input
copy (2 GiB: a at 2^26; 4 GiB: b|c at 2^26, a at 2^27; 8 GiB: b|c at 2^27) is allocated,
filled (every page touched, timed), and copied to the GPU three times (CUDA events on a
stream of its own; the first copy against the repeats of the same array). Cases:

- `numpy`: numpy's default allocation (numpy asks MADV_HUGEPAGE for arrays >= 4 MiB);
- `numpy-nohuge`: numpy's own switch off (`numpy._core.multiarray._set_madvise_hugepage`);
- `mmap-huge` / `mmap-nohuge`: an anonymous mmap with madvise(MADV_HUGEPAGE) /
  madvise(MADV_NOHUGEPAGE), viewed by numpy;
- `pinned` (one 4 GiB array, page-locked by CuPy): the link's rate, for reference.

Recorded: /sys/kernel/mm/transparent_hugepage/{enabled,defrag} and khugepaged/defrag,
/proc/meminfo AnonHugePages and MemFree, /proc/self/smaps_rollup AnonHugePages before and
after each allocation and fill, the free blocks of >= 2 MiB in /proc/buddyinfo (the
host's fragmentation), the NUMA nodes and the GPU's, the CPU, the boot id and the GPU's
UUID (which machine). --churn-gib N: before the cases, page-lock N GiB (CuPy's pinned
allocation, as the pipeline's pinned key and inputs) and free it again, as a grid process
does before it makes the next domain's pageable arrays (--dry-run: N MiB of numpy). Cases
run until --budget seconds (default 45) are spent; a case left out is listed as skipped.
--dry-run: numpy only, small arrays (8-32 MiB), the "copy" a host memcpy (no GPU, no
CuPy): checks that the probe runs.
Needs only numpy (and CuPy for the real run); Python 3.10+.
"""

from __future__ import annotations

import argparse
import json
import mmap
import platform
import sys
import time
from pathlib import Path

import numpy as np

GIB = 1 << 30
MIB = 1 << 20
SIZES = (("a@2^26", 2 * GIB), ("bc@2^26=a@2^27", 4 * GIB), ("bc@2^27", 8 * GIB))
DRY_SIZES = (("small", 8 * MIB), ("medium", 16 * MIB), ("large", 32 * MIB))
MODES = ("numpy", "numpy-nohuge", "mmap-huge", "mmap-nohuge")
REPEATS = 3
THP = Path("/sys/kernel/mm/transparent_hugepage")


def read_text(path: str | Path) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def kib_field(text: str | None, name: str) -> int | None:
    """A `Name:   123 kB` line's value in bytes (None when absent)."""
    for line in (text or "").splitlines():
        if line.startswith(name + ":"):
            return int(line.split()[1]) * 1024
    return None


def free_huge_bytes(buddyinfo: str | None) -> int | None:
    """Free memory in blocks of order >= 9 (2 MiB with 4 KiB pages), summed over zones:
    what the kernel can hand out as huge pages without compacting."""
    if not buddyinfo:
        return None
    total = 0
    for line in buddyinfo.splitlines():
        counts = [int(c) for c in line.split()[4:]]  # "Node 0, zone Normal c0 c1 ..."
        total += sum(c * (4096 << order) for order, c in enumerate(counts) if order >= 9)
    return total


def memory_state() -> dict:
    meminfo = read_text("/proc/meminfo")
    rollup = read_text("/proc/self/smaps_rollup")
    return {
        "meminfo_anon_huge": kib_field(meminfo, "AnonHugePages"),
        "meminfo_free": kib_field(meminfo, "MemFree"),
        "self_anon_huge": kib_field(rollup, "AnonHugePages"),
        "self_rss": kib_field(rollup, "Rss"),
        "free_2mib_blocks_bytes": free_huge_bytes(read_text("/proc/buddyinfo")),
    }


def numpy_hugepage_switch():
    """numpy's madvise-hugepage switch (returns the previous setting), or None."""
    for mod in ("numpy._core.multiarray", "numpy.core.multiarray"):
        try:
            m = __import__(mod, fromlist=["_set_madvise_hugepage"])
        except ImportError:
            continue
        f = getattr(m, "_set_madvise_hugepage", None)
        if f is not None:
            return f
    return None


def host_facts(cupy=None) -> dict:
    nodes = sorted(p.name for p in Path("/sys/devices/system/node").glob("node[0-9]*"))
    facts = {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "kernel": platform.release(),
        "thp_enabled": read_text(THP / "enabled"),
        "thp_defrag": read_text(THP / "defrag"),
        "khugepaged_defrag": read_text(THP / "khugepaged" / "defrag"),
        "numa_nodes": nodes,
        "numpy_switch": numpy_hugepage_switch() is not None,
        "cpu": next(
            (
                ln.split(":", 1)[1].strip()
                for ln in (read_text("/proc/cpuinfo") or "").splitlines()
                if ln.startswith("model name")
            ),
            None,
        ),
        "boot_id": read_text("/proc/sys/kernel/random/boot_id"),  # which machine / boot
    }
    if cupy is not None:
        facts["cupy"] = cupy.__version__
        try:
            bus = cupy.cuda.Device(0).pci_bus_id.lower()
            facts["gpu_pci"] = bus
            facts["gpu_numa_node"] = read_text(f"/sys/bus/pci/devices/{bus}/numa_node")
            uuid = cupy.cuda.runtime.getDeviceProperties(0).get("uuid", b"")
            facts["gpu_uuid"] = uuid.hex() if isinstance(uuid, bytes) else str(uuid)
        except Exception as e:  # a fact we could not read is recorded, not fatal
            facts["gpu_pci"] = f"unread: {e}"
    return facts


class Host:
    """Allocates the host arrays of each mode; `release` frees one."""

    def __init__(self, cupy=None) -> None:
        self.cupy = cupy
        self.switch = numpy_hugepage_switch()

    def allocate(self, mode: str, nbytes: int):
        """(array of uint64, keep-alive handle) or None when the mode is unavailable."""
        n = nbytes // 8
        if mode in ("numpy", "numpy-nohuge"):
            if mode == "numpy-nohuge" and self.switch is None:
                return None
            before = self.switch(mode == "numpy") if self.switch else None
            try:
                return np.empty(n, dtype=np.uint64), None
            finally:
                if self.switch is not None:
                    self.switch(before)
        if mode in ("mmap-huge", "mmap-nohuge"):
            advice = getattr(
                mmap, "MADV_HUGEPAGE" if mode == "mmap-huge" else "MADV_NOHUGEPAGE", None
            )
            if advice is None:
                return None
            m = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
            m.madvise(advice)
            return np.frombuffer(m, dtype=np.uint64, count=n), m
        if mode == "pinned":
            if self.cupy is None:  # the dry run: no page-locking without CUDA
                return None
            mem = self.cupy.cuda.alloc_pinned_memory(nbytes)
            return np.frombuffer(mem, dtype=np.uint64, count=n), mem
        raise ValueError(f"unknown mode {mode!r}")

    @staticmethod
    def release(handle) -> None:
        """Unmap an mmap case's memory (its numpy view dropped first by the caller)."""
        if isinstance(handle, mmap.mmap):
            handle.close()


class Copier:
    """Times host -> device copies: CUDA events (real) or a host memcpy (dry run)."""

    def __init__(self, cupy, max_bytes: int) -> None:
        self.cupy = cupy
        if cupy is None:
            self.dst = np.empty(max_bytes // 8, dtype=np.uint64)
            return
        self.dst = cupy.empty(max_bytes // 8, dtype=cupy.uint64)
        self.stream = cupy.cuda.Stream(non_blocking=True)

    def copy(self, host) -> dict:
        n = host.size
        t = time.perf_counter()
        if self.cupy is None:
            np.copyto(self.dst[:n], host)
            wall = time.perf_counter() - t
            return {"ms": 1e3 * wall, "wall_ms": 1e3 * wall}
        cp = self.cupy
        start, end = cp.cuda.Event(), cp.cuda.Event()
        with self.stream:
            start.record(self.stream)
            self.dst[:n].set(host, stream=self.stream)
            end.record(self.stream)
        end.synchronize()
        wall = time.perf_counter() - t
        return {"ms": cp.cuda.get_elapsed_time(start, end), "wall_ms": 1e3 * wall}


def churn(cupy, nbytes: int) -> dict:
    """Page-lock (numpy in the dry run: allocate and touch) nbytes, then free them."""
    out = {"bytes": nbytes, "before": memory_state()}
    t = time.perf_counter()
    if cupy is None:
        arr = np.ones(nbytes // 8, dtype=np.uint64)
        out["held"] = memory_state()
        del arr
    else:
        mem = cupy.cuda.alloc_pinned_memory(nbytes)
        out["held"] = memory_state()
        del mem
        cupy.get_default_pinned_memory_pool().free_all_blocks()
    out["seconds"] = time.perf_counter() - t
    out["after"] = memory_state()
    return out


def run_case(host: Host, copier: Copier, mode: str, label: str, nbytes: int) -> dict:
    case = {"mode": mode, "size": label, "bytes": nbytes, "before": memory_state()}
    got = host.allocate(mode, nbytes)
    if got is None:
        return {**case, "skipped": "unavailable here (numpy switch, madvise or CuPy absent)"}
    arr, handle = got
    del got  # the array is dropped before an mmap case unmaps it
    case["allocated"] = memory_state()
    t = time.perf_counter()
    arr.fill(0x0123456789ABCDEF)  # every page touched, as the pipeline's random inputs are
    case["fill_s"] = time.perf_counter() - t
    case["filled"] = memory_state()
    copies = []
    for _ in range(REPEATS):
        c = copier.copy(arr)
        c["gib_s"] = nbytes / GIB / (c["ms"] / 1e3) if c["ms"] > 0 else None
        copies.append(c)
    case["copies"] = copies
    case["after"] = memory_state()
    del arr
    Host.release(handle)
    return case


def plan_cases(dry: bool) -> list[tuple[str, str, int]]:
    sizes = DRY_SIZES if dry else SIZES
    # size by size (the 2^26 sizes first: a cut budget drops the 8 GiB ones), the modes'
    # order rotated from one size to the next so that no mode always runs first
    cases = [
        (MODES[(j + i) % len(MODES)], label, b)
        for i, (label, b) in enumerate(sizes)
        for j in range(len(MODES))
    ]
    cases.append(("pinned", sizes[1][0], sizes[1][1]))  # the link's rate, for reference
    return cases


def huge_of(case: dict) -> str:
    a, b = (
        case.get("before", {}).get("self_anon_huge"),
        case.get("filled", {}).get("self_anon_huge"),
    )
    return "-" if a is None or b is None else f"{(b - a) / MIB:.0f}"


def table(cases: list[dict]) -> str:
    rows = [
        "| mode | size | GiB | fill GiB/s | array's AnonHuge MiB | copy 1 / 2 / 3 GiB/s "
        "| wall ms (1) |",
        "|---|---|---|---|---|---|---|",
    ]
    for c in cases:
        head = f"| {c['mode']} | {c['size']} | {c['bytes'] / GIB:g} |"
        if "skipped" in c:
            rows.append(f"{head} skipped: {c['skipped']} | | | |")
            continue
        fill = c["bytes"] / GIB / c["fill_s"] if c["fill_s"] > 0 else float("nan")
        rates = " / ".join(f"{x['gib_s']:.2f}" if x["gib_s"] else "-" for x in c["copies"])
        rows.append(
            f"{head} {fill:.2f} | {huge_of(c)} | {rates} | {c['copies'][0]['wall_ms']:.1f} |"
        )
    return "\n".join(rows)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--budget", type=float, default=45.0, help="seconds for the cases (45)")
    ap.add_argument("--churn-gib", type=float, default=0.0, help="page-lock and free this first")
    ap.add_argument("--dry-run", action="store_true", help="numpy only, small sizes, no GPU")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    cupy = None
    if not args.dry_run:
        try:
            import cupy
        except ImportError as e:
            print(
                f"pageable_probe: CuPy is needed for the real run ({e}); --dry-run runs without",
                file=sys.stderr,
            )
            return 2
    cases = plan_cases(args.dry_run)
    host = Host(cupy)
    copier = Copier(cupy, max(b for _, _, b in cases))
    out = {
        "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "dry_run": args.dry_run,
        "host": host_facts(cupy),
        "start": memory_state(),
        "cases": [],
    }
    if args.churn_gib > 0:
        unit = MIB if args.dry_run else GIB
        out["churn"] = churn(cupy, int(args.churn_gib * unit) // 8 * 8)
    for mode, label, nbytes in cases:
        if time.perf_counter() - t0 > args.budget:
            out["cases"].append(
                {"mode": mode, "size": label, "bytes": nbytes, "skipped": "budget spent"}
            )
            continue
        out["cases"].append(run_case(host, copier, mode, label, nbytes))
    out["elapsed_s"] = time.perf_counter() - t0
    print(json.dumps({k: out["host"][k] for k in ("thp_enabled", "thp_defrag", "numa_nodes")}))
    print(table(out["cases"]))
    print(f"elapsed {out['elapsed_s']:.1f} s")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
