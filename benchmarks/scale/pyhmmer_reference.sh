# The pyhmmer reference for issue 25's acceptance run, on the GPU machine in the workflow's command:
# pyhmmer.hmmsearch(cpus=16) of pfamA_like (pfam35_dev x 9) against every 4th protein of proteins_dev,
# scaled x4 (all of proteins_dev) and x240 (sprot_like = proteins_dev x 60). Needs pfamA_like.hmm in
# $D (make_scale.py) and DATA as in workflow_sprot60.sh.
S=${DATA:-.devdata}; D=${D:-/tmp/wf}
python3 - "$D/pfamA_like.hmm" "$S/proteins_dev.faa.gz" <<'P'
import sys, time, pyhmmer
from pyhmmer.plan7 import HMMFile
from pyhmmer.easel import SequenceFile
t = time.time()
with HMMFile(sys.argv[1]) as f:
    hmms = list(f)
with SequenceFile(sys.argv[2], digital=True) as f:
    seqs = f.read_block()
quarter = pyhmmer.easel.DigitalSequenceBlock(seqs.alphabet, [s for i, s in enumerate(seqs) if i % 4 == 0])
print(f"pyhmmer {pyhmmer.__version__} load {time.time() - t:.1f} s, {len(hmms)} models, {len(quarter)} of {len(seqs)} proteins")
t = time.time()
n = sum(len(top) for top in pyhmmer.hmmsearch(hmms, quarter, cpus=16, Z=len(seqs)))
dt = time.time() - t
print(f"pyhmmer hmmsearch cpus=16: {dt:.2f} s, {n} hits; x4 = {4 * dt:.1f} s per proteins_dev, "
      f"x240 = {240 * dt:.0f} s for sprot_like x60")
P
