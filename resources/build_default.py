#!/usr/bin/env python3
"""Build the embedded default dataset of hmmcascade (``resources/``).

Deterministic and offline: fixed seeds, no network, byte-reproducible gzip
output (mtime=0, no embedded file name).  Re-run from the repository root:

    python3 resources/build_default.py

Inputs (read-only, real data; see /work/shared/data/README.md):
    pfam35_dev.hmm.gz    2,466 Pfam-A 35.0 HMMs (HMMER3/f text)
    proteins_dev.faa.gz  9,366 real proteins

Outputs (next to this script):
    proteins_default.faa.gz  2,000 proteins (seeded sample, see below)
    pfam35_default.hmm.gz    48 Pfam models (40 with hits in the sample, 8 without)
    README.md                provenance, statistics, model table

Protein sample: every protein longer than 2,000 residues and the 20 shortest
proteins are always kept; the rest is ``random.Random(2026).sample`` of the
remaining proteins (in source order); the output keeps the source order.

Model choice: all 2,466 models are searched against the protein sample with
``pyhmmer.hmmsearch`` (default reporting thresholds, E <= 10, Z = 2,000,
cpus=2).  Among models with >= 1 reported hit we take 40, spread over model
length M: the longest one, 4 with M < 50, and the rest at evenly spaced
quantiles of log(M) (so long models are represented); then 8 models without
hits, one drawn at random (``random.Random(2027)``) from each of 8 equal-size
length strata.  Models are written in the order of the source file.
"""

from __future__ import annotations

import argparse
import gzip
import io
import math
import os
import random
import sys
import time

import pyhmmer
from pyhmmer.easel import Alphabet, TextSequence
from pyhmmer.plan7 import HMMFile

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.environ.get("HMMCASCADE_SHARED_DATA", "/work/shared/data")
SRC_HMM = os.path.join(DATA, "pfam35_dev.hmm.gz")
SRC_FAA = os.path.join(DATA, "proteins_dev.faa.gz")
OUT_HMM = os.path.join(HERE, "pfam35_default.hmm.gz")
OUT_FAA = os.path.join(HERE, "proteins_default.faa.gz")
OUT_README = os.path.join(HERE, "README.md")

PROTEIN_SEED = 2026
MODEL_SEED = 2027
N_PROTEINS = 2000
LONG_CUTOFF = 2000  # keep every protein longer than this
N_SHORTEST = 20  # keep the N shortest proteins
N_HIT_MODELS = 40
N_SHORT_HIT_MODELS = 4  # hit models with M < SHORT_M
SHORT_M = 50
N_NOHIT_MODELS = 8
MIN_LONG_MODELS = 3  # models with M > 500 (checked)
CPUS = 2
LINE_WIDTH = 60


def residue_count(seq: str) -> int:
    """Number of residues (a trailing '*' stop symbol is not a residue)."""
    return len(seq.rstrip("*"))


def read_fasta(path: str) -> list[tuple[str, str]]:
    """Return (header line without '>', sequence) pairs, in file order."""
    records: list[tuple[str, str]] = []
    header = None
    chunks: list[str] = []
    with gzip.open(path, "rt") as fh:
        for line in fh:
            line = line.rstrip("\r\n")
            if line.startswith(">"):
                if header is not None:
                    records.append((header, "".join(chunks)))
                header, chunks = line[1:], []
            elif line.strip():
                chunks.append(line.strip())
    if header is not None:
        records.append((header, "".join(chunks)))
    return records


def gzip_writer(path: str):
    """Byte-reproducible gzip stream (mtime=0, no file name in the header)."""
    raw = open(path, "wb")
    return raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=9, mtime=0)


def sample_proteins(records):
    lengths = [residue_count(s) for _, s in records]
    longest = [i for i, n in enumerate(lengths) if n > LONG_CUTOFF]
    shortest = sorted(range(len(records)), key=lambda i: (lengths[i], i))[:N_SHORTEST]
    forced = sorted(set(longest) | set(shortest))
    rest = [i for i in range(len(records)) if i not in set(forced)]
    rng = random.Random(PROTEIN_SEED)
    picked = rng.sample(rest, N_PROTEINS - len(forced))
    return sorted(set(forced) | set(picked)), longest, shortest


def write_fasta(path, records):
    raw, gz = gzip_writer(path)
    with raw, gz, io.TextIOWrapper(gz, encoding="ascii", newline="\n") as fh:
        for header, seq in records:
            fh.write(f">{header}\n")
            for k in range(0, len(seq), LINE_WIDTH):
                fh.write(seq[k : k + LINE_WIDTH] + "\n")


def digitize(records, alphabet):
    return [
        TextSequence(name=h.split()[0], sequence=s).digitize(alphabet)
        for h, s in records
    ]


def search(hmms, seqs, cpus=CPUS):
    """Number of reported hits per model (default thresholds, Z = #seqs)."""
    counts = {}
    t0 = time.perf_counter()
    for hits in pyhmmer.hmmsearch(hmms, seqs, cpus=cpus, Z=len(seqs)):
        counts[hits.query.accession] = len(hits.reported)
    return counts, time.perf_counter() - t0


