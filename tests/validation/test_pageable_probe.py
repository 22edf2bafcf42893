"""benchmarks/pageable_probe.py: its dry run (numpy only, no GPU) and its /proc readers."""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import pageable_probe  # noqa: E402


def test_dry_run_writes_every_case(tmp_path, capsys):
    out = tmp_path / "p.json"
    assert pageable_probe.main(["--dry-run", "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["dry_run"] is True
    modes = [(c["mode"], c["size"]) for c in data["cases"]]
    # 4 modes x 3 sizes, then the pinned reference (skipped without CuPy)
    assert len(modes) == 13 and modes[-1][0] == "pinned" and "skipped" in data["cases"][-1]
    for c in data["cases"][:-1]:
        if "skipped" in c:
            continue
        assert len(c["copies"]) == 3 and all(x["ms"] > 0 for x in c["copies"])
        assert c["bytes"] in (8 << 20, 16 << 20, 32 << 20)
    assert "| mode | size |" in capsys.readouterr().out
    # each size once in each mode
    assert sorted(modes[:-1]) == sorted(
        (m, s) for m in pageable_probe.MODES for s in ("small", "medium", "large")
    )


def test_churn_is_recorded(tmp_path):
    out = tmp_path / "p.json"
    assert pageable_probe.main(["--dry-run", "--churn-gib", "16", "--json", str(out)]) == 0
    churn = json.loads(out.read_text())["churn"]
    assert churn["bytes"] == 16 << 20  # MiB in the dry run
    assert {"before", "held", "after"} <= set(churn)


def test_kib_field_and_free_huge_blocks_by_hand():
    assert (
        pageable_probe.kib_field("MemFree: 10 kB\nAnonHugePages:  2048 kB\n", "AnonHugePages")
        == 2048 * 1024
    )
    assert pageable_probe.kib_field("MemFree: 10 kB\n", "AnonHugePages") is None
    # orders 0..10; order 9 = 2 MiB blocks, order 10 = 4 MiB: 3 x 2 MiB + 1 x 4 MiB = 10 MiB
    line = "Node 0, zone   Normal " + " ".join(["7"] * 9) + " 3 1"
    assert pageable_probe.free_huge_bytes(line) == 10 << 20
    assert pageable_probe.free_huge_bytes(None) is None
