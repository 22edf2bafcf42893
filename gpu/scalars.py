"""Where each MSM's scalars are on the device, and when they go up.

H's are d_a (the NTT phase's output). The witness MSMs read the witness: with dense
queries one `d_witness` buffer, uploaded once before the MSMs, serves A, B_G1, B_G2 and
(from its aux part) L. A key whose A / B queries leave variables out (a real key:
PartitionShape a_count / b_count) is read through the witness gathered at the query's
variables (`gather_scalars`): `d_scalars_a` goes up just before msm_a and is freed after
it, `d_scalars_b` before msm_b_g1 and after msm_b_g2, and `d_witness` only before msm_l:
no two of them live at once, so a sparse key never needs more device memory than a
dense one. With ProverFlags.overlap_uploads (not streamed) those three go up one stage
ahead, on the `key_upload` stream with the stage's points, beside the MSM before it
(`ahead`; gpu/msm_stages.py `_staged`): d_scalars_a beside msm_h, d_scalars_b beside
msm_a, d_witness beside msm_b_g2; the `sync key_upload` before the stage waits for them.
A dense shape's d_witness stays where it was (before msm_h, on the compute stream).
"""

from __future__ import annotations

from typing import Any

from .device import Buffer, Device

FR_BYTES = 32
QUERY = {"msm_a": "a", "msm_b_g1": "b", "msm_b_g2": "b"}  # stage -> its gathered scalars
FIRST = {"a": "msm_a", "b": "msm_b_g1"}  # the first stage reading them
LAST = {"a": "msm_a", "b": "msm_b_g2"}  # the last


class Scalars:
    """`acquire(stage)` before a stage's MSMs -> (buffer, word offset of its scalar 0);
    `release(stage)` after them; `close()` frees what is left."""

    def __init__(
        self, dev: Device, shape: Any, flags: Any, data: Any, d_a: Buffer, eager: bool
    ) -> None:
        self.dev, self.shape, self.flags, self.data, self.d_a = dev, shape, flags, data, d_a
        self.counts = {"a": shape.a_count, "b": shape.b_count}
        self.compact = any(c is not None for c in self.counts.values())
        if eager or not self.compact:
            self._witness()

    def _upload(
        self, name: str, copy: str, host: Any, rows: int, stream: str | None = None
    ) -> Buffer:
        """Allocate and fill `name`: on the compute stream, or with `stream` on that
        upload stream, beside the kernels issued after it (sync(stream) waits for it)."""
        buf = self.dev.alloc(name, max(1, rows) * FR_BYTES)
        pinned = self.flags.pinned  # `pinned` covers the witness as it does a/b/c
        self.dev.copy_htod(
            copy,
            buf,
            host,
            rows * FR_BYTES,
            pinned=pinned,
            stream=stream or "compute",
            concurrent=stream is not None,
        )
        return buf

    def _witness(self, stream: str | None = None) -> Buffer:
        live = self.dev._live.get("d_witness")
        if live is not None:
            return live
        host = self.data.witness if self.data else None
        return self._upload("d_witness", "upload_witness", host, self.shape.num_vars, stream)

    def _gathered(self, q: str, stream: str | None = None) -> Buffer:
        name = f"d_scalars_{q}"
        live = self.dev._live.get(name)
        if live is not None:
            return live
        host = self.data.scalars[q] if self.data else None
        return self._upload(name, f"upload_scalars_{q}", host, self.counts[q], stream)

    def ahead(self, stage: str, stream: str) -> None:
        """Upload now, on `stream`, the buffer that `acquire(stage)` would upload first (a
        compact shape's gathered scalars at their first stage, its witness at msm_l);
        nothing for a stage whose scalars are on the device or d_a's."""
        q = QUERY.get(stage)
        if q is not None and self.counts[q] is not None:
            if stage == FIRST[q]:
                self._gathered(q, stream)
        elif stage == "msm_l" and self.compact:
            self._witness(stream)

    def acquire(self, stage: str) -> tuple[Buffer, int]:
        if stage == "msm_h":
            return self.d_a, 0
        q = QUERY.get(stage)
        if q is not None and self.counts[q] is not None:
            if stage == FIRST[q]:
                return self._gathered(q), 0
            return self.dev._live[f"d_scalars_{q}"], 0
        offset = 8 * (self.shape.num_public + 1) if stage == "msm_l" else 0
        return self._witness(), offset

    def release(self, stage: str) -> None:
        q = QUERY.get(stage)
        if q is not None and self.counts[q] is not None and stage == LAST[q]:
            self.dev.free(f"d_scalars_{q}")
        elif stage == "msm_l" and self.compact:
            self.dev.free("d_witness")

    def close(self) -> None:
        for name in ("d_scalars_b", "d_scalars_a", "d_witness"):
            if name in self.dev.live:
                self.dev.free(name)
