"""Do kernels on two in-order queues overlap on this OpenCL device, and which shared buffers stop
them (run on the GPU machine)?

Two launches of a kernel that keeps few work-groups busy for ~50 ms each (a long serial loop: the
shape of the domain stage's long-model launches), one per queue, each writing a buffer of its own
and reading a table: the same table created READ_WRITE, the same table created READ_ONLY, or a
copy each.  Prints each case's overlap from the events' profiling times.

    python3 benchmarks/opencl_queues.py
"""
import numpy as np
import pyopencl as cl

ctx = cl.create_some_context(interactive=False)
P = cl.command_queue_properties.PROFILING_ENABLE
qa, qb = cl.CommandQueue(ctx, properties=P), cl.CommandQueue(ctx, properties=P)
prg = cl.Program(ctx, """
__kernel void walk(__global const float *t, __global float *out, int n) {
    float x = (float) get_global_id(0);
    for (int i = 0; i < n; i++) x = x * 0.999f + t[(i + (int) x) & 1023];
    out[get_global_id(0)] = x;
}""").build()
mf = cl.mem_flags
host = np.ones(1 << 20, dtype=np.float32)
rw = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=host)
ro = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=host)
ro2 = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=host)
outs = [cl.Buffer(ctx, mf.READ_WRITE, 4 << 20) for _ in range(2)]
ka, kb = cl.Kernel(prg, "walk"), cl.Kernel(prg, "walk")


def run(ta, tb, n):
    ka.set_args(ta, outs[0], np.int32(n))
    kb.set_args(tb, outs[1], np.int32(n))
    ea = cl.enqueue_nd_range_kernel(qa, ka, (64 * 32,), (32,))
    eb = cl.enqueue_nd_range_kernel(qb, kb, (64 * 32,), (32,))
    qa.finish(), qb.finish()
    a, b = (ea.profile.start, ea.profile.end), (eb.profile.start, eb.profile.end)
    return a, b


run(rw, rw, 1000)
a, _ = run(rw, rw, 200000)
n = int(200000 * 0.05 / ((a[1] - a[0]) * 1e-9))
for label, ta, tb in (("same READ_WRITE table", rw, rw), ("same READ_ONLY table", ro, ro),
                      ("two READ_ONLY tables", ro, ro2), ("READ_WRITE and READ_ONLY", rw, ro2)):
    a, b = run(ta, tb, n)
    both = max(0, min(a[1], b[1]) - max(a[0], b[0])) * 1e-6
    print(f"{label:28s} A {(a[1] - a[0]) * 1e-6:6.1f} ms, B {(b[1] - b[0]) * 1e-6:6.1f} ms, "
          f"span {(max(a[1], b[1]) - min(a[0], b[0])) * 1e-6:6.1f} ms, overlap {both:6.1f} ms")
