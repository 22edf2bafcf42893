"""A bounded recording of a run for plots and traces, cheap enough for a 24 h farm.

A full recording (`simulate(record=True)`) keeps every kernel, copy and VRAM change and
turns the model's shortcuts off: for the 8-GPU farm that is 4.8 M spans, 5.5 M samples,
2 GB and minutes. A `Timeline` instead rides on the fast path and keeps:

- per device, VRAM in time buckets: the peak of each bucket with what made it up (bytes
  by buffer name, the rest — CUDA context, idle pool bytes — as one residual), and the
  state at the bucket's end (carried over buckets where nothing changed);
- host RAM (in use, of which pinned) and CPU threads asked for, bucketed the same way;
- partition and synthesis spans (one per partition and per proof: the worker lanes);
- full detail (kernels, copies, CPU steps, mutex holds and waits) only inside a detail
  window, and at most `max_detail_spans` of them.

Buckets: at most `buckets` over the run (or over `window`); their width starts small and
doubles (neighbours merged) whenever the run outgrows them, so memory stays bounded
however long the run. Inside a critical section that the model replays (it skips the
section's allocations), the section's learnt peak is emitted at the step where it
happened, so replayed sections still show their peaks.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from cuzk_sim.io.errors import InputError
from cuzk_sim.io.units import UnitError, parse_duration
from cuzk_sim.model.allocator import DeviceMemory

RESIDUAL = "(context + idle pools)"


@dataclass
class Bucket:
    """One time bucket of one series: its peak (value and breakdown) and its end state."""

    peak: float
    peak_parts: dict[str, float] | None
    end: float
    end_parts: dict[str, float] | None = None


@dataclass
class Buckets:
    """A bucketed series over [start, start + width · limit): peak and end per bucket."""

    start: float = 0.0
    width: float = 1e-3
    limit: int = 2048
    end_of_window: float = math.inf  # events after it are ignored (a fixed window)
    fixed: bool = False  # a given window: the width never changes
    data: dict[int, Bucket] = field(default_factory=dict)
    cur: int = -1
    last: float = 0.0  # the latest value (also before the window)

    def index(self, t: float) -> int | None:
        """Bucket index of time t (None: outside a fixed window), widening as needed."""
        if t >= self.start and t <= self.end_of_window:  # the common case, first
            i = int((t - self.start) / self.width)
            if i < self.limit:
                return i if i >= self.cur else self.cur
        if t < self.start:
            return None
        if t > self.end_of_window:
            return None
        i = int((t - self.start) / self.width)
        while i >= self.limit and not self.fixed:
            self._double()
            i = int((t - self.start) / self.width)
        i = min(i, self.limit - 1)
        return i if i >= self.cur else self.cur  # a slightly late event: keep order

    def _double(self) -> None:
        merged: dict[int, Bucket] = {}
        for i in sorted(self.data):
            b, j = self.data[i], i // 2
            m = merged.get(j)
            if m is None:
                merged[j] = Bucket(b.peak, b.peak_parts, b.end, b.end_parts)
                continue
            if b.peak > m.peak:
                m.peak, m.peak_parts = b.peak, b.peak_parts
            m.end, m.end_parts = b.end, b.end_parts
        self.data = merged
        self.width *= 2
        self.cur = self.cur // 2 if self.cur >= 0 else -1

    def add(
        self,
        t: float,
        value: float,
        parts: Callable[[], dict[str, float]] | None = None,
        before: Callable[[], dict[str, float]] | None = None,
    ) -> None:
        """A new value at time t. parts(): its breakdown, asked for only at a new peak;
        before(): the breakdown just before it, asked for when a bucket closes."""
        i = self.index(t)
        if i is None:
            self.last = value
            return
        if i == self.cur:  # the common case: same bucket as the previous value
            b = self.data[i]
            if value > b.peak:
                b.peak, b.peak_parts = value, parts() if parts else None
            b.end = self.last = value
            return
        if i != self.cur:
            prev = self.data.get(self.cur)
            if prev is not None and before is not None:
                prev.end_parts = before()
            elif self.cur < 0 and i > 0 and self.fixed:  # the state the window opens on
                parts_then = before() if before is not None else None
                self.data[0] = Bucket(self.last, parts_then, self.last, parts_then)
        b = self.data.get(i)
        if b is None:
            self.data[i] = Bucket(value, parts() if parts else None, value)
        else:
            if value > b.peak:
                b.peak, b.peak_parts = value, parts() if parts else None
            b.end = value
        self.cur = i
        self.last = value

    def add_value(self, t: float, value: float) -> None:
        """`add` without a breakdown, its common case inlined (host RAM, CPU threads:
        about a million values a day of the farm)."""
        if self.start <= t <= self.end_of_window:
            i = int((t - self.start) / self.width)
            if i == self.cur:
                b = self.data[i]
                if value > b.peak:
                    b.peak = value
                b.end = self.last = value
                return
        self.add(t, value)

    def set_peak(
        self,
        t: float,
        value: float,
        parts: dict[str, float] | None,
        now_parts: Callable[[], dict[str, float]],
    ) -> None:
        """A peak seen without a state change (a replayed critical section's);
        now_parts(): the (unchanged) breakdown, to close the bucket before."""
        i = self.index(t)
        if i is None:
            return
        if i != self.cur:
            prev = self.data.get(self.cur)
            if prev is not None:
                prev.end_parts = now_parts()
        b = self.data.get(i)
        if b is None:
            self.data[i] = Bucket(value, parts, self.last)
        elif value > b.peak:
            b.peak, b.peak_parts = value, parts
        self.cur = i

    def series(self, until: float, now_parts: dict | None = None) -> list[tuple[float, Bucket]]:
        """(bucket start time, bucket) for every bucket up to `until`; an empty bucket
        carries the previous bucket's end state. now_parts: the breakdown at the end."""
        if self.cur in self.data and self.data[self.cur].end_parts is None:
            self.data[self.cur].end_parts = now_parts
        out: list[tuple[float, Bucket]] = []
        stop = min(until, self.end_of_window)
        n = min(self.limit, int(max(stop - self.start, 0.0) / self.width) + 1)
        prev: Bucket | None = None
        for i in range(n):
            b = self.data.get(i)
            if b is None:
                if prev is None:
                    continue
                b = Bucket(prev.end, prev.end_parts, prev.end, prev.end_parts)
            out.append((self.start + i * self.width, b))
            prev = b
        return out


class _HostSink:
    """Takes HostMemory's (t, used, pinned) samples."""

    def __init__(self, tl: Timeline) -> None:
        self.tl = tl

    def append(self, sample: tuple[float, int, int]) -> None:
        t, used, pinned = sample
        self.tl.host.add_value(t, used)
        self.tl.pinned.add_value(t, pinned)


class _CoreSink:
    def __init__(self, tl: Timeline) -> None:
        self.tl = tl

    def append(self, sample: tuple[float, float]) -> None:
        self.tl.cores.add_value(sample[0], sample[1])


class _SettleSink:
    """Takes DeviceMemory.settle's (t, device, used) samples: a deferred free happened."""

    def __init__(self, tl: Timeline, mem: DeviceMemory, also: list | None) -> None:
        self.tl, self.mem, self.also = tl, mem, also

    def append(self, sample: tuple[float, int, int]) -> None:
        self.tl.resync(sample[0], self.mem)
        if self.also is not None:
            self.also.append(sample)


class _Spans(list):
    """The run's span list; it switches full recording on inside the detail window and
    off at its end or once `max_detail_spans` detail spans are kept (checked as spans
    arrive, so no timer keeps a finished or stalled run alive). recorder: the run's
    (model/machine.py `Recorder`), whose `record` it switches."""

    def __init__(self, recorder: Any, tl: Timeline) -> None:
        super().__init__()
        self.recorder, self.tl = recorder, tl

    def detail(self, on: bool) -> None:
        self.recorder.record = on

    def append(self, span: Any) -> None:
        tl = self.tl
        t0, t1 = tl.detail  # type: ignore[misc]
        if self.recorder.record:
            if span.cat not in ("partition", "synthesis"):
                tl.detail_spans += 1
            if span.end_s >= t1:
                self.detail(False)
            elif tl.detail_spans >= tl.max_detail_spans:
                tl.detail_cut_at = span.end_s
                self.detail(False)
        elif t0 <= span.end_s < t1 and tl.detail_cut_at is None:
            self.detail(True)
        super().append(span)


@dataclass
class Timeline:
    buckets: int = 1500
    window: tuple[float, float] | None = None  # plot only this (seconds)
    detail: tuple[float, float] | None = (0.0, math.inf)  # kernels, copies, locks here
    max_detail_spans: int = 100_000
    vram: dict[int, Buckets] = field(default_factory=dict)
    host: Buckets = field(init=False)
    pinned: Buckets = field(init=False)
    cores: Buckets = field(init=False)
    live: dict[int, dict[str, int]] = field(default_factory=dict)  # bytes by buffer name
    live_sum: dict[int, int] = field(default_factory=dict)
    used: dict[int, int] = field(default_factory=dict)
    section: dict[int, list] = field(default_factory=dict)  # open section: [peak, parts, pc]
    learnt: dict[tuple, tuple] = field(default_factory=dict)  # section key -> (pc, peak, parts)
    detail_spans: int = 0
    detail_cut_at: float | None = None  # when detail stopped at max_detail_spans
    workers: tuple[str, ...] = ()  # every GPU worker (a lane each, busy or not)
    synthesizers: int = 0

    def __post_init__(self) -> None:
        self.host, self.pinned, self.cores = self._new(), self._new(), self._new()

    def _new(self) -> Buckets:
        if self.window is None:
            return Buckets(limit=self.buckets)
        t0, t1 = self.window
        return Buckets(
            start=t0,
            width=max(t1 - t0, 1e-9) / self.buckets,
            limit=self.buckets,
            end_of_window=t1,
            fixed=True,
        )

    # --- sinks the model writes to ---

    def host_sink(self) -> _HostSink:
        return _HostSink(self)

    def core_sink(self) -> _CoreSink:
        return _CoreSink(self)

    def settle_sink(self, mem: DeviceMemory, also: list | None) -> _SettleSink:
        return _SettleSink(self, mem, also)

    def span_list(self, recorder: Any) -> _Spans:
        """The span list of a run recorded with this timeline: it switches the recorder's
        full recording on inside the detail window."""
        return _Spans(recorder, self)

    def _parts(self, dev: int) -> dict[str, float]:
        parts: dict[str, float] = {k: v for k, v in self.live[dev].items() if v}
        parts[RESIDUAL] = self.used[dev] - self.live_sum[dev]
        return parts

    def _device(self, dev: int) -> Buckets:
        b = self.vram.get(dev)
        if b is None:
            b = self.vram[dev] = self._new()
            self.live[dev], self.live_sum[dev], self.used[dev] = {}, 0, 0
        return b

    def vram_change(
        self, t: float, dev: int, used: int, buffer: str | None, delta: int, pc: int = -1
    ) -> None:
        """Device memory changed at t: `buffer` gained `delta` bytes (None: pools only)."""
        series = self._device(dev)
        before = None
        i = series.index(t)
        if i is not None and i != series.cur:  # a bucket closes: keep its end breakdown
            snapshot = self._parts(dev)
            before = lambda: snapshot  # noqa: E731
        if buffer is not None:
            live = self.live[dev]
            live[buffer] = live.get(buffer, 0) + delta
            self.live_sum[dev] += delta
        self.used[dev] = used
        series.add(t, used, lambda: self._parts(dev), before)
        sec = self.section.get(dev)
        if sec is not None and used > sec[0]:
            sec[0], sec[1], sec[2] = used, self._parts(dev), pc

    def resync(self, t: float, mem: DeviceMemory) -> None:
        """Re-read a device's live buffers (after frees the worker did not see one by one)."""
        dev = mem.device
        self._device(dev)
        live: dict[str, int] = {}
        for buf in mem.live.values():
            name = buf.buffer.split("#", 1)[0]
            live[name] = live.get(name, 0) + buf.bytes
        before = self._parts(dev)
        self.live[dev], self.live_sum[dev], self.used[dev] = live, sum(live.values()), mem.used
        self.vram[dev].add(t, mem.used, lambda: self._parts(dev), lambda: before)

    def section_begin(self, dev: int, used: int) -> None:
        self._device(dev)
        self.section[dev] = [used, None, -1]

    def section_end(self, dev: int, key: tuple | None) -> None:
        """The section closed; `key`: it was learnt for replay, keep its peak."""
        sec = self.section.pop(dev, None)
        if key is not None and sec is not None and sec[1] is not None:
            self.learnt[key] = (sec[2], sec[0], sec[1])

    def replayed_peak(self, t: float, dev: int, peak: tuple) -> None:
        _, used, parts = peak
        self._device(dev).set_peak(t, used, parts, lambda: self._parts(dev))

    # --- reading it back ---

    def device_series(self, dev: int, until: float) -> list[tuple[float, Bucket]]:
        b = self.vram.get(dev)
        if b is None:
            return []
        return b.series(until, self._parts(dev))


def parse_window(text: str, option: str) -> tuple[float, float]:
    """'2h..3h' (any durations with units) -> (7200.0, 10800.0)."""
    lo, sep, hi = text.partition("..")
    if not sep:
        raise InputError(f"{option} {text!r}: expected START..END, e.g. 2h..3h")

    def seconds(part: str) -> float:
        part = part.strip()
        try:
            return float(part)  # a bare number: seconds
        except ValueError:
            return parse_duration(part)

    try:
        t0, t1 = seconds(lo), seconds(hi)
    except UnitError as e:
        raise InputError(f"{option} {text!r}: {e}") from None
    if not (math.isfinite(t0) and math.isfinite(t1) and t0 >= 0):
        raise InputError(f"{option} {text!r}: START and END must be finite times >= 0")
    if not t1 > t0:
        raise InputError(f"{option} {text!r}: END must be after START")
    return t0, t1
