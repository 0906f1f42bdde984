"""Where the host time of a search goes: cProfile of one ``cascade.search`` run, plus the
domain stage's kernel time split by kernel.

    python3 benchmarks/profile_search.py --models M.hmm.gz --seqs S.faa.gz --copies 10 [--out prof.txt]

Prints the functions with the most own time and the most cumulative time, and the domain
engine's kernel seconds per kernel (decode = fb_parser, region_fwd and ensemble = the
multi-domain regions' Forward and clustering, envelope = the per-envelope rescoring).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import cProfile
import io
import pstats
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from hmmcascade import cascade, scheduler  # noqa: E402
from hmmcascade.instrument import Instrument  # noqa: E402
from run_benchmark import add_workload_arguments, open_workload, workload_options  # noqa: E402


class ThreadSampler:
    """Every thread's stack every ``interval`` seconds (sys._current_frames), counted per thread by
    innermost frame and by innermost frame in hmmcascade's code: where each thread's wall time goes,
    waits included (a thread blocked in an OpenCL read shows that line)."""

    def __init__(self, interval: float):
        import threading

        self.interval, self.samples, self.names = interval, {}, {}
        self.timeline = []  # (seconds since start, thread, innermost hmmcascade line)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="sampler", daemon=True)

    def start(self):
        self.t0 = time.perf_counter()
        self._thread.start()

    def stop(self):
        self._stop.set()
        self._thread.join()

    def _run(self):
        import threading

        me = threading.get_ident()
        t0 = self.t0
        while not self._stop.wait(self.interval):
            now = time.perf_counter() - t0
            self.names.update((th.ident, th.name) for th in threading.enumerate())
            for ident, frame in sys._current_frames().items():
                if ident == me:
                    continue
                leaf = f"{Path(frame.f_code.co_filename).name}:{frame.f_code.co_name}:{frame.f_lineno}"
                ours, f = None, frame
                while f is not None:
                    if "hmmcascade" in f.f_code.co_filename:
                        ours = f"{Path(f.f_code.co_filename).name}:{f.f_code.co_name}:{f.f_lineno}"
                        break
                    f = f.f_back
                d = self.samples.setdefault(ident, ({}, {}))
                d[0][leaf] = d[0].get(leaf, 0) + 1
                d[1][ours] = d[1].get(ours, 0) + 1
                self.timeline.append((now, ident, ours if ours is not None else leaf))

    def report(self, buf, top: int):
        print(f"\n---- thread samples every {self.interval * 1e3:.1f} ms (seconds = samples x interval) ----",
              file=buf)
        for ident, (leaf, ours) in sorted(self.samples.items(), key=lambda kv: -sum(kv[1][0].values())):
            n = sum(leaf.values())
            print(f"\n  thread {self.names.get(ident, ident)}: {n} samples ({n * self.interval:.2f} s)", file=buf)
            for title, d in (("innermost hmmcascade line", ours), ("innermost frame", leaf)):
                print(f"    by {title}:", file=buf)
                for key, c in sorted(d.items(), key=lambda kv: -kv[1])[:top]:
                    print(f"      {c * self.interval:7.3f}s {100 * c / n:5.1f}%  {key}", file=buf)

    def report_window(self, buf, lo: float, hi: float, top: int):
        """Per thread, the innermost hmmcascade lines sampled from ``lo`` to ``hi`` seconds (negative:
        before the last sample)."""
        end = self.timeline[-1][0] if self.timeline else 0.0
        lo, hi = (x + end if x < 0 else x for x in (lo, hi))
        print(f"\n---- samples from {lo:.2f} s to {hi:.2f} s after the search started ----", file=buf)
        per = {}
        for t, ident, key in self.timeline:
            if lo <= t < hi:
                d = per.setdefault(ident, {})
                d[key] = d.get(key, 0) + 1
        for ident, d in sorted(per.items(), key=lambda kv: -sum(kv[1].values())):
            print(f"  thread {self.names.get(ident, ident)}: {sum(d.values()) * self.interval:.2f} s", file=buf)
            for key, c in sorted(d.items(), key=lambda kv: -kv[1])[:top]:
                print(f"      {c * self.interval:7.3f}s  {key}", file=buf)


def report_tables(buf, res) -> None:
    """The seconds of the steps of writing the search's tblout and domtblout (as the command line does)."""
    from hmmcascade.output import TableStream, per_query_hits

    t = time.perf_counter()
    by_query = per_query_hits(res.records, None, True)
    t1 = time.perf_counter()
    n_doms = sum(len(h.domains) for h in res.records)  # (the first read makes the batches' Domain records)
    t2 = time.perf_counter()
    n = {}
    for kind in ("tblout", "domtblout"):
        t3 = time.perf_counter()
        n[kind] = (len(TableStream(kind, Z=res.Z).lines(by_query, header=True)), time.perf_counter() - t3)
    print(f"\ntables: {len(res.records)} hits, {n_doms} domains; per_query_hits {t1 - t:.2f}s, domain records "
          f"{t2 - t1:.2f}s, " + ", ".join(f"{k} {c} lines {s:.2f}s" for k, (c, s) in n.items()), file=buf)


