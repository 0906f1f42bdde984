#!/usr/bin/env python3
"""Run a command while sampling the GPU's used memory (nvidia-smi) and the command's peak host memory.

Usage: gpu_memory.py [--json FILE] [--interval-ms 200] -- COMMAND [ARGS...]

Prints one line: exit status, wall seconds, peak GPU memory used (MiB, whole device, as
nvidia-smi reports it: the driver's and other processes' use included) and the command's peak
resident host memory (its children's maximum, from getrusage); with ``--json`` the same and the
samples as JSON.  Without nvidia-smi the GPU fields are null.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import threading
import time


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", default=None)
    p.add_argument("--interval-ms", type=int, default=200)
    p.add_argument("command", nargs=argparse.REMAINDER)
    args = p.parse_args()
    cmd = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not cmd:
        p.error("no command given")
    samples: list[tuple[float, int]] = []
    stop = threading.Event()
    smi = shutil.which("nvidia-smi")
    t0 = time.perf_counter()

    def sample():
        proc = subprocess.Popen([smi, "--query-gpu=memory.used", "--format=csv,noheader,nounits",
                                 f"-lms={args.interval_ms}"], stdout=subprocess.PIPE, text=True)
        try:
            for line in proc.stdout:
                if stop.is_set():
                    break
                try:
                    samples.append((round(time.perf_counter() - t0, 2), int(line.split(",")[0])))
                except ValueError:
                    pass
        finally:
            proc.terminate()

    thread = threading.Thread(target=sample, daemon=True) if smi else None
    if thread:
        thread.start()
    rc = subprocess.call(cmd)
    wall = time.perf_counter() - t0
    stop.set()
    peak_gpu = max((m for _, m in samples), default=None)
    peak_host = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024
    print(f"gpu_memory: rc={rc} wall_s={wall:.2f} peak_gpu_mib={peak_gpu} peak_host_mib={peak_host}", flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"command": cmd, "rc": rc, "wall_s": round(wall, 2), "peak_gpu_mib": peak_gpu,
                       "peak_host_mib": peak_host, "samples": samples}, fh)
    return rc


if __name__ == "__main__":
    sys.exit(main())