def nearest_unused(pool, target, used):
    """Index into ``pool`` (sorted by M) closest to log-M ``target``, unused."""
    best = None
    for j, (_, m, _) in enumerate(pool):
        if j in used:
            continue
        d = abs(math.log(m) - target)
        if best is None or d < best[0]:
            best = (d, j)
    return best[1]


def choose_models(hmms, counts):
    rows = [(i, h.M, counts[h.accession]) for i, h in enumerate(hmms)]
    hit = sorted((r for r in rows if r[2] > 0), key=lambda r: (r[1], r[0]))
    nohit = sorted((r for r in rows if r[2] == 0), key=lambda r: (r[1], r[0]))

    used: set[int] = {len(hit) - 1}  # the longest model with hits
    short = [j for j, r in enumerate(hit) if r[1] < SHORT_M]
    for k in range(N_SHORT_HIT_MODELS):  # evenly spaced among the short ones
        used.add(short[round(k * (len(short) - 1) / (N_SHORT_HIT_MODELS - 1))])
    lo, hi = math.log(SHORT_M), math.log(hit[-1][1])
    n_rest = N_HIT_MODELS - len(used)
    for k in range(n_rest):  # evenly spaced in log(M) over [SHORT_M, longest)
        target = lo + (hi - lo) * k / n_rest
        used.add(nearest_unused(hit, target, used))
    chosen_hit = [hit[j] for j in sorted(used)]

    rng = random.Random(MODEL_SEED)
    chosen_nohit = []
    for k in range(N_NOHIT_MODELS):  # one per equal-size length stratum
        a = k * len(nohit) // N_NOHIT_MODELS
        b = (k + 1) * len(nohit) // N_NOHIT_MODELS
        chosen_nohit.append(nohit[rng.randrange(a, b)])

    chosen = sorted({r[0] for r in chosen_hit + chosen_nohit})
    assert len(chosen) == N_HIT_MODELS + N_NOHIT_MODELS
    n_long = sum(hmms[i].M > 500 for i in chosen)
    assert n_long >= MIN_LONG_MODELS, n_long
    return chosen


def write_hmms(path, hmms):
    raw, gz = gzip_writer(path)
    with raw, gz:
        for hmm in hmms:
            hmm.write(gz)


def fmt(n):
    return f"{n:,}"


