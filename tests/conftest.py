"""Shared fixtures of the accuracy tests: the embedded default data, pressed once, and the device.

The default data (``resources/``, see its README) are 48 Pfam 35.0 models and
2,000 real proteins.  Expected values in the tests come from HMMER itself:
pyhmmer 0.12.3 (HMMER 3.4) at test time, or numbers printed by HMMER 3.3.2's
``hmmsearch`` pasted into the test files beside the asserts.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyhmmer
import pytest

from hmmcascade import cascade, io as hio, profiles
from hmmcascade.press import press
from hmmcascade.device import open_device
from hmmcascade.io import SequenceSet

RESOURCES = Path(__file__).resolve().parents[1] / "resources"
DEFAULT_HMMS = RESOURCES / "pfam35_default.hmm.gz"
DEFAULT_SEQS = RESOURCES / "proteins_default.faa.gz"
PYHMMER_DATA = Path(os.path.dirname(pyhmmer.__file__)) / "tests" / "data"

#: Best-scoring target of each default model that has a reported hit, from the
#: per-sequence table of HMMER 3.3.2 (``hmmsearch --cpu 2 -Z 2000 --tblout``
#: on the gunzipped default data; first row of each query).  Strong hits drive
#: the 8-bit MSV and 16-bit Viterbi filters into overflow.
BEST_HITS = {
    "3Beta_HSD": "efae|YP_008394479.1", "AAA_18": "efae|YP_008394527.1", "ACAS_N": "ecoli|ACS-MONOMER",
    "ACR_tran": "ecoli|ACRD-MONOMER", "ADH_N": "ecoli|G7945-MONOMER", "Abhydrolase_1": "ecoli|MHPCHYDROL-MONOMER",
    "Aminotran_1_2": "ecoli|TYRB-MONOMER", "ArAE_1": "efae|YP_005354333.1", "ArsA_ATPase": "ecoli|EG10597-MONOMER",
    "COesterase": "efae|YP_005354709.1", "CRS1_YhbY": "938293.PRJEB85.HG003686_814",
    "Caps_assemb_Wzi": "938293.PRJEB85.HG003685_61", "Cation_ATPase_C": "938293.PRJEB85.HG003690_149",
    "Cation_efflux": "938293.PRJEB85.HG003686_707", "DUF4131": "ecoli|B0260-MONOMER",
    "DUF5976": "ecoli|G6668-MONOMER", "DUF6007": "938293.PRJEB85.HG003686_416",
    "DUF6317": "938293.PRJEB85.HG003686_866", "EAL": "ecoli|G6783-MONOMER", "FeoB_Cyto": "efae|YP_005355638.1",
    "Fer4_14": "ecoli|RNTRACTIV-MONOMER", "GreA_GreB": "938293.PRJEB85.HG003686_47",
    "GreA_GreB_N": "938293.PRJEB85.HG003686_47", "HSP70": "efae|YP_005354899.1", "MarR": "ecoli|G6882-MONOMER",
    "Molybdopterin": "ecoli|FORMATEDEHYDROGH-MONOMER", "MraY_sig1": "938293.PRJEB85.HG003685_94",
    "NMT1": "ecoli|TAUA-MONOMER", "Ndc1_Nup": "938293.PRJEB85.HG003686_866", "PFL-like": "efae|YP_005354372.1",
    "Peptidase_S49": "ecoli|EG10968-MONOMER", "Phosphorylase": "ecoli|MALDEXPHOSPHORYL-MONOMER",
    "TPR_1": "ecoli|EG11950-MONOMER", "TonB_dep_Rec": "ecoli|EG10302-MONOMER",
    "Transgly_assoc": "ecoli|G6624-MONOMER", "YfhO": "efae|YP_005353520.1", "Zip": "938293.PRJEB85.HG003686_844",
    "tRNA-synt_1": "ecoli|ILES-MONOMER", "tRNA-synt_2c": "ecoli|ALAS-MONOMER", "tRNA_SAD": "efae|YP_005354185.1",
}


@dataclass
class Sample:
    """Models and length-sorted sequences for the kernel-versus-reference tests."""

    hmms: list  # pyhmmer HMMs
    model_index: np.ndarray  # their indices in the default model list
    db: profiles.ProfileDB  # ``hmms`` pressed
    seqs: SequenceSet  # sorted by length, shortest first (as DeviceBatch requires)

    def residues(self, s: int) -> np.ndarray:
        o, n = self.seqs.offsets[s], self.seqs.lengths[s]
        return self.seqs.residues[o : o + n]


def concat(parts: list[SequenceSet]) -> SequenceSet:
    """Several SequenceSets as one (names, lengths and residues in order)."""
    lengths = np.concatenate([p.lengths for p in parts]).astype(np.int32)
    offsets = np.zeros(len(lengths), dtype=np.int64)
    offsets[1:] = np.cumsum(lengths[:-1], dtype=np.int64)
    return SequenceSet(
        names=[n for p in parts for n in p.names],
        descriptions=[d for p in parts for d in p.descriptions],
        lengths=lengths,
        offsets=offsets,
        residues=np.concatenate([p.residues for p in parts]),
    )


def sorted_by_length(seqs: SequenceSet) -> SequenceSet:
    return seqs.subset(np.argsort(seqs.lengths, kind="stable"))


@pytest.fixture(scope="session")
def device():
    """The OpenCL device: ``$HMMCASCADE_DEVICE`` or the first that builds kernels."""
    return open_device(os.environ.get("HMMCASCADE_DEVICE"))


@pytest.fixture(scope="session")
def default_hmms():
    return hio.read_hmms(DEFAULT_HMMS)


@pytest.fixture(scope="session")
def default_seqs():
    return hio.read_sequences(DEFAULT_SEQS)


@pytest.fixture(scope="session")
def default_db(default_hmms):
    return press(default_hmms)


@pytest.fixture(scope="session")
def default_search(default_db, default_seqs, device):
    """``cascade.search`` of the default data at hmmsearch's defaults with ``-Z 2000`` (E <= 10)."""
    return cascade.search(default_db, default_seqs, device, cascade.Thresholds(Z=2000))


