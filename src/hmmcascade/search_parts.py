"""One search as N processes sharing its device: the models cut into N parts searched at once.

A search process alternates between the device's stages and its host side (each batch's domain
scores, alignment text and hit records, in Python).  Alone on a GPU it leaves the GPU idle for much
of its time: a fifth of Pfam-A-sized models × 561,960 proteins took 96–107 s as one process on an
H100, 65.3 s as two and 58.4 s as three (2026-11-27, ``benchmarks/RESULTS.md``).
``hmmcascade search --model-parts N`` does that inside one search: the models (of the file, or of
its ``--model-shard``) are cut into N consecutive parts, even in nodes, each searched by a process
of its own (started fresh: no OpenCL state is inherited) on the same device with 1/N of the
device-memory budget, so that one part's host side runs while the device works on another's.

The parts' hits make one ``--hits`` folder (each part's hit files, in model order; the records keep
the whole file's model numbers) and their statistics one ``--stats`` file, as one process's search
would: Z is the number of targets (or ``-Z``) in every part, and each of HMMER's thresholds is the
hit's own model's (domZ: the model's reported targets), so the hits are the same.

``auto`` (the default) gives N = :data:`AUTO_PARTS` for pressed models on a GPU and a search of at least
:data:`AUTO_CELLS` cells (models' nodes × targets' residues), else 1.  The parts write HMMER's outputs
(``-o``, ``--tblout``, ``--domtblout``, ``--pfamtblout``: each part's queries, between one head and tail
written here), ``--hits`` as a folder (``--hits-parts``) and ``--stats``; not the tables that list
proteins (pfam_scan's, GFF3, InterProScan's, the protein summary), which need every model's hits of a
protein together (``auto`` takes one part with those).
"""

from __future__ import annotations

import copy
import json
import math
import os
import shutil
import sys
import tempfile
import time

from .text_workers import text_workers

__all__ = ["AUTO_CELLS", "AUTO_PARTS", "parts_of", "search_in_parts", "split_models"]

#: ``auto``: a search of at least this many cells (nodes × residues) on a GPU runs as two parts; a
#: smaller one (seconds) as one, where a second process's start (imports, device, kernels from the
#: cache: about a second) would cost more than it saves
AUTO_CELLS = 2e13
#: ``auto``'s parts on a GPU (H100, the search above: 3 parts 11% sooner than 2, with the same host memory)
AUTO_PARTS = 3


def split_models(db, first: int, stop: int, n: int) -> list[tuple[int, int]]:
    """Models ``first .. stop - 1`` of ``db`` cut into ``min(n, stop - first)`` consecutive runs,
    even in nodes, as ``(start, stop)`` of the whole file's numbers."""
    sub = db.subset(first, stop)
    n = max(1, min(int(n), stop - first))
    return [(first + a, first + b) for a, b in (sub.shard(k, n) for k in range(1, n + 1))]


def _residues(path: str) -> float:
    """The targets' residues: counted in a prepared batch, estimated from a sequence file's size
    (a byte a residue; 2.5 for gzip); 0 for standard input."""
    if path == "-":
        return 0.0
    if path.endswith(".npz"):
        from .io import read_npz

        return float(read_npz(path, "prepared batch", ["lengths"])["lengths"].sum())
    size = os.path.getsize(path)
    return size * 2.5 if path.endswith(".gz") else float(size)


def parts_of(args, db, first: int, stop: int, is_gpu: bool, cuttable: bool) -> int:
    """How many parts ``args.model_parts`` ("auto" or a count) asks for this search of models
    ``first .. stop - 1`` of ``db``: 1 where the search cannot be cut (standard input; ``cuttable``
    False: outputs that list proteins, or a hits file that is not a folder)."""
    asked = str(args.model_parts).strip().lower()
    cuttable = args.hmms != "-" and args.seqs != "-" and cuttable
    if asked == "auto":
        if not (is_gpu and cuttable and stop - first >= 2):
            return 1
        nodes = float(db.subset(first, stop).nodes)
        return AUTO_PARTS if nodes * _residues(args.seqs) >= AUTO_CELLS else 1
    n = int(asked)
    if n > 1 and not cuttable:
        raise ValueError("--model-parts N (N > 1) writes HMMER's outputs (-o, --tblout, --domtblout, --pfamtblout), "
                         "--hits as a folder (--hits-parts) and --stats, from model and sequence files; not the "
                         "per-protein tables")
    return max(1, min(n, stop - first))


