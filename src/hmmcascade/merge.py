"""The merge of a sharded search: the jobs' hit files in, the whole search's outputs out, streamed.

Each search job (a shard of the models x a batch of the targets) writes its hits as a Parquet
hit file (:mod:`hmmcascade.columnar`).  :func:`merge_hit_files` applies the whole search's
thresholds (Z = all targets, domZ = each model's reported targets over all batches) and writes
HMMER's tables, the alignments, the per-protein tables and a merged hit file without ever
holding all hits:

1. **Blocks of models.**  The files' ``model`` columns (read a row group at a time) give the
   hits per model; consecutive models are grouped into blocks of at most ``block_hits`` hits.
   For each block, its hits are read from every file (the row groups whose model statistics
   overlap it), thresholded, sorted in HMMER's order and appended to the tblout, domtblout,
   alignments and merged hit file (:class:`~hmmcascade.output.TableStream`,
   :class:`~hmmcascade.columnar.HitFileWriter`).  Every output's rows are those of one
   in-memory merge: queries in model order, each query's hits in HMMER's order, and a query's
   hits all lie in one block.
2. **Proteins in name order.**  pfam_scan's table, GFF3, InterProScan's TSV and the protein
   summary list proteins by name: an external sort.  Step 1 writes each block's reported domains
   (the fields these tables use), sorted by protein name, as one run in a private temporary
   folder; then the runs are merged (``heapq.merge``, a chunk of :data:`RUN_CHUNK` rows of each
   in memory) and, a batch of whole proteins at a time, resolved
   (:func:`~hmmcascade.annotate.pfam_domains`) and appended to those outputs
   (:class:`~hmmcascade.annotate.AnnotationStream`).  A protein's rows come in model order, as
   in one in-memory merge, since blocks are in model order.

**Memory bound.**  Peak memory is that of the largest of: one block of models (``block_hits``
hits, or one model's hits where a model alone has more), one row group of a hit file
(:data:`~hmmcascade.columnar.ROW_GROUP_HITS` hits) per file, one chunk of each run (blocks x
:data:`RUN_CHUNK` rows), one batch of proteins (``part_rows`` rows, or one protein's); and a
model-sized count table.  Nothing grows with the number of hits but the number of runs (one
per block: 20 per million hits, ~100 KB each); the merge test measures the peak at a quarter
of a million and at a million hit rows.
"""

from __future__ import annotations

import heapq
import os
import pickle
import shutil
import tempfile
from contextlib import ExitStack
from dataclasses import dataclass
from itertools import groupby
from operator import itemgetter

import numpy as np

from .columnar import HitFile, HitFileWriter, hits_from_table, is_hit_file, thresholded_table
from .annotate import pfam_domains
from .results import Alignment, Domain, Hit

__all__ = ["BLOCK_HITS", "PART_ROWS", "MergeSummary", "merge_hit_files", "open_hit_source"]

#: hits per block of models (step 1)
BLOCK_HITS = 50_000
#: annotation rows per batch of whole proteins (step 2)
PART_ROWS = 20_000
#: rows per chunk of a sorted run (step 2 holds one chunk of each run)
RUN_CHUNK = 1024

_TABLES = ("tblout", "domtblout", "alignments")
_ANNOTATIONS = ("pfamscan", "gff3", "ipr_tsv", "protein_summary")


@dataclass
class MergeSummary:
    hits: int = 0  #: hit rows read
    reported: int = 0
    reported_domains: int = 0
    blocks: int = 0
    runs: int = 0


class _MemorySource:
    """Hits of a JSON hits file (``hmmcascade-hits/1``), held whole, read as a :class:`HitFile` is."""

    def __init__(self, path):
        from .results import load_hits

        self.path = os.fspath(path)
        self.hits, self.meta = load_hits(path)
        self.hits.sort(key=lambda h: (h.model, h.target))
        self._models = np.array([h.model for h in self.hits], dtype=np.int64)

    @property
    def rows(self) -> int:
        return len(self.hits)

    @property
    def last_model(self) -> int:
        return int(self._models[-1]) if len(self._models) else -1

    def model_counts(self, n_models: int) -> np.ndarray:
        return np.bincount(self._models, minlength=n_models)[:n_models]

    def read_models(self, lo: int, hi: int) -> list[Hit]:
        a, b = np.searchsorted(self._models, [lo, hi])
        return self.hits[a:b]

    def read_tables(self, lo: int, hi: int):
        return None  # (no Arrow rows: the merged hit file is made from the hits)



