"""Cold start: how long building each of hmmcascade's OpenCL programs takes with no kernel cache.

Builds every program of ``hmmcascade/kernels`` one after another with the search's own build
options (:meth:`hmmcascade.device.Device.program`) and prints each one's time and the total. Run it
with the caches off, e.g. on the GPU machine:

    PYOPENCL_NO_CACHE=1 CUDA_CACHE_DISABLE=1 python3 benchmarks/cold_start.py --json $OUT/cold.json

(``PYOPENCL_NO_CACHE`` turns off pyopencl's binary cache, ``CUDA_CACHE_DISABLE`` NVIDIA's JIT cache.)

This is the one-after-another build time.  A search on a cold machine builds the parts at once in
processes of their own (:mod:`hmmcascade.builds`); measure that as a whole first search with empty
caches, e.g. ``XDG_CACHE_HOME=/tmp/cold CUDA_CACHE_PATH=/tmp/cold/nv /usr/bin/time python3 -m
hmmcascade search resources/pfam35_default.hmm.gz resources/proteins_default.faa.gz --tblout /tmp/t``.
"""

from __future__ import annotations

import argparse
import json
import time

from hmmcascade.device import kernels_dir, open_device


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default=None)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()

    t0 = time.perf_counter()
    dev = open_device(args.device)
    report = {"device": dev.name, "open_s": time.perf_counter() - t0, "programs": {}}
    names = sorted(p.name[:-3] for p in kernels_dir().iterdir() if p.name.endswith(".cl"))
    t0 = time.perf_counter()
    for name in names:
        t = time.perf_counter()
        dev.program(name)
        report["programs"][name] = time.perf_counter() - t
        print(f"  {name:10s} {report['programs'][name]:7.2f} s", flush=True)
    report["build_s"] = time.perf_counter() - t0
    print(f"{dev.name}: opened in {report['open_s']:.2f} s; {len(names)} programs built in {report['build_s']:.2f} s",
          flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(report, fh, indent=2)


if __name__ == "__main__":
    main()
