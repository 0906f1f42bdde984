"""Which OpenCL calls make the host wait for the device (run on the GPU machine).

A kernel of ~0.15-0.2 s is queued before each call; the script prints how long the call took on
the host and how long the queue took to finish afterwards.  Measured on an H100 with NVIDIA's
OpenCL (2026-11-21): main-queue writes, launches using COPY_HOST_PTR buffers and buffer releases
wait for the queue; writes on a second queue, kernels on new scratch buffers and local-memory
arguments do not (see benchmarks/archive/RESULTS-history.md, fifth session).

    PYOPENCL_CTX=0 python3 benchmarks/opencl_blocking.py
"""
import time, numpy as np, pyopencl as cl
ctx = cl.create_some_context(interactive=False)
q = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
prg = cl.Program(ctx, """
__kernel void busy(__global float *a, int n) { float x = a[get_global_id(0)]; float y = x + 1.0f;
  for (int i = 0; i < n; i++) { x = x * y + 1e-7f; y = y * x - 1e-7f; } a[get_global_id(0)] = x + y; }
__kernel void touch(__global float *a) { a[get_global_id(0)] += 1.0f; }
__kernel void touch2(__global float *a, __global const int *b) { a[get_global_id(0)] += b[get_global_id(0)]; }
__kernel void touchl(__global float *a, __local float *l) { l[get_local_id(0)] = a[get_global_id(0)]; barrier(CLK_LOCAL_MEM_FENCE); a[get_global_id(0)] = l[(get_local_id(0) + 1) % get_local_size(0)]; }
""").build()
K = {n: cl.Kernel(prg, n) for n in ("busy", "touch", "touch2", "touchl")}
small = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 64 << 20)
def busy(n):
    K["busy"].set_args(small, np.int32(n)); return cl.enqueue_nd_range_kernel(q, K["busy"], (1 << 20,), (256,))
e = busy(1000); q.finish(); t1 = (e.profile.end - e.profile.start) * 1e-9
n200 = int(1000 * 0.2 / t1); e = busy(n200); q.finish(); print("busy calibrated", (e.profile.end - e.profile.start) * 1e-9)
def timed(label, fn):
    busy(n200)
    t = time.perf_counter(); fn(); t1 = time.perf_counter(); q.finish(); t2 = time.perf_counter()
    print(f"{label:60s} host {1e3*(t1-t):8.2f} ms  (finish after {1e3*(t2-t1):7.2f} ms)")
big = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 256 << 20)
K["touch"].set_args(big); cl.enqueue_nd_range_kernel(q, K["touch"], (1024,), None); q.finish()
timed("kernel on existing buffer", lambda: (K["touch"].set_args(big), cl.enqueue_nd_range_kernel(q, K["touch"], (1024,), None)))
def newscratch():
    b = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 64 << 20); K["touch"].set_args(b); cl.enqueue_nd_range_kernel(q, K["touch"], (1024,), None); return b
keep = []
timed("kernel on new 64 MiB scratch", lambda: keep.append(newscratch()))
for nb in (4 << 10, 1 << 20, 32 << 20):
    a = np.ones(nb // 4, np.int32)
    def f():
        b = cl.Buffer(ctx, cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR, hostbuf=a); keep.append(b)
        K["touch2"].set_args(big, b); cl.enqueue_nd_range_kernel(q, K["touch2"], (1024,), None)
    timed(f"kernel on new COPY_HOST_PTR {nb} B", f)
    def g():
        b = cl.Buffer(ctx, cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR, hostbuf=a); keep.append(b)
    timed(f"create COPY_HOST_PTR {nb} B only", g)
    pre = cl.Buffer(ctx, cl.mem_flags.READ_ONLY, nb); keep.append(pre)
    timed(f"enqueue_copy nonblocking pageable {nb} B", lambda: cl.enqueue_copy(q, pre, a, is_blocking=False))
    pin = cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.ALLOC_HOST_PTR, size=nb)
    mq = cl.CommandQueue(ctx)
    h, _ = cl.enqueue_map_buffer(mq, pin, cl.map_flags.READ | cl.map_flags.WRITE, 0, (nb,), np.uint8); mq.finish()
    h[:] = 1
    timed(f"enqueue_copy nonblocking pinned->dev {nb} B", lambda: cl.enqueue_copy(q, pre, h, is_blocking=False))
for lb in (1024, 16 << 10, 40 << 10):
    def f():
        K["touchl"].set_args(big, cl.LocalMemory(lb)); cl.enqueue_nd_range_kernel(q, K["touchl"], (1024,), (64,))
    timed(f"kernel with LocalMemory {lb} B", f)
    timed(f"kernel with LocalMemory {lb} B again", f)
b = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 1 << 20); K["touch"].set_args(b); cl.enqueue_nd_range_kernel(q, K["touch"], (1024,), None); q.finish()
def rel():
    global b
    del b
timed("release buffer used earlier (done)", rel)
b = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 1 << 20)
def relq():
    global b
    K["touch"].set_args(b); cl.enqueue_nd_range_kernel(q, K["touch"], (1024,), None); del b
timed("enqueue then release buffer", relq)
def ev_status():
    e = cl.enqueue_marker(q); e.command_execution_status
timed("marker + status", ev_status)