def open_hit_source(path):
    """A hit file (Parquet, :class:`~hmmcascade.columnar.HitFile`) or a JSON hits file, by content."""
    if is_hit_file(path):
        return HitFile(path)
    return _MemorySource(path)


def _blocks(counts: np.ndarray, block_hits: int) -> list[tuple[int, int]]:
    """Consecutive model ranges [lo, hi) of at most ``block_hits`` hits (a model alone may have more)."""
    out, lo, n = [], 0, 0
    for m, c in enumerate(counts.tolist()):
        if n and n + c > block_hits:
            out.append((lo, m))
            lo, n = m, 0
        n += c
    if len(counts):
        out.append((lo, len(counts)))
    return out


# the fields of a reported domain that the per-protein tables use (pass 2 rebuilds Hit and Domain from them)
def _annotation_row(key: bytes, h: Hit, d: Domain) -> tuple:
    a = d.alignment
    return (key, h.model, h.target, h.model_name, h.model_acc, h.model_length, h.target_name, h.target_length, h.score,
            h.included, d.env_from, d.env_to, d.score, d.i_evalue, d.included, a.hmm_from, a.hmm_to, a.ali_from,
            a.ali_to, a.M, a.L)


def _hit_from_row(r: tuple) -> Hit:
    (_, model, target, model_name, model_acc, model_length, target_name, target_length, score, included, env_from,
     env_to, dscore, i_evalue, dincluded, hmm_from, hmm_to, ali_from, ali_to, M, L) = r
    ali = Alignment(hmm_from, hmm_to, ali_from, ali_to, "", "", "", "", M, L)
    dom = Domain(env_from, env_to, dscore, 0.0, 0.0, 0.0, i_evalue, 0.0, ali, reported=True, included=dincluded)
    return Hit(model, target, model_name, model_acc, model_length, target_name, "", "", target_length, score, score,
               0.0, 0.0, 0.0, reported=True, included=included, domains=[dom])


def _write_run(folder: str, n: int, rows: list[tuple]) -> str:
    """One sorted run of annotation rows, in chunks of :data:`RUN_CHUNK` rows; returns its path."""
    path = os.path.join(folder, f"run{n:06d}")
    with open(path, "wb") as fh:
        for s in range(0, len(rows), RUN_CHUNK):
            pickle.dump(rows[s: s + RUN_CHUNK], fh, protocol=pickle.HIGHEST_PROTOCOL)
    return path


def _read_run(path: str):
    """The rows of a run, a chunk in memory at a time (a file this merge wrote in its private folder)."""
    with open(path, "rb") as fh:
        while True:
            try:
                chunk = pickle.load(fh)
            except EOFError:
                return
            yield from chunk


def _annotate(hits: list[Hit], families, streams: dict) -> None:
    if hits:
        rows = pfam_domains(hits, families)
        for stream in streams.values():
            stream.add(rows)


