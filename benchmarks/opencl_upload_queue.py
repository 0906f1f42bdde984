"""Uploads through a second queue: does the host wait, and do main-queue kernels see the data?

    PYOPENCL_CTX=0 python3 benchmarks/opencl_upload_queue.py

See benchmarks/opencl_blocking.py and benchmarks/archive/RESULTS-history.md (fifth session).
"""
import time, numpy as np, pyopencl as cl
ctx = cl.create_some_context(interactive=False)
P = cl.command_queue_properties.PROFILING_ENABLE
q = cl.CommandQueue(ctx, properties=P)
q2 = cl.CommandQueue(ctx, properties=P)
prg = cl.Program(ctx, """
__kernel void busy(__global float *a, int n) { float x = a[get_global_id(0)]; float y = x + 1.0f;
  for (int i = 0; i < n; i++) { x = x * y + 1e-7f; y = y * x - 1e-7f; } a[get_global_id(0)] = x + y; }
__kernel void copyk(__global int *dst, __global const int *src, int n) { int i = get_global_id(0); if (i < n) dst[i] = src[i] + 1; }
""").build()
K = {n: cl.Kernel(prg, n) for n in ("busy", "copyk")}
small = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 64 << 20)
def busy(n, queue=q):
    K["busy"].set_args(small, np.int32(n)); return cl.enqueue_nd_range_kernel(queue, K["busy"], (1 << 20,), (256,))
e = busy(1000); q.finish(); t1 = (e.profile.end - e.profile.start) * 1e-9
n200 = int(1000 * 0.2 / t1)
def timed(label, fn):
    busy(n200)
    t = time.perf_counter(); r = fn(); t1 = time.perf_counter(); q.finish(); q2.finish(); t2 = time.perf_counter()
    print(f"{label:64s} host {1e3*(t1-t):8.2f} ms  (finish after {1e3*(t2-t1):7.2f} ms)", flush=True)
    return r
N = 1 << 18
a = np.arange(N, dtype=np.int32)
dst = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 4 * N)
dev = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 4 * N)
def check(label):
    out = np.empty(N, np.int32); cl.enqueue_copy(q, out, dst); print("   ", label, "correct" if np.array_equal(out, a + 1) else "WRONG")
# 1. write on a second queue, kernel on main queue waits for it via event
def w2():
    ev = cl.enqueue_copy(q2, dev, a, is_blocking=False)
    K["copyk"].set_args(dst, dev, np.int32(N)); cl.enqueue_nd_range_kernel(q, K["copyk"], (N,), None, wait_for=[ev])
timed("write on queue 2 + kernel on queue 1 waiting for it", w2); check("q2 write")
def w2only():
    return cl.enqueue_copy(q2, dev, a, is_blocking=False)
timed("write on queue 2 alone", w2only)
# 2. zero-copy: ALLOC_HOST_PTR mapped persistently, kernel reads it
zc = cl.Buffer(ctx, cl.mem_flags.READ_ONLY | cl.mem_flags.ALLOC_HOST_PTR, 4 * N)
mq = cl.CommandQueue(ctx)
h, _ = cl.enqueue_map_buffer(mq, zc, cl.map_flags.WRITE, 0, (N,), np.int32); mq.finish()
K["copyk"].set_args(dst, zc, np.int32(N)); cl.enqueue_nd_range_kernel(q, K["copyk"], (N,), None); q.finish()
def zcopy():
    h[:] = a
    K["copyk"].set_args(dst, zc, np.int32(N)); cl.enqueue_nd_range_kernel(q, K["copyk"], (N,), None)
timed("zero-copy ALLOC_HOST_PTR mapped, write then kernel", zcopy); check("zero-copy")
# 3. map a device buffer for writing (non-blocking), write, unmap
def mapw():
    hh, ev = cl.enqueue_map_buffer(q, dev, cl.map_flags.WRITE_INVALIDATE_REGION, 0, (N,), np.int32, is_blocking=False)
    return hh, ev
r = timed("map device buffer non-blocking (WRITE_INVALIDATE)", mapw)
hh, ev = r; ev.wait(); hh[:] = a; del hh
# 4. fill buffer
timed("enqueue_fill_buffer", lambda: cl.enqueue_fill_buffer(q, dev, np.int32(0), 0, 4 * N))
# 5. USE_HOST_PTR buffer
def uhp():
    b = cl.Buffer(ctx, cl.mem_flags.READ_ONLY | cl.mem_flags.USE_HOST_PTR, hostbuf=a)
    K["copyk"].set_args(dst, b, np.int32(N)); cl.enqueue_nd_range_kernel(q, K["copyk"], (N,), None); return b
bb = timed("USE_HOST_PTR buffer + kernel", uhp); check("use_host_ptr")
# 6. zero-copy with a new ALLOC_HOST_PTR buffer each time from a pool: map once
def w_pinned_q2():
    ev = cl.enqueue_copy(q2, dev, h, is_blocking=False)
    K["copyk"].set_args(dst, dev, np.int32(N)); cl.enqueue_nd_range_kernel(q, K["copyk"], (N,), None, wait_for=[ev])
h[:] = a
timed("pinned write on queue 2 + kernel waiting", w_pinned_q2); check("pinned q2")
# 7. busy on queue 1; kernel on queue 2 touching another buffer: concurrent?
def k2():
    K["copyk"].set_args(dst, zc, np.int32(N)); return cl.enqueue_nd_range_kernel(q2, K["copyk"], (N,), None)
e = timed("kernel on queue 2 (other buffers)", k2)
# 8. read device->host on queue 2 while busy
out = np.empty(N, np.int32)
timed("read on queue 2 nonblocking", lambda: cl.enqueue_copy(q2, out, dst, is_blocking=False))
