"""One line per gpu-run of a production call: s/proof, setup, peak VRAM, OOM, and the
host side (peak RSS against the need and the bound, the key's time and method).

Usage: python3 benchmarks/prod_summary.py DIR   (DIR holds NAME.json and NAME.details.json
from `gpu-run --json --details`; used by realrun_device.sh and production_device_call.sh)
"""

import json
import pathlib
import sys

GIB = 2**30


def line(d: pathlib.Path, name: str) -> str:
    try:
        r = json.loads((d / f"{name}.json").read_text())
        h = json.loads((d / f"{name}.details.json").read_text())["host"]
    except Exception as e:  # a run that failed leaves a partial file: say so, go on
        return f"{name} unreadable {e}"
    peak = {k: v / 2**20 for k, v in r["peak_vram_bytes"].items()}
    return (
        f"{name}: s/proof {r['seconds_per_proof']} setup {r.get('setup_s')} peak {peak} MiB "
        f"oom {r['oom']} | peak RSS {h['peak_rss_bytes'] / GIB:.2f} GiB, need "
        f"{h['need_bytes'] / GIB:.2f}, bound {h['bound_bytes'] / GIB:.2f}, MemAvailable at start "
        f"{(h.get('available_bytes') or 0) / GIB:.2f} | key {h.get('key_seconds', 0):.1f} s "
        f"(alloc {h.get('key_alloc_seconds', 0):.1f}, generate "
        f"{h.get('key_generate_seconds', 0):.1f}) {h.get('key_method')} {h.get('key_notes')} "
        f"data {h.get('data_seconds', 0):.1f} s"
    )


if __name__ == "__main__":
    d = pathlib.Path(sys.argv[1])
    for f in sorted(d.glob("*.details.json")):
        print(line(d, f.name.removesuffix(".details.json")))
