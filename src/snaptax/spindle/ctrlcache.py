"""An array controller's write cache in front of a volume (stdlib only; transcribed in spindle_core.c).

The seeds' arrays sat behind controllers with caches (seed 002's Storwize V7000, seed 004's iSCSI RAID5 target,
seed 000's RAID1 controller). What such a cache changes is when a write is acknowledged, which member I/O the
array does for it (a RAID5 row filled in cache is written whole, without the read-modify-write penalty) and the
balance of reads and writes the members see. It is off unless a device says `cache:` (profiles.CacheSpec), so
every device without one is served exactly as before.

Semantics (each decided here, with why):

  Pages. Dirty data is tracked in 4 KiB pages (PAGE), the host's block size: a write dirties every page it
  touches (a partly written page counts whole: the controller would fill it from the members; that fill read is
  not modelled, nor needed for the 4 KiB-aligned I/O fio and qemu issue). A write to a page already dirty takes
  no more room (it overwrites the cached copy); to a page being destaged it does (both copies exist until the
  destage ends). Occupancy = dirty pages + pages being destaged.

  Writes. Write-back (battery backed, or `write_back_unprotected`): a write that fits is acknowledged after the
  controller's overhead and its transfer over the host link, t + overhead + bytes / link, and destaged later.
  A write that does not fit waits, in arrival order (a waiting write holds back later ones: the controller does
  not reorder host writes around a full cache), and is accepted when destages have made room; each such write
  counts one full stall. A write larger than the whole cache bypasses it (written through: it could never fit).
  Write-through (an unprotected cache): writes go to the array as without a cache. A cache that could lose
  acknowledged data is not run write-back unless the rig says so: that is the usual controller default
  (write-through without a healthy battery), and it keeps "the array is slow to write" the safe assumption.

  Reads. A read whose every page is in the cache (dirty or being destaged) is served from it, after the same
  overhead and transfer; any other read goes to the array whole (a partial hit is a miss: the members must be
  positioned anyway). Clean data is not kept: this is a write cache, the members' own read-ahead buffers remain
  the read cache; so only reads of recently written data hit.

  Destage. The oldest dirty page (by when it became dirty) is destaged first, together with the dirty pages
  contiguous with it inside its segment, as one write (the run of dirty data a controller would gather; pages
  elsewhere in the segment wait for their own turn, and nothing clean is rewritten). On RAID5 the segment is the
  stripe row: a row wholly dirty is written full-stripe (data and parity, no reads); otherwise the run is a
  read-modify-write of that row (Raid5 decides, and counts full_stripe_rows and rmw_rows). Elsewhere the segment
  is `segment_bytes`. At most `destage_depth` destage writes are outstanding.
  "eager" destages whenever anything is dirty (the array is kept as clean as it can be, so bursts find room);
  "watermark" starts when occupancy reaches `high_watermark` of the cache and stops at `low_watermark`, or when
  a write waits for room or a flush for the destage (dirty data is kept longer, so more rows fill and
  overwrites are absorbed). No other policy is documented for any of the seeds' controllers (docs/datasheets.md).

  Flushes. Battery backed: the cache is non-volatile, so SYNCHRONIZE CACHE is answered by the controller after
  its overhead, without the members (which, behind such a controller, run with their own caches off).
  Write-through: passed to the array. Unprotected write-back: answered when nothing is dirty or being destaged
  any more, then passed to the array.

  Behind the cache. Any volume may sit behind it (a drive, RAID1, RAID5, a tiered pool: the V7000's cache fronts
  the volume, whichever tier its extents are on). A pool's own migrations run below the cache and bypass it, as
  Easy Tier's extent moves do; a flush of a pool inside another volume is the pool's own (Volume.flush).

  Time. Acknowledgements, hits and battery-backed flushes are this volume's own events (a heap ordered by time,
  then by the order they were made), fired by the Simulator after members' events at the same time. Each is told
  as an eta when it is scheduled, so the emulator's request threads can time the reply themselves.

Counters (Simulator.counters()["array"]): cache_read_hits, cache_write_backs (writes acknowledged from the cache),
cache_full_stalls, cache_destages, cache_destaged_bytes, and the level cache_used_bytes.
"""
from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Callable

from .profiles import CacheSpec
from .volume import Done, Eta, Volume

PAGE = 4096