@pytest.fixture(scope="session")
def msv_sample(default_hmms, default_seqs):
    """25 models x 324 sequences, lengths 1 to 4,560, for kernel-versus-HMMER comparisons.

    Models: every other default model in order of length, plus the longest
    (M = 13, 38, ..., 1021).

    Sequences, sorted by length (shortest first):

    * 9 fragments ``<name>/1-n``, n = 1..9: the first n residues of the first
      9 default proteins.  The default proteins are all >= 14 residues; the
      fragments cover the shortest targets (HMMER's length model and the
      kernels' first rows).
    * all 6 default proteins longer than 2,000 residues (2,099 to 4,560);
    * all 6 containing degenerate residues (X or U);
    * the best HMMER hit of every default model that has one (``BEST_HITS``,
      38 distinct proteins): strong hits overflow the byte (MSV) and word
      (Viterbi) score ranges, so both paths of each filter are exercised;
    * 270 proteins evenly spaced in length rank over all 2,000;

    315 distinct proteins in all (the groups overlap), plus the fragments.

    Many default proteins end in ``*`` (Easel's nonresidue code 27), so the
    sample also contains that code.
    """
    hmms = default_hmms
    by_M = np.argsort([h.M for h in hmms], kind="stable")
    model_index = np.unique(np.concatenate([by_M[::2], by_M[-1:]]))
    chosen_hmms = [hmms[i] for i in model_index]

    seqs = default_seqs
    L = seqs.lengths
    name_to_index = {n: i for i, n in enumerate(seqs.names)}
    degenerate = [i for i in range(len(seqs))
                  if np.any((seqs.residues[seqs.offsets[i]: seqs.offsets[i] + L[i]] >= 21)
                            & (seqs.residues[seqs.offsets[i]: seqs.offsets[i] + L[i]] <= 26))]
    long = np.flatnonzero(L > 2000).tolist()
    best = sorted({name_to_index[n] for n in BEST_HITS.values()})
    by_length = np.argsort(L, kind="stable")
    spread = by_length[np.linspace(0, len(seqs) - 1, 270).round().astype(int)].tolist()
    index = np.unique(np.asarray(long + degenerate + best + spread, dtype=np.int64))
    real = seqs.subset(index)

    frag_src = seqs.subset(np.arange(9))
    lengths = np.arange(1, 10, dtype=np.int32)
    frags = SequenceSet(
        names=[f"{frag_src.names[j]}/1-{n}" for j, n in enumerate(lengths)],
        descriptions=["" for _ in lengths],
        lengths=lengths,
        offsets=np.concatenate([[0], np.cumsum(lengths[:-1])]).astype(np.int64),
        residues=np.concatenate([frag_src.residues[frag_src.offsets[j]: frag_src.offsets[j] + n]
                                 for j, n in enumerate(lengths)]),
    )
    all_seqs = sorted_by_length(concat([frags, real]))
    assert len(long) == 6 and len(degenerate) == 6 and len(all_seqs) == 324
    return Sample(hmms=chosen_hmms, model_index=model_index, db=press(chosen_hmms), seqs=all_seqs)
