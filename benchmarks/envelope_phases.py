"""Where ``envelope_wg``'s time goes, phase by phase: the SM clock (NVIDIA, inline PTX) around each phase.

    python3 benchmarks/envelope_phases.py --models M.hmm.gz --seqs S.faa.gz [--copies 10] [--json OUT]

Copies ``src/hmmcascade`` into a temporary folder and patches the copy's ``envelope_wg`` (domains.cl,
wg_fb.h) so that work-item 0 of every work-group adds the clock cycles of each phase to a device buffer:
Forward, Backward, decoding, null2, OA fill, OA traceback, OA display (and counts the jobs, rows and
node-rows); the package itself is not changed.  Then, in a process importing that copy, one search
(untimed: builds, buffers) and one counted with the launches' kernel seconds, and prints each phase's
share of the summed cycles, its cycles per row and per node-row (M x L), and the work-groups resident per
compute unit on average (summed cycles / (kernel seconds x clock x compute units)); ``--json`` also
gives the jobs and node-rows the launches had (the counters must agree: every job counted once).  Elsewhere than on
NVIDIA the clock reads 0: the script then says so (the patch still builds and runs, which the tests use).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PHASES = ["forward", "backward", "decoding", "null2", "oa_fill", "oa_traceback", "oa_display"]

#: (file under hmmcascade/kernels, text to find once, text put in its place); marks in envelope_wg only
PATCHES = [
    ("domains.cl", "__kernel void envelope_wg(\n    ENVELOPE_JOB_ARGS, __local float4 *lw)\n{",
     "#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable\n"
     "inline ulong hmmc_clock(void)\n{\n#ifdef HMMC_PTX_SHFL\n"
     "    ulong t; asm volatile(\"mov.u64 %0, %%clock64;\" : \"=l\"(t)); return t;\n#else\n    return 0;\n#endif\n}\n"
     "__kernel void envelope_wg(\n    ENVELOPE_JOB_ARGS, __local float4 *lw, __global ulong *clk)\n{"),
    ("domains.cl", "    const int lid = (int) get_local_id(0), G = (int) get_local_size(0);\n"
                   "    const int s = job_seq[j], m = job_model[j];\n    const int M = model_M[m];\n"
                   "    const int W = (M + 3) / 4 * 4;\n    const int Q4 = W >> 2;\n"
                   "    const int Q = max(2, (M - 1) / 4 + 1);\n    const int Ld = job_len[j];",
     "    const int lid = (int) get_local_id(0), G = (int) get_local_size(0);\n"
     "    const int s = job_seq[j], m = job_model[j];\n    const int M = model_M[m];\n"
     "    const int W = (M + 3) / 4 * 4;\n    const int Q4 = W >> 2;\n"
     "    const int Q = max(2, (M - 1) / 4 + 1);\n    const int Ld = job_len[j];\n"
     "    ulong tprev = hmmc_clock();\n"
     "#define CLK_MARK(n) if (lid == 0) { const ulong t_ = hmmc_clock(); atom_add(&clk[n], t_ - tprev); tprev = t_; }"),
    ("wg_fb.h", "    /* ---- Backward (backward_matrix_striped",
     "#ifdef CLK_MARK\n    CLK_MARK(0)\n#endif\n    /* ---- Backward (backward_matrix_striped"),
    ("domains.cl", "#include \"wg_fb.h\"\n\n    /* ---- p7_Decoding: B <- posterior probabilities",
     "#include \"wg_fb.h\"\n    CLK_MARK(1)\n\n    /* ---- p7_Decoding: B <- posterior probabilities"),
    ("domains.cl", "    WG_SYNC();\n\n    /* ---- p7_Null2_ByExpectation, up to the odds (workspace: row 0 of F) ---- */",
     "    WG_SYNC();\n    CLK_MARK(2)\n\n    /* ---- p7_Null2_ByExpectation, up to the odds (workspace: row 0 of F) ---- */"),
    ("domains.cl", "    /* ---- p7_OptimalAccuracy: F <- OA scores ---- */",
     "    CLK_MARK(3)\n    /* ---- p7_OptimalAccuracy: F <- OA scores ---- */"),
    ("domains.cl", "    if (lid != 0) return;\n    const float envsc = bc[4];",
     "    CLK_MARK(4)\n    if (lid != 0) return;\n    const float envsc = bc[4];"),
    ("domains.cl", "    info[j] = (float4) (envsc, oasc, (float) nt, 0.0f);\n    oa_display(",
     "    CLK_MARK(5)\n    info[j] = (float4) (envsc, oasc, (float) nt, 0.0f);\n    oa_display("),
    ("domains.cl", "disp + 2 * n_jobs, cols);\n#undef FC",
     "disp + 2 * n_jobs, cols);\n    CLK_MARK(6)\n    atom_add(&clk[7], 1UL); atom_add(&clk[8], (ulong) Ld);\n"
     "    atom_add(&clk[9], (ulong) Ld * (ulong) M);\n#undef CLK_MARK\n#undef FC"),
    ("../domaindef/envelopes.py",
     "ev = self.k_env_wg(q, (k * ENVELOPE_WG,), (ENVELOPE_WG,), *common, lw)",
     "ev = self.k_env_wg(q, (k * ENVELOPE_WG,), (ENVELOPE_WG,), *common, lw, PHASE_CLOCKS(self.dev))"),
    ("../domaindef/envelopes.py", "class EnvelopeRescorer:",
     "def PHASE_CLOCKS(dev, _buf={}):  # (benchmarks/envelope_phases.py: the phases' cycle counters)\n"
     "    if 'b' not in _buf:\n        import pyopencl as cl\n"
     "        _buf['b'] = cl.Buffer(dev.ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR,\n"
     "                              hostbuf=np.zeros(16, np.uint64))\n"
     "    return _buf['b']\n\n\nclass EnvelopeRescorer:"),
]


def patched_copy(dest: Path) -> Path:
    """``src/hmmcascade`` copied under ``dest`` with :data:`PATCHES` applied; its ``src`` folder.  A
    SystemExit naming the text where one is not found exactly once (the kernel changed: mend the patch)."""
    pkg = dest / "src" / "hmmcascade"
    shutil.copytree(ROOT / "src" / "hmmcascade", pkg, ignore=shutil.ignore_patterns("__pycache__"))
    kernels = pkg / "kernels"
    seen_envelope_wg = False
    for name, old, new in PATCHES:
        path = (kernels / name).resolve()
        text = path.read_text()
        if name == "domains.cl":  # (only inside envelope_wg: the text after its declaration)
            at = text.index("__kernel void envelope_wg(") if seen_envelope_wg else 0
            head, tail = text[:at], text[at:]
        else:
            head, tail = "", text
        if tail.count(old) != 1:
            raise SystemExit(f"envelope_phases: {path.name}: the text to patch is not there once: {old[:60]!r}")
        path.write_text(head + tail.replace(old, new, 1))
        seen_envelope_wg = seen_envelope_wg or "envelope_wg" in new
    return dest / "src"


def child(args) -> int:
    """The counted search, in a process importing the patched copy (its folder first on sys.path)."""
    import numpy as np

    from hmmcascade import cascade  # (the patched copy: first on sys.path)
    from hmmcascade.domaindef import envelopes

    if not hasattr(envelopes, "PHASE_CLOCKS"):
        raise SystemExit(f"envelope_phases: {envelopes.__file__} is not the patched copy")
    from hmmcascade.instrument import Instrument

    sys.path.insert(1, str(ROOT / "benchmarks"))
    from run_benchmark import open_workload, workload_options

    import pyopencl as cl

    db, seqs, dev = open_workload(args)
    options = workload_options(args)
    cascade.search(db, seqs, dev, options=options)  # untimed: builds, buffers
    buf = envelopes.PHASE_CLOCKS(dev)
    cl.enqueue_copy(dev.queue, buf, np.zeros(16, np.uint64)).wait()
    inst = Instrument(launches=True)
    cascade.search(db, seqs, dev, options=options, instrument=inst)
    h = np.zeros(16, np.uint64)
    cl.enqueue_copy(dev.queue, h, buf).wait()
    wg = [(sec, n, csum) for name, sec, n, _, csum in inst.launches if name == "envelope1/wg"]
    seconds = sum(w[0] for w in wg)
    total, jobs, rows, cells = int(h[:7].sum()), int(h[7]), int(h[8]), int(h[9])
    units, mhz = int(dev.device.max_compute_units), int(dev.device.max_clock_frequency)
    out = {"device": dev.name, "options": args.kernel_options or "(defaults)", "jobs": jobs, "rows": rows,
           "node_rows": cells, "launched": {"jobs": sum(w[1] for w in wg), "node_rows": sum(w[2] for w in wg)},
           "kernel_s": seconds, "cycles": total, "compute_units": units, "clock_mhz": mhz, "phases": {}}
    print(f"{dev.name}: envelope_wg {jobs} jobs, {rows} rows, {cells} node-rows, {seconds:.4f} kernel seconds")
    if jobs == 0:
        print("envelope_wg did not run (the envelope path is not wg here: --kernel-options envelope=wg)")
    elif total == 0:
        print("no clock on this device (the phases' cycles read 0): NVIDIA only")
    else:
        for i, name in enumerate(PHASES):
            c = int(h[i])
            out["phases"][name] = {"cycles": c, "share": c / total, "per_row": c / rows, "per_node_row": c / cells}
            print(f"  {name:12s} {c:.4e} cycles {c / total:6.1%}  {c / rows:9.0f} a row  {c / cells:7.2f} a node-row")
        if seconds > 0:
            out["groups_per_unit"] = total / (seconds * mhz * 1e6 * units)
            print(f"  work-groups resident per compute unit, on average: {out['groups_per_unit']:.1f}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return 0


def main(argv=None) -> int:
    if "--child" in (sys.argv[1:] if argv is None else argv):
        # the patched copy (first on PYTHONPATH), imported before run_benchmark puts this checkout's src first
        import hmmcascade.cascade  # noqa: F401
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from run_benchmark import add_workload_arguments

    add_workload_arguments(ap)
    ap.add_argument("--json", default=None)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return child(args)
    with tempfile.TemporaryDirectory(prefix="envelope_phases.") as tmp:
        src = patched_copy(Path(tmp))
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(src), *filter(None, [os.environ.get("PYTHONPATH")])]))
        cmd = [sys.executable, str(Path(__file__).resolve()), "--child", *(argv if argv is not None else sys.argv[1:])]
        return subprocess.run(cmd, env=env).returncode


if __name__ == "__main__":
    raise SystemExit(main())