def search_in_parts(args, db, first: int, stop: int, n: int, device: str, budget: int, run_part,
                    tables: dict, table_stream) -> int:
    """Search models ``first .. stop - 1`` of ``db`` (read from ``args.hmms``) as ``n`` processes on
    ``device`` (one device, ``P:D``), ``budget`` bytes of its memory each; each process runs
    ``run_part(its args, this process's id)`` (a module's function: it is started fresh, by name) and
    exits with its status.  Only when every part ends well: ``tables`` (``{option: (kind, path)}``, HMMER's outputs)
    are written as ``table_stream(kind, Z)`` writes them, their head, each part's text and their tail;
    the parts' hit files are put in place as the folder ``args.hits``; and their statistics combined
    in ``args.stats``.  Returns the exit status: a failed part's (the others are stopped)."""
    import multiprocessing

    from .outfiles import OutputSet, open_output
    from .output import write_json
    from .search_result import StageStats

    started_at = time.time()
    ranges = split_models(db, first, stop, n)
    folder = os.fspath(args.hits).rstrip("/") if args.hits else None
    outputs = OutputSet({"--stats": args.stats, **{option: path for option, (_, path) in tables.items()}},
                        inputs=[args.hmms, args.seqs])
    if folder is not None and os.path.exists(folder) and not os.path.isdir(folder):
        raise ValueError(f"{folder}: not a folder (a folder of hit files is written here)")
    near = folder if folder is not None else args.stats if args.stats else None
    work = tempfile.mkdtemp(prefix="hmmcascade-parts-", dir=os.path.dirname(os.path.abspath(near)) if near else None)
    each = max(1, math.ceil(args.hits_parts / len(ranges)))
    print(f"# hmmcascade search: models {first}..{stop - 1} as {len(ranges)} processes on device {device}, "
          f"{budget / 2**30:.2f} GiB of its memory each", file=sys.stderr, flush=True)
    ctx = multiprocessing.get_context("spawn")  # (a fresh interpreter each: no OpenCL state is forked)
    procs = []
    try:
        hmms = args.hmms
        if not (hmms.endswith(".npz") or db.is_mapped(hmms)):  # (models read from text: pressed once, here)
            hmms = os.path.join(work, "models.hmmc")
            db.save(hmms)
        for k, (a, b) in enumerate(ranges):
            part = copy.copy(args)
            part.hmms = hmms
            part.model_parts, part.model_shard, part.model_range, part.table_part = "1", None, (a, b), k
            part.hits = os.path.join(work, f"part{k}.parquet") if folder is not None else None
            part.hits_parts = each
            part.stats = os.path.join(work, f"part{k}.stats.json")
            part.alignments = os.devnull
            for option, (kind, _) in tables.items():
                setattr(part, "alignments" if option == "-o" else option.lstrip("-"),
                        os.path.join(work, f"part{k}.{kind}"))
            part.device, part.device_memory = device, str(budget)
            part.progress_label = f"part {k + 1}/{len(ranges)}"
            part.text_workers = text_workers(args.cpu, len(ranges))  # (the CPUs shared for the outputs' text)
            proc = ctx.Process(target=run_part, args=(part, os.getpid()), name=f"hmmcascade-search-part{k + 1}")
            proc.start()
            procs.append(proc)
        failed = _wait_all(procs)
        if failed:
            return failed
        partial = None
        if folder is not None:
            files = []
            for k in range(len(ranges)):
                sub = os.path.join(work, f"part{k}.parquet")
                files += ([os.path.join(sub, name) for name in sorted(os.listdir(sub)) if name.endswith(".parquet")]
                          if os.path.isdir(sub) else [sub])  # (a part of one hit file: --hits-parts below the parts)
            partial = os.path.join(work, "hits")
            os.makedirs(partial)
            for i, path in enumerate(files):  # (in model order by name, as a search's own folder)
                os.replace(path, os.path.join(partial, f"part{i:03d}.parquet"))
        parts = []
        for k in range(len(ranges)):
            with open(os.path.join(work, f"part{k}.stats.json"), encoding="utf-8") as fh:
                parts.append(json.load(fh))
        total = StageStats.combine_batches([p["stats"] for p in parts])
        total.wall_s = max(p["stats"]["wall_s"] for p in parts)
        total.first_model = first
        # (the parts shared the device at once: their budgets, models and peaks add up)
        total.memory = {key: sum(p["stats"]["memory"].get(key, 0) for p in parts) if key.endswith("_bytes") else value
                        for key, value in total.memory.items()}
        with outputs:
            for option, (kind, path) in tables.items():  # (the head, each part's queries in model order, the tail)
                with open_output(path) as fh:
                    stream = table_stream(kind, parts[0]["Z"])
                    stream.start(fh)
                    for k in range(len(ranges)):
                        stream.add_file(os.path.join(work, f"part{k}.{kind}"))
                    stream.close()
            if args.stats:
                write_json(args.stats, {"Z": parts[0]["Z"], "device": parts[0]["device"], "stats": total.as_dict(),
                                        "started_at": started_at, "finished_at": time.time(),
                                        "model_parts": [list(r) for r in ranges]})
            if folder is not None:
                if os.path.isdir(folder):
                    shutil.rmtree(folder)
                os.replace(partial, folder)  # (last: the folder is put in place whole)
    finally:
        for proc in procs:
            if proc.is_alive():
                proc.terminate()
        for proc in procs:
            proc.join()
        shutil.rmtree(work, ignore_errors=True)
    print(f"# {len(ranges)} parts, {time.time() - started_at:.1f} s", file=sys.stderr)
    return 0


def _wait_all(procs) -> int:
    """Wait for every process; at the first that fails, stop the others and return its exit status
    (a signal's as the shell gives it, 128 + the signal); 0 when all end well."""
    from multiprocessing.connection import wait

    running = list(procs)
    while running:
        for sentinel in wait([p.sentinel for p in running]):
            proc = next(p for p in running if p.sentinel == sentinel)
            proc.join()
            running.remove(proc)
            code = proc.exitcode
            if code:
                for other in running:
                    other.terminate()
                for other in running:
                    other.join()
                if code < 0:
                    print(f"hmmcascade: error: search {proc.name} ended by signal {-code}", file=sys.stderr)
                    return 128 - code
                return code
    return 0