class ControllerCache(Volume):
    """`array` behind a controller cache; `segment` is the destage unit (a RAID5's row, else the spec's)."""

    def __init__(self, spec: CacheSpec, array: Volume, segment: int, name: str):
        self.spec, self.array, self.name = spec, array, name
        self.capacity = array.capacity
        self.members = array.members
        self.segment = segment
        self.write_back = spec.battery_backed or spec.write_back_unprotected
        self.watermark = spec.destage == "watermark"
        self.size_pages = spec.size_bytes // PAGE
        self.high_pages = int(self.size_pages * spec.high_watermark)
        self.low_pages = int(self.size_pages * spec.low_watermark)
        self.overhead = spec.overhead_us / 1e6
        self.link = spec.link_mb_s * 1e6
        self.dirty: dict[int, int] = {}         # page -> the sequence number it became dirty with
        self.fifo: deque[tuple[int, int]] = deque()   # (page, sequence) in the order pages became dirty
        self.inflight: dict[int, int] = {}      # page -> destage writes in flight that carry it
        self.used = 0                           # pages: dirty + being destaged
        self._dseq = 0
        self.blocked: deque[tuple[int, int, Done, Eta]] = deque()
        self.flush_waiters: list[tuple[Done, Eta]] = []
        self.events: list[tuple[float, int, Done]] = []
        self._seq = 0
        self.destaging = 0
        self.draining = False
        self.read_hits = self.write_backs = self.full_stalls = self.destages = self.destaged_bytes = 0

    # -- host commands

    def _pages(self, offset: int, length: int) -> range:
        return range(offset // PAGE, (offset + length - 1) // PAGE + 1)

    def _schedule(self, t: float, on_done: Done, eta: Eta) -> None:
        if eta is not None:
            eta(t)
        self._seq += 1
        heapq.heappush(self.events, (t, self._seq, on_done))

    def submit(self, offset, length, write, t, on_done, eta=None):
        if not write:
            if all(p in self.dirty or p in self.inflight for p in self._pages(offset, length)):
                self.read_hits += 1
                self._schedule(t + self.overhead + length / self.link, on_done, eta)
            else:
                self.array.submit(offset, length, False, t, on_done, eta)
            return
        if not self.write_back or len(self._pages(offset, length)) > self.size_pages:
            self.array.submit(offset, length, True, t, on_done, eta)
            return
        if self.blocked or not self._fits(offset, length):
            self.full_stalls += 1
            self.blocked.append((offset, length, on_done, eta))
        else:
            self._accept(offset, length, t, on_done, eta)
        self._destage_more(t)

    def _fits(self, offset: int, length: int) -> bool:
        new = sum(1 for p in self._pages(offset, length) if p not in self.dirty)
        return self.used + new <= self.size_pages

    def _accept(self, offset: int, length: int, t: float, on_done: Done, eta: Eta) -> None:
        for p in self._pages(offset, length):
            if p not in self.dirty:
                self._dseq += 1
                self.dirty[p] = self._dseq
                self.fifo.append((p, self._dseq))
                self.used += 1
        self.write_backs += 1
        if self.watermark and self.used >= self.high_pages:
            self.draining = True
        self._schedule(t + self.overhead + length / self.link, on_done, eta)

    def flush(self, t: float, on_done: Done, eta: Eta = None) -> None:
        if not self.write_back:
            self.array.flush(t, on_done, eta)
        elif self.spec.battery_backed:
            self._schedule(t + self.overhead, on_done, eta)
        elif not self.dirty and self.destaging == 0:
            self.array.flush(t, on_done, eta)
        else:
            self.flush_waiters.append((on_done, eta))
            self._destage_more(t)

    # -- destage

    def _want(self) -> bool:
        return not self.watermark or self.draining or bool(self.blocked) or bool(self.flush_waiters)

    def _destage_more(self, t: float) -> None:
        while self.destaging < self.spec.destage_depth and self.dirty and self._want():
            self._destage_one(t)

    def _destage_one(self, t: float) -> None:
        while True:
            page, seq = self.fifo.popleft()
            if self.dirty.get(page) == seq:
                break
        first = page * PAGE // self.segment * self.segment // PAGE
        last = (min(first * PAGE + self.segment, self.capacity) - 1) // PAGE
        lo_p = hi_p = page
        while lo_p > first and lo_p - 1 in self.dirty:
            lo_p -= 1
        while hi_p < last and hi_p + 1 in self.dirty:
            hi_p += 1
        take = list(range(lo_p, hi_p + 1))
        for p in take:
            del self.dirty[p]
            self.inflight[p] = self.inflight.get(p, 0) + 1
        lo = take[0] * PAGE
        hi = min((take[-1] + 1) * PAGE, self.capacity)
        self.destaging += 1
        self.destages += 1
        self.destaged_bytes += hi - lo
        self.array.submit(lo, hi - lo, True, t, self._destaged(take))

    def _destaged(self, take: list[int]) -> Callable[[float], None]:
        def done(t: float) -> None:
            for p in take:
                n = self.inflight[p] - 1
                if n:
                    self.inflight[p] = n
                else:
                    del self.inflight[p]
            self.used -= len(take)
            self.destaging -= 1
            if self.watermark and self.used <= self.low_pages:
                self.draining = False
            while self.blocked and self._fits(self.blocked[0][0], self.blocked[0][1]):
                offset, length, on_done, eta = self.blocked.popleft()
                self._accept(offset, length, t, on_done, eta)
            if self.flush_waiters and not self.dirty and self.destaging == 0:
                waiters, self.flush_waiters = self.flush_waiters, []
                for on_done, eta in waiters:
                    self.array.flush(t, on_done, eta)
            self._destage_more(t)
        return done

    # -- the Simulator's interface

    def next_time(self) -> float | None:
        return self.events[0][0] if self.events else None

    def fire(self, t: float) -> None:
        _, _, on_done = heapq.heappop(self.events)
        on_done(t)

    def extra_counters(self) -> dict:
        return {"cache_read_hits": self.read_hits, "cache_write_backs": self.write_backs,
                "cache_full_stalls": self.full_stalls, "cache_destages": self.destages,
                "cache_destaged_bytes": self.destaged_bytes, "cache_used_bytes": self.used * PAGE}
