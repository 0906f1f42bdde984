"""Print NVIDIA's build log with ptxas' register and spill counts per kernel of one src/hmmcascade/kernels/*.cl.

    python3 benchmarks/ptxas_info.py viterbi        (on the GPU machine)
"""

import sys
from pathlib import Path

import pyopencl as cl

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from hmmcascade.device import open_device  # noqa: E402

dev = open_device("gpu")
prg = dev.build(sys.argv[1], ("-cl-nv-verbose",))  # the search's own build options, plus the log
print(prg.get_build_info(dev.device, cl.program_build_info.LOG))