def merge_hit_files(paths, th, Z: float, *, queries=None, outputs: dict[str, str | None], families=None,
                    md5s=None, descriptions=None, query_file=None, target_file=None, command: str = "",
                    block_hits: int = BLOCK_HITS, part_rows: int = PART_ROWS) -> MergeSummary:
    """Merge hit files into the whole search's outputs (see the module's docs).

    Arguments:
        paths: the search jobs' hit files (Parquet, or JSON ``hmmcascade-hits/1``, read whole).
        th: the search's :class:`~hmmcascade.reporting.Thresholds` (``domZ`` None: per model).
        Z: the whole search's number of targets (or ``-Z``).
        queries: every model of the search (:func:`~hmmcascade.output.query_infos`), or None
            (the models with hits, named from their hits).
        outputs: paths (or None) under the keys tblout, domtblout, alignments, pfamscan, gff3,
            ipr_tsv, protein_summary, merged_hits; written through
            :func:`~hmmcascade.outfiles.open_output` (inside an OutputSet: all or none).
        families, md5s, descriptions: for the per-protein tables (as :mod:`hmmcascade.annotate`).
        query_file, target_file, command: for the tables' tails.
    """
    from .annotate import AnnotationStream
    from .outfiles import open_output
    from .output import TableStream, per_query_hits
    from .reporting import threshold_hits

    inc_by_E = th.cut is None and th.incT is None
    sources = [open_hit_source(p) for p in paths]
    last = max([s.last_model for s in sources] + [-1])
    if queries is not None and last >= len(queries):
        raise ValueError(f"{sources[[s.last_model for s in sources].index(last)].path}: hits of model {last}, "
                         f"but the models file has {len(queries)} models")
    n_models = len(queries) if queries is not None else last + 1
    counts = np.zeros(n_models, dtype=np.int64)
    for src in sources:
        counts += src.model_counts(n_models)
    blocks = _blocks(counts, block_hits)
    summary = MergeSummary(hits=int(counts.sum()), blocks=len(blocks))

    tables = {k: TableStream(k, Z=Z, domZ=th.domZ, query_file=query_file, target_file=target_file,
                             command=command if k != "alignments" else "")
              for k in _TABLES if outputs.get(k)}
    annotations = {k: AnnotationStream(k, families, md5s=md5s if k == "ipr_tsv" else None,
                                       descriptions=descriptions if k == "ipr_tsv" else None)
                   for k in _ANNOTATIONS if outputs.get(k)}
    with ExitStack() as stack:
        for k, stream in {**tables, **annotations}.items():
            stream.start(stack.enter_context(open_output(outputs[k])))
        merged = None
        if outputs.get("merged_hits"):
            merged = HitFileWriter(stack.enter_context(open_output(outputs["merged_hits"], "wb")), {"Z": Z})
            stack.callback(merged.abandon)  # (on an error, before its file is dropped; after close(), nothing)
        runs: list[str] = []
        if annotations:
            spool = tempfile.mkdtemp(prefix="hmmcascade-merge.")
            stack.callback(shutil.rmtree, spool, ignore_errors=True)

        # step 1: blocks of models
        for lo, hi in blocks:
            read = [src.read_tables(lo, hi) for src in sources]
            arrow = all(t is not None for t in read)
            if arrow:
                read = [t for ts in read for t in ts]
                hits = [h for t in read for h in hits_from_table(t)]
            else:
                hits = [h for src in sources for h in src.read_models(lo, hi)]
            threshold_hits(hits, th, Z)
            if tables:
                per_query = per_query_hits(hits, queries[lo:hi] if queries is not None else None, inc_by_E, first=lo)
                for stream in tables.values():
                    stream.add(per_query)
            if merged is not None and arrow and read:
                import pyarrow as pa

                merged.add_table(thresholded_table(pa.concat_tables(read), hits))
            elif merged is not None:
                merged.add(sorted(hits, key=lambda h: (h.model, h.target)))
            summary.reported += sum(h.reported for h in hits)
            summary.reported_domains += sum(d.reported for h in hits if h.reported for d in h.domains)
            if annotations:  # this block's rows, sorted by protein name: one run of the external sort
                rows = [_annotation_row(h.target_name.encode("utf-8", "surrogateescape"), h, d)
                        for h in sorted(hits, key=lambda h: h.model) if h.reported for d in h.domains if d.reported]
                rows.sort(key=itemgetter(0))  # (stable: a protein's rows stay in model, then domain order)
                runs.append(_write_run(spool, len(runs), rows))
            hits = rows = per_query = read = None  # (before the next block is read: one block in memory at a time)

        # step 2: the runs merged by protein name (ties: earlier runs, lower models, first), a batch of
        # whole proteins at a time
        if annotations:
            batch: list[Hit] = []
            merged_rows = heapq.merge(*(_read_run(path) for path in runs), key=itemgetter(0))
            for _, protein in groupby(merged_rows, key=itemgetter(0)):
                batch += map(_hit_from_row, protein)
                if len(batch) >= part_rows:
                    _annotate(batch, families, annotations)
                    batch = []
            _annotate(batch, families, annotations)
        for stream in {**tables, **annotations}.values():
            stream.close()
        if merged is not None:
            merged.close()
    summary.runs = len(runs)
    return summary

