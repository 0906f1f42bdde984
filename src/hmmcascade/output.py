"""Result files: a hits table for merging, HMMER's ``--tblout``, and the pipeline summary.

The hits table (TSV, one row per reported (model, target) pair) carries what
the final ``--tblout`` needs, so per-batch searches can be merged without
recomputation.  ``--tblout`` follows ``p7_tophits_TabularTargets``: column
widths, ``%9.2g``/``%6.1f`` formats, queries in model-file order, targets
sorted by E-value (ties by name).

Until domain definition exists, the full-sequence score is HMMER's
``pre_score`` (Forward score before the null2 correction): its bias column is
0.0, the best-domain columns repeat the full-sequence values, and the domain
counts are 0.  The file's header says so.
"""

from __future__ import annotations

import csv
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import __version__

__all__ = ["HitRows", "hits_to_rows", "write_hits_tsv", "read_hits_tsv", "write_tblout", "write_json",
           "pipeline_summary", "atomic_path"]

HIT_COLUMNS = ["query_index", "query_name", "query_accession", "target_name", "target_description",
               "score_bits", "lnP", "evalue", "fwd_nats", "filter_nats"]


class atomic_path:
    """Context manager yielding a temporary path that replaces ``path`` only on success."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.tmp = self.path.with_name(f".{self.path.name}.tmp{os.getpid()}")

    def __enter__(self) -> Path:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        return self.tmp

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            os.replace(self.tmp, self.path)
        elif self.tmp.exists():
            self.tmp.unlink()
        return False


@dataclass
class HitRows:
    """Reported hits as plain columns (what the hits TSV holds)."""

    query_index: np.ndarray
    query_name: list
    query_accession: list
    target_name: list
    target_description: list
    score_bits: np.ndarray
    lnP: np.ndarray
    evalue: np.ndarray
    fwd_nats: np.ndarray
    filter_nats: np.ndarray

    def __len__(self) -> int:
        return len(self.query_index)

    @classmethod
    def concat(cls, parts: list["HitRows"]) -> "HitRows":
        out = {}
        for f in HIT_COLUMNS:
            vals = [getattr(p, f) for p in parts]
            out[f] = np.concatenate(vals) if isinstance(vals[0], np.ndarray) else sum(vals, [])
        return cls(**out)


def hits_to_rows(result, db, seqs) -> HitRows:
    """Turn a :class:`~hmmcascade.cascade.SearchResult` into named rows."""
    h = result.hits
    return HitRows(
        query_index=h.model.astype(np.int64),
        query_name=[str(db.names[m]) for m in h.model],
        query_accession=[str(db.accessions[m]) for m in h.model],
        target_name=[seqs.names[t] for t in h.target],
        target_description=[seqs.descriptions[t] for t in h.target],
        score_bits=h.score_bits.astype(np.float32),
        lnP=h.lnP.astype(np.float64),
        evalue=h.evalue.astype(np.float64),
        fwd_nats=h.fwd_nats.astype(np.float32),
        filter_nats=h.filter_nats.astype(np.float32),
    )


def write_hits_tsv(path, rows: HitRows) -> None:
    with atomic_path(path) as tmp, open(tmp, "w", newline="") as fh:
        w = csv.writer(fh, delimiter="\t", lineterminator="\n")
        w.writerow(HIT_COLUMNS)
        for i in range(len(rows)):
            w.writerow([int(rows.query_index[i]), rows.query_name[i], rows.query_accession[i], rows.target_name[i],
                        rows.target_description[i], repr(float(rows.score_bits[i])), repr(float(rows.lnP[i])),
                        repr(float(rows.evalue[i])), repr(float(rows.fwd_nats[i])), repr(float(rows.filter_nats[i]))])


def read_hits_tsv(path) -> HitRows:
    with open(path, newline="") as fh:
        r = csv.reader(fh, delimiter="\t")
        header = next(r, None)
        if header != HIT_COLUMNS:
            raise ValueError(f"{path}: not an hmmcascade hits table (header {header})")
        cols = list(zip(*r)) or [[] for _ in HIT_COLUMNS]
    d = dict(zip(HIT_COLUMNS, cols))
    return HitRows(
        query_index=np.asarray(d["query_index"], dtype=np.int64),
        query_name=list(d["query_name"]),
        query_accession=list(d["query_accession"]),
        target_name=list(d["target_name"]),
        target_description=list(d["target_description"]),
        score_bits=np.asarray(d["score_bits"], dtype=np.float32),
        lnP=np.asarray(d["lnP"], dtype=np.float64),
        evalue=np.asarray(d["evalue"], dtype=np.float64),
        fwd_nats=np.asarray(d["fwd_nats"], dtype=np.float32),
        filter_nats=np.asarray(d["filter_nats"], dtype=np.float32),
    )


def _order(rows: HitRows, by_evalue: bool) -> np.ndarray:
    key = rows.lnP if by_evalue else -rows.score_bits.astype(np.float64)
    names = np.asarray(rows.target_name, dtype=object)
    return np.array(sorted(range(len(rows)), key=lambda i: (rows.query_index[i], key[i], names[i])), dtype=np.int64)


def write_tblout(path, rows: HitRows, *, by_evalue: bool = True, command: str = "", Z: float | None = None) -> None:
    """HMMER-compatible per-target table (``hmmsearch --tblout``)."""
    order = _order(rows, by_evalue)
    tnamew = max([20] + [len(n) for n in rows.target_name])
    qnamew = max([20] + [len(n) for n in rows.query_name])
    taccw = 10
    qaccw = max([10] + [len(a) for a in rows.query_accession])
    lines = [
        "# hmmcascade: full-sequence score = Forward score before null2 correction (HMMER's pre_score);",
        "# hmmcascade: domain definition not computed yet: bias 0.0, best-1-domain columns repeat the full"
        " sequence, domain counts 0.",
        "#%*s %22s %22s %33s" % (tnamew + qnamew + taccw + qaccw + 2, "", "--- full sequence ----",
                                 "--- best 1 domain ----", "--- domain number estimation ----"),
        "#%-*s %-*s %-*s %-*s %9s %6s %5s %9s %6s %5s %5s %3s %3s %3s %3s %3s %3s %3s %s" % (
            tnamew - 1, " target name", taccw, "accession", qnamew, "query name", qaccw, "accession",
            "  E-value", " score", " bias", "  E-value", " score", " bias", "exp", "reg", "clu", " ov", "env", "dom",
            "rep", "inc", "description of target"),
        "#%*s %*s %*s %*s %9s %6s %5s %9s %6s %5s %5s %3s %3s %3s %3s %3s %3s %3s %s" % (
            tnamew - 1, "-------------------", taccw, "----------", qnamew, "--------------------", qaccw,
            "----------", "---------", "------", "-----", "---------", "------", "-----", "---", "---", "---", "---",
            "---", "---", "---", "---", "---------------------"),
    ]
    for i in order:
        qacc = rows.query_accession[i] or "-"
        desc = rows.target_description[i] or "-"
        ev, sc = float(rows.evalue[i]), float(rows.score_bits[i])
        lines.append("%-*s %-*s %-*s %-*s %9.2g %6.1f %5.1f %9.2g %6.1f %5.1f %5.1f %3d %3d %3d %3d %3d %3d %3d %s" % (
            tnamew, rows.target_name[i], taccw, "-", qnamew, rows.query_name[i], qaccw, qacc,
            ev, sc, 0.0, ev, sc, 0.0, 0.0, 0, 0, 0, 0, 0, 0, 0, desc))
    lines += [
        "#",
        "# Program:         hmmcascade search",
        f"# Version:         {__version__}",
        "# Pipeline mode:   SEARCH",
        f"# Search space Z:  {Z:g}" if Z is not None else "# Search space Z:  -",
        f"# Option settings: {command}",
        "# [ok]",
    ]
    with atomic_path(path) as tmp:
        Path(tmp).write_text("\n".join(lines) + "\n")


def write_json(path, obj) -> None:
    with atomic_path(path) as tmp:
        Path(tmp).write_text(json.dumps(obj, indent=2, default=float) + "\n")


def pipeline_summary(stats: dict, Z: float, device: str, thresholds) -> str:
    """hmmsearch's "Internal pipeline statistics summary", plus cells and GCUPS per stage."""
    s = stats
    pairs = max(s["models"] * s["targets"], 1)

    def line(label, n, expected):
        return f"{label:<34s}{n:>12d}  ({n / pairs:.4g}); expected {expected * pairs:.1f} ({expected:g})"

    out = [
        "Internal pipeline statistics summary:",
        "-------------------------------------",
        f"Query model(s):                   {s['models']:>12d}  ({s['nodes']} nodes)",
        f"Target sequences:                 {s['targets']:>12d}  ({s['residues']} residues searched)",
        line("Passed MSV filter:", s["past_msv"], thresholds.F1),
        line("Passed bias filter:", s["past_bias"], thresholds.F1),
        line("Passed Vit filter:", s["past_vit"], thresholds.F2),
        line("Passed Fwd filter:", s["past_fwd"], thresholds.F3),
        f"Search space Z:                   {Z:>12g}",
        f"Device:                           {device}",
        f"# CPU time: host {s['host_s']:.2f}s; wall {s['wall_s']:.2f}s",
    ]
    for stage in ("msv", "bias", "viterbi", "forward"):
        sec = s["kernel_s"][stage]
        cells = s["cells"][stage]
        rate = f"{cells / sec / 1e9:.2f} GCUPS" if sec > 0 else "-"
        out.append(f"# {stage:<8s} pairs {s['pairs'][stage]:>12d}  cells {cells:>16d}  kernel {sec:8.3f}s  {rate}")
    return "\n".join(out)


def progress_printer(stream=None, every_s: float = 5.0):
    """A progress callback printing residues done, percent and rate at most every ``every_s`` seconds."""
    import time

    stream = stream or sys.stderr
    start = time.perf_counter()
    last = [0.0]

    def report(done, total):
        now = time.perf_counter()
        if done < total and now - last[0] < every_s:
            return
        last[0] = now
        pct = 100.0 * done / max(total, 1)
        rate = done / max(now - start, 1e-9)
        eta = (total - done) / rate if rate > 0 else 0.0
        print(f"[hmmcascade] {done:,}/{total:,} residues ({pct:5.1f}%), {now - start:7.1f}s elapsed, "
              f"ETA {eta:6.1f}s", file=stream, flush=True)

    return report