def write_readme(path, prot, longest_ids, shortest_ids, models, counts, sizes):
    plen = [residue_count(s) for _, s in prot]
    n_stop = sum(s.endswith("*") for _, s in prot)
    n_xu = sum(("X" in s) or ("U" in s) for _, s in prot)
    groups = {
        "HG003687 genome (pyhmmer test data)": sum(h.startswith("938293.") for h, _ in prot),
        "*E. coli* (`ecoli|`)": sum(h.startswith("ecoli|") for h, _ in prot),
        "*Enterococcus* (`efae|`)": sum(h.startswith("efae|") for h, _ in prot),
    }
    ms = [h.M for h in models]
    n_hit_models = sum(counts[h.accession] > 0 for h in models)
    total_hits = sum(counts[h.accession] for h in models)
    table = "\n".join(
        f"| {h.accession} | {h.name} | {h.M} | {counts[h.accession]} |"
        for h in models
    )
    text = f"""# Embedded default dataset

Small, real dataset used by `hmmcascade` when no input is given, and by quick tests.
Generated by `resources/build_default.py`; do not edit the data files by hand.

| file | what | records | size |
|---|---|---|---|
| `pfam35_default.hmm.gz` | Pfam-A 35.0 profile HMMs, HMMER3/f text (written with pyhmmer {pyhmmer.__version__} `HMM.write`), with GA/TC/NC cutoffs and STATS lines | {len(models)} models | {fmt(sizes[0])} bytes |
| `proteins_default.faa.gz` | real protein sequences, FASTA, 60 columns | {fmt(len(prot))} proteins | {fmt(sizes[1])} bytes |

Both files are gzipped with `mtime=0` and no embedded file name, so a rebuild is byte-identical.

## Statistics

- Models: M (match states) from {min(ms)} to {max(ms)}, total {fmt(sum(ms))} nodes;
  {sum(m < 50 for m in ms)} models with M < 50, {sum(m > 500 for m in ms)} with M > 500.
  {n_hit_models} models have at least one reported hit in the proteins, {len(models) - n_hit_models} have none.
- Proteins: lengths {min(plen)} to {fmt(max(plen))} residues, total {fmt(sum(plen))} residues
  (mean {sum(plen) / len(plen):.1f}); {len(longest_ids)} proteins longer than {fmt(LONG_CUTOFF)} residues.
  Origin: {", ".join(f"{v} {k}" for k, v in groups.items())}.
  Sequence names and descriptions are unchanged from the source. {n_stop} HG003687 proteins keep the
  trailing `*` (stop) of the source, which Easel's amino alphabet accepts and which is not counted as a
  residue above; {n_xu} sequences contain `X` or `U`.
- `pyhmmer.hmmsearch` of the {len(models)} models against the {fmt(len(prot))} proteins at default thresholds
  (E <= 10, Z = {fmt(len(prot))}) reports {fmt(total_hits)} hits.

## Source and provenance

- `pfam35_default.hmm.gz`: {len(models)} of the 2,466 models in `pfam35_dev.hmm.gz` (shared dev data):
  "the Pfam 35.0 subset shipped inside the `gecco` package (PyPI, `gecco/hmmer/Pfam.h3m`), converted to
  text with pyhmmer". Licence: Pfam is CC0.
- `proteins_default.faa.gz`: {fmt(len(prot))} of the 9,366 proteins in `proteins_dev.faa.gz` (shared dev data):
  "2,100 from genome HG003687 (pyhmmer's test data, `938293.PRJEB85.HG003687.faa`), 4,209 *E. coli*
  (`ecoli|` prefix) and 3,104 *Enterococcus* (`efae|` prefix) proteins", taken from the `pyhmmer` wheel
  and the Debian package `prokka` (`/usr/share/prokka/db/genus/*`). Licences: see those packages
  (pyhmmer: MIT; prokka: GPL-3).

## How it was made

```
python3 resources/build_default.py
```

(offline; reads `/work/shared/data/`, or `$HMMCASCADE_SHARED_DATA`; needs only pyhmmer; ~20 s on 2 cores.)

1. Proteins: all proteins longer than {fmt(LONG_CUTOFF)} residues and the {N_SHORTEST} shortest are always kept;
   the remaining {fmt(N_PROTEINS - len(set(longest_ids) | set(shortest_ids)))} are `random.Random({PROTEIN_SEED}).sample` of the
   other proteins (source order). Output is in source order.
2. All 2,466 models are searched against the sample with `pyhmmer.hmmsearch(cpus={CPUS}, Z={len(prot)})`,
   default reporting thresholds.
3. Of the models with >= 1 reported hit, {N_HIT_MODELS} are kept: the longest, {N_SHORT_HIT_MODELS} with M < {SHORT_M}
   (evenly spaced by length), and the rest nearest to evenly spaced targets in log(M). Then {N_NOHIT_MODELS} models
   with no hit: one drawn with `random.Random({MODEL_SEED})` from each of {N_NOHIT_MODELS} equal-size length strata.
   Models are written in source-file order.

## Models

| accession | name | M | hits (E <= 10) |
|---|---|---:|---:|
{table}
"""
    with open(path, "w", encoding="utf-8", newline="\n") as fh:
        fh.write(text)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cpus", type=int, default=CPUS)
    args = ap.parse_args(argv)

    alphabet = Alphabet.amino()
    records = read_fasta(SRC_FAA)
    assert len(records) == 9366, len(records)
    keep, longest_ids, shortest_ids = sample_proteins(records)
    prot = [records[i] for i in keep]
    assert len(prot) == N_PROTEINS
    write_fasta(OUT_FAA, prot)
    seqs = digitize(prot, alphabet)
    print(f"proteins: {len(prot)} ({sum(residue_count(s) for _, s in prot):,} residues)", file=sys.stderr)

    with HMMFile(SRC_HMM) as hf:
        hmms = list(hf)
    assert len(hmms) == 2466, len(hmms)
    counts, dt = search(hmms, seqs, args.cpus)
    print(f"full search: {len(hmms)} models x {len(seqs)} proteins in {dt:.1f} s; "
          f"{sum(c > 0 for c in counts.values())} models with hits", file=sys.stderr)

    chosen = [hmms[i] for i in choose_models(hmms, counts)]
    write_hmms(OUT_HMM, chosen)

    # Check: reload the written files and search the default set.
    with HMMFile(OUT_HMM) as hf:
        reloaded = list(hf)
    with pyhmmer.easel.SequenceFile(OUT_FAA, digital=True, alphabet=alphabet) as sf:
        reseqs = sf.read_block()
    assert [h.accession for h in reloaded] == [h.accession for h in chosen]
    assert len(reseqs) == N_PROTEINS
    dcounts, ddt = search(reloaded, reseqs, args.cpus)
    assert all(dcounts[k] == counts[k] for k in dcounts), "default-set search disagrees"
    total = sum(dcounts.values())
    print(f"default search: {len(reloaded)} models x {len(reseqs)} proteins in {ddt:.2f} s; "
          f"{total} hits; {sum(c > 0 for c in dcounts.values())} models with hits", file=sys.stderr)

    sizes = (os.path.getsize(OUT_HMM), os.path.getsize(OUT_FAA))
    write_readme(OUT_README, prot, longest_ids, shortest_ids, reloaded, dcounts, sizes)
    print(f"sizes: hmm {sizes[0]:,} B, faa {sizes[1]:,} B, total {sum(sizes):,} B", file=sys.stderr)


if __name__ == "__main__":
    main()
