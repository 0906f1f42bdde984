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
2. **Proteins in name order** (:mod:`hmmcascade.merge_proteins`).  pfam_scan's table, GFF3,
   InterProScan's TSV and the protein summary list proteins by name: an external sort.  Step 1
   writes each block's reported domains (the fields these tables use), sorted by protein name, as
   one run in a private temporary folder; then the runs are merged (``heapq.merge``, a chunk of
   :data:`~hmmcascade.merge_proteins.RUN_CHUNK` rows of each in memory) and, a batch of whole
   proteins at a time, resolved
   (:func:`~hmmcascade.annotate.pfam_domains`) and appended to those outputs
   (:class:`~hmmcascade.annotate.AnnotationStream`).  A protein's rows come in model order, as
   in one in-memory merge, since blocks are in model order.

**In parallel** (``workers`` > 1, Parquet hit files): step 1's blocks are made in worker
processes and written here in block order.  For step 2 the protein names are cut into
``2 x workers`` parts of about equal size (keys from a sample of the files' target names); each
block writes one run per part, each part's runs are merged and written to a file of its own by a
worker, and the parts are appended to the outputs in name order (pfam_scan's ids padded to the
widest of all parts here).  The outputs are the same for any number of workers (tested).

**In parts** (the workflow: ``merge --to-parts``, ``merge --from-parts``): a shard of the models
holds every target, so its step 1 can run as soon as its searches end (:func:`merge_hit_files`
with ``model_range`` and ``parts_dir``): its tables' text without head or tail, its merged hit
rows and its runs, cut at :data:`SHARD_PARTS` fixed keys from every target name, go into a folder
of its own; :func:`merge_parts` then writes each table's head, the parts' text and the tail,
moves the parts' hit files into one folder, and runs step 2 over all parts' runs.  The outputs
equal one merge's (tested).  A part made without runs (``protein_runs`` false: a genome run, whose
per-protein tables are :mod:`hmmcascade.genome_split`'s) gives HMMER's tables and the merged hits alone.

**Memory bound.**  Peak memory is that of the largest of: one block of models (``block_hits``
hits, or one model's hits where a model alone has more), one row group of a hit file
(:data:`~hmmcascade.columnar.ROW_GROUP_HITS` hits) per file, one chunk of each run (blocks x
:data:`~hmmcascade.merge_proteins.RUN_CHUNK` rows; with workers, each worker's chunks are
``RUN_CHUNK / workers`` rows, so all workers together hold as many), one batch of proteins
(``part_rows`` rows, or one protein's); and a model-sized count table; with workers, ``workers + 2``
blocks in flight in all.  Nothing grows with the number of hits but the number of runs (one per
block and part: 20 blocks per million hits); the merge test measures the peak at a quarter of a
million and at a million hit rows.
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import tempfile
import time
from contextlib import ExitStack
from dataclasses import dataclass
from operator import itemgetter

import numpy as np

from .columnar import HitFileWriter, thresholded_table
from .hit_file import HitFile, hits_from_table, is_hit_file
from .merge_proteins import (PART_ROWS, RUN_CHUNK, annotation_parts, annotation_row, annotation_streams, bounds_of,
                             init_worker, name_bounds, write_runs)
from .results import Hit

__all__ = ["BLOCK_HITS", "PARTS_FORMAT", "MergeSummary", "merge_hit_files", "merge_parts",
           "open_hit_source"]

#: hits per block of models (step 1)
BLOCK_HITS = 50_000
#: parts of the protein names in the folders of ``merge --to-parts`` (fixed: every shard's must agree)
SHARD_PARTS = 32

_TABLES = ("tblout", "domtblout", "alignments")


@dataclass
class MergeSummary:
    hits: int = 0  #: hit rows read
    reported: int = 0
    reported_domains: int = 0
    blocks: int = 0
    runs: int = 0  #: blocks that wrote sorted runs of proteins
    parts: int = 1  #: parts of the protein names made apart in step 2
    step1_s: float = 0.0  #: seconds of step 1 (blocks of models: tables, alignments, merged hit file)
    step2_s: float = 0.0  #: seconds of step 2 (per-protein tables)


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
    """A hit file (Parquet, :class:`~hmmcascade.hit_file.HitFile`) or a JSON hits file, by content."""
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


@dataclass
class _BlockJob:
    """What every block of a merge needs (sent to the worker processes)."""

    th: object
    Z: float
    inc_by_E: bool
    tables: dict  #: kind -> TableStream arguments
    merged: bool
    annotations: bool
    spool: str | None
    bounds: list  #: the protein-name keys where parts 1, 2, ... of step 2 start (empty: one part)
    run_chunk: int = 1024


@dataclass
class _BlockResult:
    texts: dict  #: kind -> the block's text
    table: object = None  #: the merged hit file's rows (Arrow), or None
    hits: list | None = None  #: ... or the hits (sources without Arrow rows)
    runs: list | None = None  #: the block's sorted runs of annotation rows, one per part (None: empty)
    reported: int = 0
    reported_domains: int = 0


def _stream_args(t) -> dict:
    return dict(Z=t.Z, domZ=t.domZ, textw=t.textw, query_file=t.query_file, target_file=t.target_file,
                command=t.command)


def _block(job: _BlockJob, sources, n: int, lo: int, hi: int, queries) -> _BlockResult:
    """Block ``n`` (models ``lo <= model < hi``; ``queries``: theirs or None): read, thresholded, formatted."""
    from .output import TableStream, per_query_hits
    from .reporting import threshold_hits

    read = [src.read_tables(lo, hi) for src in sources]
    arrow = all(t is not None for t in read)
    if arrow:
        read = [t for ts in read for t in ts]
        hits = [h for t in read for h in hits_from_table(t)]
    else:
        hits = [h for src in sources for h in src.read_models(lo, hi)]
    threshold_hits(hits, job.th, job.Z)
    result = _BlockResult(texts={})
    if job.tables:
        per_query = per_query_hits(hits, queries, job.inc_by_E, first=lo)
        for kind, kw in job.tables.items():
            lines = TableStream(kind, **kw).lines(per_query, header=lo == 0)
            result.texts[kind] = "".join(line + "\n" for line in lines)
    if job.merged and arrow and read:
        import pyarrow as pa

        result.table = thresholded_table(pa.concat_tables(read), hits)
    elif job.merged:
        result.hits = sorted(hits, key=lambda h: (h.model, h.target))
    result.reported = sum(h.reported for h in hits)
    result.reported_domains = sum(d.reported for h in hits if h.reported for d in h.domains)
    if job.annotations:  # this block's rows, sorted by protein name: one run of the external sort
        rows = [annotation_row(h.target_name.encode("utf-8", "surrogateescape"), h, d)
                for h in sorted(hits, key=lambda h: h.model) if h.reported for d in h.domains if d.reported]
        rows.sort(key=itemgetter(0))  # (stable: a protein's rows stay in model, then domain order)
        result.runs = write_runs(job.spool, n, rows, job.bounds, job.run_chunk)
    return result


_WORKER_SOURCES: dict = {}


def _block_in_worker(job: _BlockJob, paths: list, n: int, lo: int, hi: int, queries) -> bytes:
    """:func:`_block` in a worker process (its hit files opened once per process); the result pickled,
    with the merged rows as Arrow IPC."""
    key = tuple(paths)
    if key not in _WORKER_SOURCES:
        _WORKER_SOURCES.clear()
        _WORKER_SOURCES[key] = [open_hit_source(p) for p in paths]
    result = _block(job, _WORKER_SOURCES[key], n, lo, hi, queries)
    if result.table is not None:
        import pyarrow as pa

        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, result.table.schema) as writer:
            writer.write_table(result.table)
        result.table = sink.getvalue().to_pybytes()
    return pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)


def _block_results(job: _BlockJob, sources, paths, blocks, queries, pool, workers: int):
    """Each block's :class:`_BlockResult`, in block order: made here, or by the ``pool``'s ``workers``
    processes (at most ``workers + 2`` blocks in flight: memory is that many blocks)."""
    def qs(lo, hi):
        return queries[lo:hi] if queries is not None else None

    if pool is None or len(blocks) <= 1:
        for n, (lo, hi) in enumerate(blocks):
            yield _block(job, sources, n, lo, hi, qs(lo, hi))
        return
    from collections import deque

    import pyarrow as pa

    pending: deque = deque()
    todo = iter(enumerate(blocks))
    for n, (lo, hi) in todo:
        pending.append(pool.submit(_block_in_worker, job, list(map(str, paths)), n, lo, hi, qs(lo, hi)))
        if len(pending) >= workers + 2:
            break
    while pending:
        result = pickle.loads(pending.popleft().result())
        for n, (lo, hi) in todo:
            pending.append(pool.submit(_block_in_worker, job, list(map(str, paths)), n, lo, hi, qs(lo, hi)))
            break
        if isinstance(result.table, bytes):
            result.table = pa.ipc.open_stream(result.table).read_all()
        yield result


def merge_hit_files(paths, th, Z: float, *, queries=None, outputs: dict[str, str | None], families=None,
                    md5s=None, descriptions=None, query_file=None, target_file=None, command: str = "",
                    block_hits: int = BLOCK_HITS, part_rows: int = PART_ROWS, workers: int = 1,
                    model_range: tuple[int, int] | None = None, parts_dir: str | None = None,
                    names=None, annotation: dict | None = None, protein_runs: bool = True) -> MergeSummary:
    """Merge hit files into the whole search's outputs (see the module's docs).

    Arguments:
        paths: the search jobs' hit files (Parquet, or JSON ``hmmcascade-hits/1``, read whole), or
            those files already opened (:func:`open_hit_source`).
        th: the search's :class:`~hmmcascade.reporting.Thresholds` (``domZ`` None: per model).
        Z: the whole search's number of targets (or ``-Z``).
        queries: every model of the search (:func:`~hmmcascade.output.query_infos`), or None
            (the models with hits, named from their hits).
        outputs: paths (or None) under the keys tblout, domtblout, alignments, pfamscan, gff3,
            ipr_tsv, protein_summary, merged_hits; written through
            :func:`~hmmcascade.outfiles.open_output` (inside an OutputSet: all or none).
        families, md5s, descriptions: for the per-protein tables (as :mod:`hmmcascade.annotate`).
        query_file, target_file, command: for the tables' tails.
        workers: processes making the blocks (step 1); the outputs are the same for any number.
        model_range: only models ``lo <= model < hi`` (a shard of the models: ``paths`` must hold
            every hit of those models, from every batch of the targets; other models' are not read).
        parts_dir: instead of ``outputs``, write step 1's results for :func:`merge_parts` into
            this folder (made whole or not at all): the tables' text without head or tail, the
            merged hit rows, and the sorted runs of the per-protein tables, cut by ``names``.
        names: every target name of the search (with ``parts_dir``: the parts' name cuts, the
            same in every shard's folder; not needed without ``protein_runs``).
        annotation: options of the per-protein tables but InterProScan's
            (:class:`~hmmcascade.annotate.AnnotationStream`'s ``significant_only`` and ``note``).
        protein_runs: with ``parts_dir``, the runs of the per-protein tables made too (false: the
            folder gives :func:`merge_parts` HMMER's tables and the merged hits, no per-protein table).
    """
    from .outfiles import open_output
    from .output import TableStream

    inc_by_E = th.cut is None and th.incT is None
    sources = [p if isinstance(p, (HitFile, _MemorySource)) else open_hit_source(p) for p in paths]
    paths = [src.path for src in sources]
    last = max([s.last_model for s in sources] + [-1])
    if queries is not None and last >= len(queries):
        raise ValueError(f"{sources[[s.last_model for s in sources].index(last)].path}: hits of model {last}, "
                         f"but the models file has {len(queries)} models")
    n_models = len(queries) if queries is not None else last + 1
    counts = np.zeros(n_models, dtype=np.int64)
    for src in sources:
        counts += src.model_counts(n_models)
    lo, hi = model_range if model_range is not None else (0, n_models)
    if not 0 <= lo <= hi <= n_models:
        raise ValueError(f"model range {lo}-{hi} is not within the {n_models} models")
    blocks = [(a + lo, b + lo) for a, b in _blocks(counts[lo:hi], block_hits)]  # (hits of other models: not read)
    summary = MergeSummary(hits=int(counts[lo:hi].sum()), blocks=len(blocks))

    if parts_dir is not None:  # (step 1 of one shard of the models: every table, the hit rows and the runs)
        if names is None and protein_runs:
            raise ValueError("a merge into parts needs every target name (the parts' cuts)")
        final, parts_dir = parts_dir, parts_dir.rstrip("/") + ".partial"
        shutil.rmtree(parts_dir, ignore_errors=True)
        os.makedirs(os.path.join(parts_dir, "runs") if protein_runs else parts_dir)
        outputs = {**{k: os.path.join(parts_dir, k + ".txt") for k in _TABLES},
                   "merged_hits": os.path.join(parts_dir, "hits.parquet")}
    tables = {k: TableStream(k, Z=Z, domZ=th.domZ, query_file=query_file, target_file=target_file,
                             command=command if k != "alignments" else "")
              for k in _TABLES if outputs.get(k)}
    date = time.strftime("%d-%m-%Y")
    annotations = annotation_streams(outputs, families, md5s, descriptions, date, annotation=annotation)
    parallel = workers > 1 and all(isinstance(s, HitFile) for s in sources)
    parts = 2 * workers if parallel and annotations else 1
    try:
        with ExitStack() as stack:
            for k, stream in tables.items():
                # (a part: its text alone, the head and tail written by merge_parts)
                stream.start(stack.enter_context(open_output(outputs[k])), head=parts_dir is None)
            for k, stream in annotations.items():
                stream.start(stack.enter_context(open_output(outputs[k])))
            merged = None
            if outputs.get("merged_hits"):
                merged = HitFileWriter(stack.enter_context(open_output(outputs["merged_hits"], "wb")), {"Z": Z})
                stack.callback(merged.abandon)  # (on an error, before its file is dropped; after close(), nothing)
            spool = None
            if parts_dir is not None and protein_runs:
                spool = os.path.join(parts_dir, "runs")
            elif annotations:
                spool = tempfile.mkdtemp(prefix="hmmcascade-merge.")
                stack.callback(shutil.rmtree, spool, ignore_errors=True)
            pool = (_pool(stack, workers, families, md5s, descriptions, date, bool(annotations), annotation)
                    if parallel else None)

            # step 1: blocks of models (in worker processes when asked: each block's text, rows and runs are
            # made apart and written here in block order)
            bounds = (bounds_of(names, SHARD_PARTS) if parts_dir is not None and protein_runs else
                      name_bounds(sources, parts) if annotations else [])
            job = _BlockJob(th=th, Z=Z, inc_by_E=inc_by_E, tables={k: _stream_args(t) for k, t in tables.items()},
                            merged=merged is not None, annotations=spool is not None, spool=spool, bounds=bounds,
                            run_chunk=max(64, RUN_CHUNK // workers) if parallel else RUN_CHUNK)
            t0 = time.perf_counter()
            runs: list[list[str]] = [[] for _ in range(len(job.bounds) + 1)]  # per part, the blocks' runs
            summary.parts = len(runs)
            for result in _block_results(job, sources, paths, blocks, queries, pool, workers):
                for k, text in result.texts.items():
                    tables[k].add_text(text)
                if merged is not None:
                    if result.table is not None:
                        merged.add_table(result.table)
                    else:
                        merged.add(result.hits)
                if result.runs is not None:
                    summary.runs += 1
                    for r, path in enumerate(result.runs):
                        if path is not None:
                            runs[r].append(path)
                summary.reported += result.reported
                summary.reported_domains += result.reported_domains
            for stream in tables.values() if parts_dir is None else ():
                stream.close()
            if merged is not None:
                merged.close()
            summary.step1_s = time.perf_counter() - t0

            # step 2: each part of the proteins (by name) from its runs, the parts written in order
            if parts_dir is None:
                annotation_parts(annotations, runs, pool, spool, families, part_rows, unlink=True)
            summary.step2_s = time.perf_counter() - t0 - summary.step1_s
        if parts_dir is not None:
            manifest = {"format": PARTS_FORMAT, "Z": Z, "models": [lo, hi], "hits": summary.hits,
                        "reported": summary.reported, "reported_domains": summary.reported_domains,
                        "blocks": summary.blocks, "bounds": [b.hex() for b in bounds], "protein_runs": protein_runs,
                        "runs": [[os.path.basename(path) for path in part] for part in runs] if protein_runs else []}
            with open(os.path.join(parts_dir, "manifest.json"), "w") as fh:
                json.dump(manifest, fh)
            shutil.rmtree(final, ignore_errors=True)
            os.replace(parts_dir, final)
    except BaseException:
        if parts_dir is not None:
            shutil.rmtree(parts_dir, ignore_errors=True)
        raise
    return summary


def _pool(stack: ExitStack, workers: int, families, md5s, descriptions, date, annotations: bool,
          annotation: dict | None = None):
    """A pool of ``workers`` spawned processes (not forked: the parent has Arrow's threads running),
    closed with ``stack``."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    pool = ProcessPoolExecutor(
        max_workers=workers, mp_context=multiprocessing.get_context("spawn"), initializer=init_worker,
        initargs=(families, md5s, descriptions, date, annotation) if annotations else (None, None, None, date))

    def close(exc_type, exc, tb) -> bool:  # (on an error or SIGTERM, the work not started is dropped)
        pool.shutdown(wait=True, cancel_futures=exc_type is not None)
        return False

    stack.push(close)
    return pool


#: the format of a shard's folder made by ``merge --to-parts`` (:func:`merge_hit_files` with ``parts_dir``)
PARTS_FORMAT = "hmmcascade-merge-part/1"


def _read_manifest(folder: str) -> dict:
    path = os.path.join(folder, "manifest.json")
    try:
        with open(path) as fh:
            m = json.load(fh)
    except FileNotFoundError:
        raise ValueError(f"{folder}: not a merge part (no manifest.json: made by merge --to-parts?)") from None
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: unreadable merge part manifest ({' '.join(str(exc).split())})") from None
    if not isinstance(m, dict) or m.get("format") != PARTS_FORMAT:
        raise ValueError(f"{path}: not a merge part manifest (format {m.get('format') if isinstance(m, dict) else m!r},"
                         f" expected {PARTS_FORMAT})")
    return m


def merge_parts(folders, Z: float, *, outputs: dict[str, str | None], families=None, md5s=None,
                descriptions=None, query_file=None, target_file=None, command: str = "",
                part_rows: int = PART_ROWS, workers: int = 1, n_models: int | None = None,
                remove: bool = False, annotation: dict | None = None) -> MergeSummary:
    """The whole search's outputs from the shards' folders made by :func:`merge_hit_files` with
    ``parts_dir`` (in model order; together every model, from 0): the tables are each part's text
    between one head and tail, the merged hits (``outputs["merged_hits"]``) a folder of the parts'
    hit files (read as one by :class:`~hmmcascade.hit_file.HitFile`), and the per-protein tables step 2
    over all parts' runs.  The outputs equal one merge of every hit file (tested).

    ``annotation``: as :func:`merge_hit_files`'s.  ``remove``: each file of the folders is removed as soon as it has been used (the disk then holds
    the outputs and little more than the folders; on an error the folders are left incomplete, and a
    later merge of them fails naming the part to make again)."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from .outfiles import open_output
    from .output import TableStream

    manifests = [_read_manifest(f) for f in folders]
    if not manifests:
        raise ValueError("merge --from-parts: no parts")
    at = 0
    for f, m in zip(folders, manifests):
        if m["models"][0] != at:
            raise ValueError(f"{f}: models {m['models'][0]}-{m['models'][1]}, but the parts before it end at {at} "
                             "(give every shard's part, in model order)")
        at = m["models"][1]
        if m["Z"] != Z:
            raise ValueError(f"{f}: made with Z = {m['Z']:g}, not {Z:g}")
    with_runs = [(f, m) for f, m in zip(folders, manifests) if m.get("protein_runs", True)]
    for f, m in with_runs:
        if m["bounds"] != with_runs[0][1]["bounds"]:
            raise ValueError(f"{f}: its runs are cut by other target names than {with_runs[0][0]}'s")
    if n_models is not None and at != n_models:
        raise ValueError(f"{folders[-1]}: the parts end at model {at}, but the models file has {n_models}")
    summary = MergeSummary(hits=sum(m["hits"] for m in manifests), reported=sum(m["reported"] for m in manifests),
                           reported_domains=sum(m["reported_domains"] for m in manifests),
                           blocks=sum(m["blocks"] for m in manifests))
    date = time.strftime("%d-%m-%Y")
    annotations = annotation_streams(outputs, families, md5s, descriptions, date, annotation=annotation)
    if annotations and len(with_runs) < len(folders):
        bare = next(f for f, m in zip(folders, manifests) if not m.get("protein_runs", True))
        raise ValueError(f"{bare}: a merge part without per-protein runs (merge --to-parts --no-protein-runs): "
                         "no per-protein tables (--pfamscan, --gff3, --ipr-tsv, --protein-summary) from it")
    runs = [[os.path.join(f, "runs", name) for f, m in with_runs for name in m["runs"][r]]
            for r in range(len(with_runs[0][1]["runs"]) if with_runs else 0)]
    summary.parts, summary.runs = len(runs), sum(len(part) for part in runs)

    stop = threading.Event()  # (set on an error: the copying threads end at their next chunk)

    def part_file(f: str, name: str) -> str:
        path = os.path.join(f, name)
        if not os.path.exists(path):
            raise ValueError(f"{f}: incomplete merge part (no {name}: used by an earlier merge that failed?); "
                             "make it again with merge --to-parts")
        return path

    def table(k: str, fh) -> None:  # (each part's text between the head and the tail)
        stream = TableStream(k, Z=Z, query_file=query_file, target_file=target_file,
                             command=command if k != "alignments" else "")
        stream.start(fh)
        for f in folders:
            path = part_file(f, k + ".txt")
            if not stream.add_file(path, stop):
                return
            if remove:
                os.unlink(path)
        stream.close()
        copied[k] = time.perf_counter() - t0

    def hit_folder(dest: str) -> str:  # (the parts' hit files, moved or copied: not decoded and written again)
        folder = dest.rstrip("/") + ".partial"
        shutil.rmtree(folder, ignore_errors=True)
        os.makedirs(folder)
        for i, f in enumerate(folders):
            path, to = part_file(f, "hits.parquet"), os.path.join(folder, f"part{i:04d}.parquet")
            shutil.move(path, to) if remove else shutil.copyfile(path, to)
        return folder

    for f, m in zip(folders, manifests):  # (all there before any output is made)
        for name in (n for part in m["runs"] for n in part):
            part_file(f, os.path.join("runs", name))
    t0 = time.perf_counter()
    copied: dict[str, float] = {}  # (each table's seconds to its end: the copies run beside step 2)
    with ExitStack() as stack:
        hits = None
        if outputs.get("merged_hits"):
            hits = hit_folder(os.fspath(outputs["merged_hits"]))
            stack.callback(shutil.rmtree, hits, ignore_errors=True)  # (put in place below; else dropped)
        copies = stack.enter_context(ThreadPoolExecutor(3))
        jobs = [copies.submit(table, k, stack.enter_context(open_output(outputs[k])))
                for k in _TABLES if outputs.get(k)]
        for k, stream in annotations.items():
            stream.start(stack.enter_context(open_output(outputs[k])))
        pool = (_pool(stack, workers, families, md5s, descriptions, date, True, annotation)
                if workers > 1 and annotations else None)
        spool = None
        if annotations:
            spool = tempfile.mkdtemp(prefix="hmmcascade-merge.")
            stack.callback(shutil.rmtree, spool, ignore_errors=True)
        stack.callback(stop.set)  # (on leaving by an error: first of all, so the copying threads end)
        annotation_parts(annotations, runs, pool, spool, families, part_rows, unlink=remove)
        summary.step2_s = time.perf_counter() - t0
        for job in jobs:
            job.result()
        summary.step1_s = max(copied.values(), default=0.0)
        if hits is not None:
            dest = os.fspath(outputs["merged_hits"])
            if os.path.isdir(dest) and not os.path.islink(dest):
                shutil.rmtree(dest)
            elif os.path.lexists(dest):
                os.unlink(dest)
            os.replace(hits, dest)
    return summary
