"""Does releasing a sub-buffer after its parent crash this OpenCL driver?

The Pfam-A-sized searches on two H200s (2026-11-26) died in a segmentation fault at a statement
that drops the previous launch's sub-buffers, after the pool could have released (evicted) their
parent.  OpenCL's specification says a parent is deleted only after its sub-buffers; this runs the
orders one at a time, each in a process of its own, and prints each one's exit status (0: fine,
-11: segmentation fault).  Usage: python subbuffer_release_order.py [platform:device]
"""

from __future__ import annotations

import subprocess
import sys

CASES = ["sub_first", "parent_first", "parent_first_queued", "parent_first_reused", "parent_first_kernel"]

SOURCE = """
__kernel void spin(__global int *x, int reps) {
    int i = get_global_id(0), v = x[i];
    for (int r = 0; r < reps; r++) v = v * 1664525 + 1013904223;
    x[i] = v;
}"""


def run(case: str, where: str) -> None:
    import numpy as np
    import pyopencl as cl

    p, d = (int(v) for v in where.split(":"))
    dev = cl.get_platforms()[p].get_devices()[d]
    ctx = cl.Context([dev])
    q = cl.CommandQueue(ctx)
    spin = cl.Program(ctx, SOURCE).build().spin
    align = max(16, dev.mem_base_addr_align // 8)
    n = 1 << 20
    subs = []
    for _ in range(64):  # many parents, each with a few sub-buffers, as the search's launches
        parent = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, size=4 * n + 4 * align)
        cl.enqueue_fill_buffer(q, parent, np.int32(1), 0, parent.size)
        sub = [parent.get_sub_region(k * align, 4 * (n // 4)) for k in range(3)]
        spin(q, (n // 4,), None, sub[0], np.int32(2000 if "queued" in case else 1))
        if case != "parent_first_queued":
            q.finish()
        if case == "sub_first":
            del sub
            parent.release()
        else:
            parent.release()
            if case == "parent_first_reused":  # the driver hands the parent's memory out again
                b = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, size=4 * n + 4 * align)
                cl.enqueue_fill_buffer(q, b, np.int32(2), 0, b.size)
            if case == "parent_first_kernel":  # (a use after the parent's release; the spec allows it)
                spin(q, (n // 4,), None, sub[1], np.int32(1))
            subs.append(sub)
            if len(subs) > 2:
                subs.pop(0)  # releases the sub-buffers of a parent released two rounds ago
    q.finish()
    subs.clear()
    q.finish()
    print(case, "ok", flush=True)


def main(argv: list[str]) -> int:
    if len(argv) > 1 and argv[1] == "--case":
        run(argv[2], argv[3])
        return 0
    where = argv[1] if len(argv) > 1 else "0:0"
    for case in CASES:
        r = subprocess.run([sys.executable, __file__, "--case", case, where], capture_output=True, text=True)
        print(f"{case}: exit {r.returncode}", (r.stdout + r.stderr).strip().splitlines()[-1:] or "", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
