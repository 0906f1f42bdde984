"""Step 2 of a merge: the per-protein tables from sorted runs of protein names (an external sort).

pfam_scan's table, GFF3, InterProScan's TSV and the protein summary list proteins by name, while
step 1 of a merge (:mod:`hmmcascade.merge`) reads the hits a block of models at a time.  The two
meet in runs:

* :func:`annotation_row` is a reported domain as the per-protein tables read it: its protein
  name's key (UTF-8 bytes, surrogateescape) first, then the fields of a
  :class:`~hmmcascade.annotate.DomainUnit` (read back by ``_unit_from_row``).
* :func:`write_runs` writes one block's rows, sorted by key, as one run per part of the protein
  names (cut at :func:`name_bounds` / :func:`bounds_of` keys), in pickled chunks of
  :data:`RUN_CHUNK` rows (with worker processes, a share of them), into the merge's private
  folder (or a ``merge --to-parts`` folder).
* :func:`annotation_parts` merges each part's runs by key (``heapq.merge``, a chunk of each run
  in memory; ties: earlier runs, lower models, first), resolves a batch of whole proteins of
  about ``part_rows`` rows (by default :data:`PART_ROWS`) at a time
  (:func:`~hmmcascade.annotate.unit_annotations`) and appends them to the tables'
  :class:`~hmmcascade.annotate.AnnotationStream` objects (:func:`annotation_streams`), parts in
  name order.  With a pool of worker processes (made with :func:`init_worker` as their
  initializer: the families, MD5s, descriptions and date sent once per process), each part is
  written to files of its own by a worker and appended here, pfam_scan's ids padded to the
  widest of all parts.

A protein's rows come in model order, as in one in-memory merge, since blocks are in model order;
the outputs are the same for any number of workers (tested in ``tests/test_merge.py``).
"""

from __future__ import annotations

import heapq
import os
import pickle
from bisect import bisect_left
from contextlib import ExitStack
from itertools import groupby
from operator import itemgetter

from .annotate import AnnotationStream, DomainUnit, padded_pfam_scan_lines, unit_annotations
from .results import Domain, Hit

__all__ = ["PART_ROWS", "RUN_CHUNK", "annotation_row", "write_runs", "name_bounds", "bounds_of", "init_worker",
           "annotation_streams", "annotation_parts"]

#: annotation rows per batch of whole proteins (step 2)
PART_ROWS = 20_000
#: rows per chunk of a sorted run (step 2 holds one chunk of each run)
RUN_CHUNK = 1024

_ANNOTATIONS = ("pfamscan", "gff3", "ipr_tsv", "protein_summary")


# the fields of a reported domain that the per-protein tables use (step 2 reads them as DomainUnits)
def annotation_row(key: bytes, h: Hit, d: Domain) -> tuple:
    a = d.alignment
    return (key, h.model, h.target, h.model_name, h.model_acc, h.model_length, h.target_name, h.target_length, h.score,
            h.included, d.env_from, d.env_to, d.score, d.i_evalue, d.included, a.hmm_from, a.hmm_to, a.ali_from,
            a.ali_to, a.M, a.L)


def _unit_from_row(r: tuple) -> DomainUnit:
    """A row of :func:`annotation_row` as the per-protein tables' :class:`~hmmcascade.annotate.DomainUnit`."""
    return DomainUnit(r[1], *r[3:19])


def write_runs(folder: str, n: int, rows: list[tuple], bounds: list[bytes], chunk: int) -> list[str | None]:
    """Block ``n``'s sorted annotation rows as one run per part of the protein names (part r: keys
    from ``bounds[r - 1]``, below ``bounds[r]``), in chunks of ``chunk`` rows; their paths (None: empty)."""
    cuts = [0] + [bisect_left(rows, b, key=itemgetter(0)) for b in bounds] + [len(rows)]
    paths: list[str | None] = []
    for r, (a, b) in enumerate(zip(cuts, cuts[1:])):
        if a == b:
            paths.append(None)
            continue
        path = os.path.join(folder, f"run{n:06d}.{r:04d}")
        with open(path, "wb") as fh:
            for s in range(a, b, chunk):
                pickle.dump(rows[s: min(s + chunk, b)], fh, protocol=pickle.HIGHEST_PROTOCOL)
        paths.append(path)
    return paths


def _read_run(path: str):
    """The rows of a run, a chunk in memory at a time (a file this merge wrote in its private folder)."""
    with open(path, "rb") as fh:
        while True:
            try:
                chunk = pickle.load(fh)
            except EOFError:
                return
            yield from chunk


def _annotate_units(per_seq: dict, families, streams: dict) -> None:
    if per_seq:
        rows = unit_annotations(per_seq, families)
        for stream in streams.values():
            stream.add(rows)


def _annotate_runs(runs: list[str], families, streams: dict, part_rows: int) -> None:
    """The runs merged by protein name (ties: earlier runs, lower models, first), resolved and
    written a batch of whole proteins at a time."""
    batch: dict[str, list[DomainUnit]] = {}
    n = 0
    merged_rows = heapq.merge(*(_read_run(path) for path in runs), key=itemgetter(0))
    for _, protein in groupby(merged_rows, key=itemgetter(0)):
        units = list(map(_unit_from_row, protein))
        batch.setdefault(units[0].target_name, []).extend(units)
        n += len(units)
        if n >= part_rows:
            _annotate_units(batch, families, streams)
            batch, n = {}, 0
    _annotate_units(batch, families, streams)


