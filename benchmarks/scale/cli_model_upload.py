"""The CLI case's device start, piece by piece: numpy's and pyopencl's imports, the platforms, a context
with a test build (``auto``'s test) and a plain one, then each large table of a pressed database copied
from its memory map in one thread and uploaded (the copy, the enqueue, the wait), the same copies by eight
threads (``hmmcascade.device.host_copy``'s way), and a blocking write straight from the map.

    python3 benchmarks/scale/cli_model_upload.py M.hmmc

Needs the prelude of ../shared/DEVICE.md on the GPU machine (M.hmmc as benchmarks/scale/cli_alternate.sh
presses it).  Run it twice: the first process also fills the driver's caches.
"""

from __future__ import annotations

import sys
import threading
import time

TABLES = ["msv_cost_u8", "vit_msc_i16", "vit_tsc_i16", "fwd_msc_f32", "fwd_tsc_f32"]


def threaded_copy(a, threads: int = 8):
    """hmmcascade.device.host_copy's way with exactly ``threads`` threads, whatever the array's size and the
    machine's CPUs (host_copy takes fewer for small arrays and small machines)."""
    import numpy as np

    flat = a.reshape(-1)
    out = np.empty_like(flat)
    step = -(-len(flat) // threads)
    workers = [threading.Thread(target=np.copyto, args=(out[s: s + step], flat[s: s + step]))
               for s in range(0, len(flat), step)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return out


def main(path: str) -> int:
    t = time.perf_counter
    t0 = t()
    import numpy as np
    t1 = t()
    import pyopencl as cl
    t2 = t()
    dev = cl.get_platforms()[0].get_devices()[0]
    t3 = t()
    ctx = cl.Context([dev])
    cl.Program(ctx, "__kernel void probe(__global int *a) { a[0] = 1; }").build()
    t4 = t()
    ctx = cl.Context([dev])
    t5 = t()
    print(f"import numpy {t1 - t0:.3f} s, pyopencl {t2 - t1:.3f} s; platforms {t3 - t2:.3f} s; a context and a test "
          f"build {t4 - t3:.3f} s; a context {t5 - t4:.3f} s")
    from hmmcascade.profiles import ProfileDB

    queue = cl.CommandQueue(ctx)
    db = ProfileDB.load(path)
    for name in TABLES:
        a = np.asarray(getattr(db, name))
        ta = t()
        c = a.copy()
        tb = t()
        buf = cl.Buffer(ctx, cl.mem_flags.READ_ONLY, c.nbytes)
        ev = cl.enqueue_copy(queue, buf, c, is_blocking=False)
        tc = t()
        ev.wait()
        print(f"{name:12s} {c.nbytes / 1e6:7.1f} MB: copied from the map {tb - ta:.3f} s, enqueued {t() - tb:.3f} s "
              f"(the call {tc - tb:.3f} s)")
    db = ProfileDB.load(path)  # (a new map: its pages faulted in again)
    for name in TABLES:
        a = np.asarray(getattr(db, name))
        ta = t()
        threaded_copy(a)
        print(f"{name:12s} copied by 8 threads {t() - ta:.3f} s")
    db = ProfileDB.load(path)
    for name in TABLES[:2]:
        a = np.asarray(getattr(db, name)).reshape(-1)
        buf = cl.Buffer(ctx, cl.mem_flags.READ_ONLY, a.nbytes)
        ta = t()
        cl.enqueue_copy(queue, buf, a, is_blocking=True)
        print(f"{name:12s} a blocking write from the read-only map {t() - ta:.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