def report_overlap(buf, ev) -> None:
    """Per kernel name: its summed time, and its time alone on the device (no other kernel name
    running): what the device's busy span would lose at most if that kernel took no time."""
    points = sorted([(a, 1, i) for i, (a, _, _, _) in enumerate(ev)] + [(b, -1, i) for i, (_, b, _, _) in enumerate(ev)])
    running, sets, last = set(), {}, None  # sets: the set of names running -> ns
    for t, kind, i in points:
        if running:
            names = frozenset(str(ev[j][3]) for j in running)
            sets[names] = sets.get(names, 0) + (t - last)
        last = t
        (running.add if kind > 0 else running.discard)(i)
    alone = {next(iter(names)): t for names, t in sets.items() if len(names) == 1}
    total = {}
    for a, b, _, n in ev:
        total[str(n)] = total.get(str(n), 0) + (b - a)
    print("\nkernel time by name (seconds): summed, alone on the device (no other kernel running)", file=buf)
    for n, tt in sorted(total.items(), key=lambda kv: -kv[1]):
        print(f"    {n:28s} {tt * 1e-9:7.3f}  alone {alone.get(n, 0) * 1e-9:7.3f}", file=buf)
    print("  the sets of kernels running together longest (seconds):", file=buf)
    for names, tt in sorted(sets.items(), key=lambda kv: -kv[1])[:25]:
        print(f"    {tt * 1e-9:7.3f}  {' + '.join(sorted(names))}", file=buf)


class _NamedKernel:
    """A kernel whose launches' events are named in the device's instrument (``event_names``)."""

    def __init__(self, kernel, name, names: dict):
        self._kernel, self._name, self._names = kernel, name, names

    def __call__(self, *args, **kwargs):
        ev = self._kernel(*args, **kwargs)
        self._names[ev.int_ptr] = self._name
        return ev

    def __getattr__(self, attr):
        return getattr(self._kernel, attr)


