"""Print NVIDIA's build log with ptxas' register and spill counts per kernel of one kernels/*.cl.

    python3 benchmarks/ptxas_info.py viterbi        (on the GPU machine)
"""

import sys
from pathlib import Path

import pyopencl as cl

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from hmmcascade.device import NV_PROGRAM_OPTIONS, _source, open_device  # noqa: E402

dev = open_device("gpu")
options = ["-cl-std=CL1.2", "-cl-nv-verbose"] + NV_PROGRAM_OPTIONS.get(sys.argv[1], []) + dev.ptx_options()
prg = cl.Program(dev.ctx, _source(sys.argv[1])).build(options=options)
print(prg.get_build_info(dev.device, cl.program_build_info.LOG))