_PART_CONTEXT: dict = {}


def init_worker(families, md5s, descriptions, date, annotation=None) -> None:
    """A worker process's per-protein tables' data (sent once per process, not with every part)."""
    _PART_CONTEXT.update(families=families, md5s=md5s, descriptions=descriptions, date=date, annotation=annotation)


def _part_in_worker(kinds: list[str], r: int, runs: list[str], spool: str, part_rows: int,
                    unlink: bool = True) -> tuple[dict, int]:
    """Part ``r`` of the proteins (its runs) written as ``part`` streams' files; their paths, and
    pfam_scan's widest id.  ``unlink``: the runs are removed once read (those of ``merge --from-parts``
    are the parts' files, kept)."""
    ctx = _PART_CONTEXT
    streams = annotation_streams(dict.fromkeys(kinds, True), ctx["families"], ctx["md5s"], ctx["descriptions"],
                                 ctx["date"], part=True, annotation=ctx["annotation"])
    files = {k: os.path.join(spool, f"part{r:05d}.{k}") for k in kinds}
    with ExitStack() as stack:
        for k, stream in streams.items():
            stream.start(stack.enter_context(open(files[k], "w", encoding="utf-8", errors="surrogateescape",
                                                  newline="")))
        _annotate_runs(runs, ctx["families"], streams, part_rows)
        for stream in streams.values():
            stream.close()
    for path in runs if unlink else ():
        os.unlink(path)
    return files, streams["pfamscan"].width if "pfamscan" in streams else 1


def _pad_part(path: str, width: int) -> str:
    """A pfam_scan part's lines (``id NUL rest``) with their ids padded to ``width`` (a file beside it,
    which replaces it); its path."""
    out = path + ".padded"
    with (open(path, encoding="utf-8", errors="surrogateescape", newline="") as src,
          open(out, "w", encoding="utf-8", errors="surrogateescape", newline="") as dst):
        dst.writelines(padded_pfam_scan_lines(src, width))
    os.unlink(path)
    return out


def name_bounds(sources, parts: int) -> list[bytes]:
    """``parts - 1`` protein-name keys that cut the hits' target names into parts of about equal
    size (from a sample of each file's row groups; the cut only balances the work)."""
    if parts <= 1:
        return []
    names: set = set()
    for src in sources:
        names.update(src.sample_column("target_name"))
    return bounds_of(names, parts)


def bounds_of(names, parts: int) -> list[bytes]:
    """``parts - 1`` keys cutting the sorted ``names`` into parts of about equal size."""
    keys = sorted(set(n.encode("utf-8", "surrogateescape") for n in names))
    if parts <= 1 or len(keys) < 2 * parts:
        return []
    return sorted(set(keys[len(keys) * r // parts] for r in range(1, parts)))


def annotation_streams(outputs: dict, families, md5s, descriptions, date: str, part: bool = False,
                       annotation: dict | None = None) -> dict:
    """An :class:`AnnotationStream` for each per-protein table in ``outputs`` (``md5s`` and
    ``descriptions``: InterProScan's TSV's; ``annotation``: the other tables' options)."""
    return {k: AnnotationStream(k, families, md5s=md5s if k == "ipr_tsv" else None,
                                descriptions=descriptions if k == "ipr_tsv" else None, date=date, part=part,
                                **({} if k == "ipr_tsv" else annotation or {}))
            for k in _ANNOTATIONS if outputs.get(k)}


def annotation_parts(annotations: dict, runs: list[list[str]], pool, spool: str | None, families,
                     part_rows: int, unlink: bool) -> None:
    """Step 2: each part of the proteins from its runs (``runs[r]``: part r's, in model order),
    written to the ``annotations`` streams in name order (parts made by the ``pool``, if any), and
    the streams closed."""
    if annotations and pool is not None:
        futures = [pool.submit(_part_in_worker, list(annotations), r, part, spool, part_rows, unlink)
                   for r, part in enumerate(runs) if part]
        # pfam_scan's ids are padded to the widest of all parts, known when the last part is written: its
        # parts wait, and are padded by the workers side by side (not a line at a time here)
        pfamscan = annotations.get("pfamscan")
        waiting = [] if pfamscan is not None and pfamscan.pads_at_close else None
        for future in futures:
            files, width = future.result()
            for k, path in files.items():
                if k == "pfamscan" and waiting is not None:
                    waiting.append((path, width))
                    continue
                annotations[k].add_part(path, width)
                os.unlink(path)
        if waiting:
            width = max([pfamscan.width, *(w for _, w in waiting)])
            padded = [pool.submit(_pad_part, path, width) for path, _ in waiting]
            pfamscan.add_padded_parts([future.result() for future in padded], width)
    elif annotations:
        _annotate_runs([path for part in runs for path in part], families, annotations, part_rows)
    for stream in annotations.values():
        stream.close()