def name_kernels(dev) -> None:
    """Wrap dev.kernel so that every launch's event is named (per device: the kernels cached)."""
    from hmmcascade.device import Device

    real = Device.kernel

    def kernel(self, program, name):
        k = real(self, program, name)
        return k if isinstance(k, _NamedKernel) else _NamedKernel(k, name, self.instrument.event_names)

    Device.kernel = kernel


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_workload_arguments(ap)
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--out", default=None, help="also write the report here")
    ap.add_argument("--batches", type=int, default=None, help="at least this many batches (scheduler.PIPELINE_BATCHES)")
    ap.add_argument("--fill-depth", type=int, default=None, help="scheduler.FILL_DEPTH")
    ap.add_argument("--ahead", type=int, default=None, help="MSV ranges started ahead of the one read (scheduler.MSV_AHEAD)")
    ap.add_argument("--begun-ahead", type=int, default=None,
                    help="batches prepared ahead, whose MSV ranges fill the device (scheduler.BEGUN_AHEAD)")
    ap.add_argument("--filter-thread", type=int, default=None,
                    help="batches whose filters run ahead in a thread of their own (scheduler.FILTER_THREAD)")
    ap.add_argument("--records-after", action="store_true",
                    help="make the records after the batch loop (how much the records thread slows the loop)")
    ap.add_argument("--serial", action="store_true",
                    help="make each batch's records in the main thread (cProfile then sees that work alone)")
    ap.add_argument("--gc", action="store_true", help="leave cyclic garbage collection on during the search")
    ap.add_argument("--warm", action="store_true",
                    help="run one search before the profiled one (buffer pools, page-locked memory, kernels built)")
    ap.add_argument("--window", action="append", default=[], metavar="LO:HI",
                    help="with --sample: also each thread's lines sampled from LO to HI seconds into the search "
                         "(negative: before its end)")
    ap.add_argument("--phase-windows", type=int, default=0, metavar="K",
                    help="with --sample: also each thread's lines sampled during each of the last K phases")
    ap.add_argument("--sample", type=float, default=None, metavar="SECONDS",
                    help="instead of cProfile: sample every thread's stack at this interval (wall time per "
                         "thread, by innermost frame and by innermost hmmcascade function)")
    ap.add_argument("--tables", action="store_true",
                    help="after the search: the seconds of what writing tblout and domtblout takes (the hits per "
                         "query sorted, the domain records made, each table's lines)")
    args = ap.parse_args()

    if args.batches:
        scheduler.PIPELINE_BATCHES = args.batches
    if args.fill_depth:
        scheduler.FILL_DEPTH = args.fill_depth
    if args.ahead:
        scheduler.MSV_AHEAD = args.ahead
    if args.begun_ahead:
        scheduler.BEGUN_AHEAD = args.begun_ahead
    if args.filter_thread is not None:
        scheduler.FILTER_THREAD = args.filter_thread
    db, seqs, dev = open_workload(args)

    engines = []
    init = cascade.Cascade.__init__

    def keep(self, *a, **k):
        init(self, *a, **k)
        engines.append(self)

    cascade.Cascade.__init__ = keep
    if args.gc:
        cascade.gc_paused = contextlib.nullcontext
    gc_s = [0.0, 0.0]

    def gc_clock(phase, info):
        if phase == "start":
            gc_s[1] = time.perf_counter()
        else:
            gc_s[0] += time.perf_counter() - gc_s[1]

    gc.callbacks.append(gc_clock)
    dev.instrument = inst = Instrument(launches=True, phases=True, events=True)
    name_kernels(dev)
    real_pool = scheduler.ThreadPoolExecutor
    if args.serial:  # the worker thread's work done in the main thread, where cProfile sees it alone
        from concurrent.futures import Future

        class ImmediatePool(real_pool):
            def submit(self, fn, *a, **k):
                fut = Future()
                fut.set_result(fn(*a, **k))
                return fut

        scheduler.ThreadPoolExecutor = ImmediatePool
    if args.records_after:  # the worker thread's work done after the device's last launch
        class DeferredPool(real_pool):
            def submit(self, fn, *a, **k):
                class Later:
                    def result(self):
                        return fn(*a, **k)
                return Later()

        scheduler.ThreadPoolExecutor = DeferredPool
    if args.warm:
        cascade.search(db, seqs, dev, options=workload_options(args))
        engines.clear()
        for log in (inst.launches, inst.phases, inst.events):
            log.clear()
    prof = cProfile.Profile()
    sampler = ThreadSampler(args.sample) if args.sample else None
    t = time.perf_counter()
    if sampler:
        sampler.start()
    else:
        prof.enable()
    res = cascade.search(db, seqs, dev, options=workload_options(args))
    if sampler:
        sampler.stop()
    else:
        prof.disable()
    wall = time.perf_counter() - t
    cascade.Cascade.__init__ = init

    buf = io.StringIO()
    s = res.stats
    print(f"device {dev.name}; search {wall:.2f}s, {len(res.hits)} hits; kernel_s {s.kernel_s}; "
          f"host_s {s.host_s:.2f}; cyclic GC {gc_s[0]:.2f}s", file=buf)
    for eng in engines:
        print("domain kernels:", {k: round(v, 3) for k, v in eng.domains.launches.kernel_s.items()},
              "cells:", eng.domains.launches.cells, file=buf)
    print("\nphases (wall seconds, in order; the per-batch sequence):", file=buf)
    tot = {}
    for name, a, b in inst.phases:
        tot[name] = tot.get(name, 0.0) + b - a
        print(f"  {name:16s} {a - t:8.3f} -> {b - t:8.3f}  {b - a:7.3f}s", file=buf)
    print("  totals:", {k: round(v, 3) for k, v in tot.items()}, file=buf)
    # the device's idle time: gaps between kernels (all kernels timed, in start order), each put
    # down to the phase marked last before the kernel after the gap was timed
    ev = sorted(inst.events, key=lambda e: e[:2])
    if ev:
        gaps, end, busy = [], ev[0][0], 0  # (length ns, where it starts, label)
        for a, b, label, _ in ev:
            if a > end:
                gaps.append((a - end, end, label))
            busy += max(0, b - max(a, end))
            end = max(end, b)
        span = (end - ev[0][0]) * 1e-9
        by_label = {}
        for g, _, label in gaps:
            by_label[label] = by_label.get(label, 0.0) + g * 1e-9
        print(f"\ndevice timeline: first kernel start to last kernel end {span:.2f}s, kernels {busy * 1e-9:.2f}s, "
              f"idle {sum(by_label.values()):.2f}s; idle before kernels timed after phase:", file=buf)
        for label, g in sorted(by_label.items(), key=lambda kv: -kv[1]):
            print(f"    {label:16s} {g:7.3f}s", file=buf)
        print("  longest gaps (seconds after the first kernel's start, length, phase):", file=buf)
        for g, at, label in sorted(gaps, reverse=True)[:15]:
            print(f"    {(at - ev[0][0]) * 1e-9:7.3f}s  {g * 1e-6:7.1f} ms  {label}", file=buf)
        report_overlap(buf, ev)
    print("\nlaunches per kernel: count, seconds, jobs, GCUPS; the slowest launches with their largest job's cells",
          file=buf)
    by = {}
    for rec in inst.launches:
        by.setdefault(rec[0], []).append(rec)
    for name, recs in by.items():
        sec = sum(r[1] for r in recs)
        cells = sum(r[4] for r in recs)
        print(f"  {name:16s} {len(recs):5d} launches {sec:8.3f}s {sum(r[2] for r in recs):9d} jobs "
              f"{cells / max(sec, 1e-12) / 1e9:8.1f} GCUPS", file=buf)
        for r in sorted(recs, key=lambda r: -r[1])[:5]:
            print(f"      {r[1]:8.4f}s jobs {r[2]:7d} max job {r[3]:.3e} cells, all {r[4]:.3e} "
                  f"({r[4] / max(r[1], 1e-12) / 1e9:.1f} GCUPS)", file=buf)
    scheduler.ThreadPoolExecutor = real_pool
    if sampler:
        sampler.report(buf, args.top)
        for w in args.window:
            lo, hi = (float(x) for x in w.split(":"))
            sampler.report_window(buf, lo, hi, args.top)
        for name, a, b in (inst.phases[-args.phase_windows:] if args.phase_windows else []):
            print(f"\n==== phase {name}", file=buf)
            sampler.report_window(buf, a - sampler.t0, b - sampler.t0, 12)
    for key in (("tottime", "cumulative") if not sampler else ()):
        print(f"\n---- by {key} ----", file=buf)
        pstats.Stats(prof, stream=buf).sort_stats(key).print_stats(args.top)
    if not sampler:
        print("\n---- callers of the functions with the most own time ----", file=buf)
        pstats.Stats(prof, stream=buf).sort_stats("tottime").print_callers(8)
    if args.tables:
        report_tables(buf, res)
    text = buf.getvalue()
    print(text)
    if args.out:
        Path(args.out).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
