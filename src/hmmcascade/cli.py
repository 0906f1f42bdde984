"""Command line: ``hmmcascade {search,press,prepare,merge,compare,genes,split-genomes,devices,fetch}``.

Every user mistake ends with one line ``hmmcascade: error: ...`` on stderr and
exit status 1 (2 for bad usage, also one line).  Numeric options take HMMER's
ranges.  Every output path is checked before any work starts, and a command's
outputs are put in place together, only when all are complete
(:mod:`hmmcascade.outfiles`); ``-`` is standard output.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import shlex
import signal
import sys
import time

import numpy as np

from .background import in_child
from .cascade import Thresholds
from .cli_common import (add_annotations, add_hmmer_tables, add_thresholds, load_models, load_seqs, option_paths,
                         read_families, shard_arg, thresholds)
from .cli_genomes import add_genome_parsers
from .cli_merge import add_compare_parser, add_merge_parser
from .io import InputError
from .outfiles import OutputError, OutputSet

__all__ = ["main"]


#: HMMER's ranges for the numeric options (hmmsearch's option table): option -> (attribute, range).
#: "x>0": positive; "real": any real number; "0<x<=1": a P-value threshold; "n>=0", "n>=1": counts.
OPTION_RANGES = {
    "-E": ("E", "x>0"), "-T": ("T", "real"),
    "--domE": ("domE", "x>0"), "--domT": ("domT", "real"),
    "--incE": ("incE", "x>0"), "--incT": ("incT", "real"),
    "--incdomE": ("incdomE", "x>0"), "--incdomT": ("incdomT", "real"),
    "-Z": ("Z", "x>0"), "--domZ": ("domZ", "x>0"),
    "--F1": ("F1", "0<x<=1"), "--F2": ("F2", "0<x<=1"), "--F3": ("F3", "0<x<=1"),
    "--cpus": ("cpus", "n>=0"), "--cpu": ("cpu", "n>=0"), "--batches": ("batches", "n>=1"),
    "--hits-parts": ("hits_parts", "n>=1"),
    "--textw": ("textw", "n>=120"),
    "--require-recall": ("require_recall", "0<=x<=1"),
}


def check_option_ranges(args) -> None:
    """Refuse numeric options outside HMMER's ranges, as hmmsearch does (one line, the option named).

    NaN is refused everywhere (it would compare false with every score and report nothing), and
    infinity everywhere but the E-value thresholds, where it means "report everything".
    """
    for option, (attr, valid) in OPTION_RANGES.items():
        value = getattr(args, attr, None)
        if value is None:
            continue
        if valid.startswith("n"):
            if value < int(valid[3:]):
                raise ValueError(f"Option {option} takes integer arg in range {valid}; got {value}")
            continue
        finite = valid == "real" or option in ("-Z", "--domZ")
        ok = {"real": True, "x>0": value > 0, "0<x<=1": 0 < value <= 1, "0<=x<=1": 0 <= value <= 1}[valid]
        if not ok or math.isnan(value) or (finite and math.isinf(value)):
            kind = "finite real-valued arg" if finite else "real-valued arg"
            in_range = "" if valid == "real" else f" in range {valid}"
            raise ValueError(f"Option {option} takes {kind}{in_range}; got {value:g}"
                             + (f" ({option} must be in (0, 1])" if valid == "0<x<=1" else ""))


def _search_options(args):
    """The search's :class:`~hmmcascade.options.SearchOptions`, made once: ``$HMMCASCADE_OPTIONS``
    (the debug override), then ``--kernel-options``, then ``--cpu`` and ``--device-memory``."""
    from dataclasses import replace

    from .options import SearchOptions

    options = SearchOptions.from_env()
    if args.kernel_options:
        options = SearchOptions.parse(args.kernel_options, base=options)
    if args.cpu is not None:  # hmmsearch's --cpu 0: no workers, all in the main process
        options = replace(options, workers=max(args.cpu, 1))
    if args.device_memory is not None:
        options = replace(options, device_memory=args.device_memory)
    return options


def _add_search_outputs(p: argparse.ArgumentParser) -> None:
    """search's outputs, as hmmsearch's "Options directing output" and then hmmcascade's own."""
    g = p.add_argument_group("Options directing output (- is standard output)")
    g.add_argument("-o", "--alignments", dest="alignments", metavar="FILE", default=None,
                   help="direct the main output (hmmsearch's text: hit lists, domain tables, alignments) to FILE, "
                        "not standard output; -o /dev/null: none")
    add_hmmer_tables(g)
    g.add_argument("--pfamtblout", metavar="FILE", help="HMMER's table of hits and domains in Pfam's format "
                                                        "(hmmsearch --pfamtblout)")
    g.add_argument("--acc", action="store_true", help="prefer accessions over names in the main output")
    g.add_argument("--noali", action="store_true", help="don't output alignments, so the main output is smaller")
    w = g.add_mutually_exclusive_group()
    w.add_argument("--notextw", action="store_true", help="unlimit the main output's line width")
    w.add_argument("--textw", type=int, default=120, metavar="N",
                   help="max width of the main output's lines (default 120; N>=120)")
    a = p.add_argument_group("Annotation outputs (- is standard output)")
    add_annotations(a)
    h = p.add_argument_group("hmmcascade's outputs")
    h.add_argument("--hits", help="write all hit records with domains and alignments, for merge: a Parquet hit file"
                                   " when the name ends in .parquet, else gzipped JSON")
    h.add_argument("--hits-parts", type=int, default=1, metavar="N",
                   help="--hits as a folder of N Parquet hit files (read as one by merge and compare), written "
                        "by N processes side by side (default 1: one file)")
    h.add_argument("--stats", help="write per-stage statistics (JSON) here")


#: search's output options besides the main output (-o), in the order they are written.
_SEARCH_OUTPUTS = ("tblout", "domtblout", "pfamtblout", "pfamscan", "gff3", "ipr_tsv", "protein_summary", "hits",
                   "stats")


def _search_outputs(args) -> dict[str, str | None]:
    """``{option: path}`` of search's outputs; the main output on standard output unless -o names a file.

    Raises:
        ValueError: two outputs on standard output (one line; hmmsearch's -o FILE is the way out).
    """
    from .outfiles import STDOUT

    paths = {"-o": args.alignments or STDOUT, **option_paths(args, *_SEARCH_OUTPUTS)}
    on_stdout = [option for option, path in paths.items() if path == STDOUT]
    if len(on_stdout) > 1:
        raise ValueError(f"standard output (-) takes one output, not {' and '.join(on_stdout)}"
                         + (" (the main output goes there unless -o FILE, or -o /dev/null for none, is given)"
                            if "-o" in on_stdout and not args.alignments else ""))
    return paths


def _main_output_settings(args) -> list[str]:
    """hmmsearch's ``output_header`` lines for the options given, for the main output's head."""
    th = [(args.alignments, "# output directed to file:         %s", args.alignments),
          (args.tblout, "# per-seq hits tabular output:     %s", args.tblout),
          (args.domtblout, "# per-dom hits tabular output:     %s", args.domtblout),
          (args.pfamtblout, "# pfam-style tabular hit output:   %s", args.pfamtblout),
          (args.acc, "# prefer accessions over names:    yes", None),
          (args.noali, "# show alignments in output:       no", None),
          (args.notextw, "# max ASCII text line length:      unlimited", None),
          (args.textw != 120, "# max ASCII text line length:      %d", args.textw),
          (args.E != 10.0, "# sequence reporting threshold:    E-value <= %g", args.E),
          (args.T is not None, "# sequence reporting threshold:    score >= %g", args.T),
          (args.domE != 10.0, "# domain reporting threshold:      E-value <= %g", args.domE),
          (args.domT is not None, "# domain reporting threshold:      score >= %g", args.domT),
          (args.incE != 0.01, "# sequence inclusion threshold:    E-value <= %g", args.incE),
          (args.incT is not None, "# sequence inclusion threshold:    score >= %g", args.incT),
          (args.incdomE != 0.01, "# domain inclusion threshold:      E-value <= %g", args.incdomE),
          (args.incdomT is not None, "# domain inclusion threshold:      score >= %g", args.incdomT),
          (args.cut_ga, "# model-specific thresholding:     GA cutoffs", None),
          (args.cut_nc, "# model-specific thresholding:     NC cutoffs", None),
          (args.cut_tc, "# model-specific thresholding:     TC cutoffs", None),
          (args.max, "# Max sensitivity mode:            on [all heuristic filters off]", None),
          (args.F1 != 0.02, "# MSV filter P threshold:       <= %g", args.F1),
          (args.F2 != 1e-3, "# Vit filter P threshold:       <= %g", args.F2),
          (args.F3 != 1e-5, "# Fwd filter P threshold:       <= %g", args.F3),
          (args.nobias, "# biased composition HMM filter:   off", None),
          (args.Z is not None, "# sequence search space set to:    %.0f", args.Z),
          (args.domZ is not None, "# domain search space set to:      %.0f", args.domZ)]
    return [line if value is None else line % value for given, line, value in th if given]


def _load_input(load, path: str):
    """``load(path)``, where ``-`` is standard input: its bytes (gzipped or not) go to a temporary
    file first, which errors name as ``- (standard input)``."""
    if path != "-":
        return load(path)
    import shutil
    import tempfile

    fd, tmp = tempfile.mkstemp(prefix="hmmcascade-stdin.")
    try:
        with os.fdopen(fd, "wb") as fh:
            shutil.copyfileobj(sys.stdin.buffer, fh, 1 << 22)
        try:
            return load(tmp)
        except InputError as exc:
            raise InputError(str(exc).replace(tmp, "- (standard input)")) from None
    finally:
        os.unlink(tmp)


#: search's outputs that a search in parts (--model-parts) makes from its parts' text, and their kinds
#: (output.TableStream's): HMMER's, written query by query in model order
PART_TABLES = {"-o": "alignments", "--tblout": "tblout", "--domtblout": "domtblout", "--pfamtblout": "pfamtblout"}


def _command_line() -> str:
    """This command as typed, for the tables' tails."""
    return "hmmcascade " + " ".join(shlex.quote(a) for a in sys.argv[1:])


def _table_stream(args, kind: str, th: Thresholds, Z: float):
    """search's :class:`~hmmcascade.output.TableStream` of ``kind``, as its options shape it."""
    from .output import TableStream

    return TableStream(kind, Z=Z, domZ=th.domZ, textw=0 if args.notextw else args.textw,
                       show_alignments=not args.noali, show_accessions=args.acc, settings=_main_output_settings(args),
                       inc_by_E=th.cut is None and th.incT is None, query_file=args.hmms, target_file=args.seqs,
                       command=_command_line())


def _write_outputs(args, paths, hits, th: Thresholds, Z: float, db=None, query_file=None, target_file=None,
                   families=None, seqs=None, first: int = 0, ordered: bool = False) -> None:
    """search's outputs (``paths``: :func:`_search_outputs`'), the main output first; ``db``: the models
    searched, numbered from ``first`` (a shard's, a part's); ``ordered``: ``hits`` are a search's
    records, in model order and each model's in HMMER's."""
    from .output import per_query_hits, query_infos, write_streams
    from .text_workers import text_workers

    queries = query_infos(db) if db is not None else None
    inc_by_E = th.cut is None and th.incT is None
    tables = [(paths[option], kind) for option, kind in PART_TABLES.items()
              if paths.get(option) and paths[option] != os.devnull]  # (-o /dev/null: no main output, none made)
    if tables:
        by_query = per_query_hits(hits, queries, inc_by_E, first, ordered=ordered)  # (sorted once for all)
        part = getattr(args, "table_part", None)  # (a part of a search in parts: the head and tail are the parent's)
        write_streams([(path, _table_stream(args, kind, th, Z)) for path, kind in tables], by_query,
                      workers=getattr(args, "text_workers", None) or text_workers(args.cpu), part=part)
        if part is not None:
            return
    if args.pfamscan or args.gff3 or args.ipr_tsv or args.protein_summary:
        from .annotate import (sequence_md5s, write_gff3, write_interproscan_tsv, write_pfam_scan,
                               write_protein_summary)

        reported = [h for h in hits if h.reported]
        if args.pfamscan:
            write_pfam_scan(args.pfamscan, reported, families)
        if args.gff3:
            write_gff3(args.gff3, reported, families)
        if args.ipr_tsv:
            descriptions = {q.name: q.description for q in queries} if queries else None
            write_interproscan_tsv(args.ipr_tsv, reported, families, md5s=sequence_md5s(seqs) if seqs else None,
                                   descriptions=descriptions)
        if args.protein_summary:
            write_protein_summary(args.protein_summary, reported, families)


def cmd_devices(args) -> int:
    from .device import list_devices, open_device

    for pi, di, platform, name, gpu in list_devices():
        print(f"{pi}:{di}\t{'GPU' if gpu else 'CPU'}\t{platform}\t{name}")
    if args.check:
        dev = open_device(args.device)
        dev.program("msv")
        print(f"# kernels build on: {dev.name}")
    if args.build:
        _build_kernels(args.device)
    return 0


def _build_kernels(spec: str | None) -> None:
    """``devices --build``: every program part a search may need, built now on each kind of GPU that
    ``spec`` names (a set: one device of each name; built programs serve every device of that name and
    driver), so that the searches that follow (the workflow's, after its build_kernels job) find them
    in the kernel cache.  On CPUs nothing is built ahead (their builds are fast)."""
    from .builds import prebuild
    from .device import open_device
    from .device_choice import device_set, pick

    specs = device_set(spec or "auto") or [spec or "auto"]
    names = set()
    for one in specs:
        name = pick(one)[0].name.strip()
        if name in names:
            continue
        names.add(name)
        dev = open_device(one)
        t0 = time.perf_counter()
        done = prebuild(dev)
        print(f"# kernels: {done['parts']} program parts built ahead on {dev.name} in "
              f"{time.perf_counter() - t0:.1f} s" + ("" if dev.is_gpu else " (a CPU: built when a search needs them)"))


def cmd_press(args) -> int:
    outputs = OutputSet({"--output": args.output}, inputs=[args.hmms])
    db = load_models(args.hmms)
    with outputs:
        db.save(args.output)
    print(f"pressed {len(db)} models ({db.nodes} nodes) into {args.output}", file=sys.stderr)
    return 0


def cmd_prepare(args) -> int:
    """Sort sequences by length and split them into batches of similar total residues."""
    from .outfiles import output_folder
    from .output import write_json

    outdir = output_folder(args.outdir)
    n = args.batches
    batch_paths = [outdir / f"batch{b:03d}.npz" for b in range(n)]
    outputs = OutputSet({"--meta": args.meta, **{f"batch {b}": path for b, path in enumerate(batch_paths)}},
                        inputs=[args.seqs])
    seqs = load_seqs(args.seqs)
    order = np.argsort(seqs.lengths, kind="stable")
    cum = np.cumsum(seqs.lengths[order].astype(np.int64))
    cuts = [0] + [int(np.searchsorted(cum, cum[-1] * b / n)) for b in range(1, n)] + [len(order)]
    with outputs:
        for b, path in enumerate(batch_paths):
            seqs.subset(order[cuts[b]:cuts[b + 1]]).save(path)
        write_json(args.meta, {"source": args.seqs, "targets": len(seqs), "residues": seqs.total_residues,
                               "batches": n, "max_length": int(seqs.lengths.max())})
    print(f"prepared {len(seqs)} sequences in {n} length-sorted batches under {outdir}", file=sys.stderr)
    return 0


def cmd_search(args) -> int:
    from . import builds, cascade, device
    from .output import pipeline_summary, progress_printer, write_json
    from .columnar import write_hit_file
    from .results import save_hits

    started_at = time.time()
    th = thresholds(args)
    options = _search_options(args)
    if args.hmms == args.seqs == "-":
        raise ValueError("the model file or the sequence file may be - (standard input), not both")
    paths = _search_outputs(args)
    folder = args.hits if args.hits and args.hits_parts > 1 else None  # (put in place by write_hit_file)
    if folder is not None and not str(folder).endswith(".parquet"):
        raise ValueError(f"{folder}: --hits-parts writes a folder of Parquet hit files; name it *.parquet")
    outputs = OutputSet({k: v for k, v in paths.items() if k != "--hits" or folder is None},
                        inputs=[path for path in (args.hmms, args.seqs) if path != "-"])
    families = read_families(args)
    db = None
    # the sequences read while the device opens (and while --model-parts chooses, which opens it first; standard
    # input only once that is known: a search in parts reads them in its parts)
    ask, args.reader = getattr(args, "reader", None), None  # (forked at the start by python -m hmmcascade)
    read_seqs = None if args.seqs == "-" else ask(args.seqs) if ask else in_child(_load_input, load_seqs, args.seqs)
    if getattr(args, "model_range", None) is None and str(args.model_parts).strip().lower() != "1":
        code, db = _search_as_parts(args, options, paths, th)  # (--model-parts: N processes, or None: this one)
        if code is not None:
            return code  # (the reader, never asked, is stopped)
    read_seqs = read_seqs or in_child(_load_input, load_seqs, args.seqs)
    dev = device.open_device(args.device, options)
    builds.start_workers(dev)  # (a cold machine: the kernel builds' processes start while the inputs load)
    db = db if db is not None else _load_input(load_models, args.hmms)
    models = db
    first, stop = _model_range(args, db)
    if (first, stop) != (0, len(db)):  # (a shard of the models: its hits' model numbers are made the whole file's again)
        db = db.subset(first, stop)
    seqs = read_seqs()
    print(f"# hmmcascade search: {len(db)} models x {len(seqs)} targets on {dev.name}", file=sys.stderr, flush=True)
    progress = None if args.quiet else progress_printer(every_s=10.0, nodes=db.nodes,
                                                        label=getattr(args, "progress_label", ""))
    with progress or contextlib.nullcontext():  # (a line at least every 10 s in a log, a bar on a terminal)
        if progress is not None:
            progress(0, seqs.total_residues)
        res = cascade.search(db, seqs, dev, th, progress=progress, options=options,
                             alignment_text=bool(args.hits or (paths["-o"] != os.devnull and not args.noali)))
    searched_at = time.time()
    for h in res.records if first else ():
        h.model += first
    stats = {**res.stats.as_dict(), "first_model": first}
    with outputs:
        _write_outputs(args, paths, res.records, th, res.Z, db, args.hmms, args.seqs, families=families, seqs=seqs,
                       first=first, ordered=True)
        db = models
        meta = {"Z": res.Z, "models": len(db), "targets": len(seqs)}
        if args.hits and folder is None:
            if str(args.hits).endswith(".parquet"):
                write_hit_file(args.hits, res.records, meta)
            else:
                save_hits(args.hits, res.records, meta)
        if args.stats:  # (started_at/finished_at: this process's search, seconds since the epoch)
            write_json(args.stats, {"Z": res.Z, "device": res.device, "stats": stats, "started_at": started_at,
                                    "finished_at": time.time()})
        if folder is not None:  # (last: the folder is put in place whole when written)
            write_hit_file(folder, res.records, meta, parts=args.hits_parts)
    print(pipeline_summary(stats, res.Z, res.device, th), file=sys.stderr)
    n_rep, n_dom = res.reported_counts()
    print(f"# {n_rep} reported hits, {n_dom} reported domains", file=sys.stderr)
    rs = stats.get("rescored") or {}
    if rs.get("flagged") or stats.get("rescored_f3"):
        print(f"# Forward scores made again in HMMER's order: {stats.get('rescored_f3', 0)} pairs near F3, "
              f"{rs.get('flagged', 0)} of {rs.get('records', 0)} hits near a printed digit, a threshold or a neighbour "
              f"({rs.get('changed', 0)} changed)", file=sys.stderr)
    print(f"# {searched_at - started_at:.1f} s to the search's end, {time.time() - searched_at:.1f} s writing; "
          f"peak host memory {_peak_rss_mb():,.0f} MB", file=sys.stderr)
    if getattr(args, "keep", None) is not None:  # (freed by the process's end, not here)
        args.keep.extend([res, seqs, dev, db, models])
    return 0


def _model_range(args, db) -> tuple[int, int]:
    """The models this search takes, ``(start, stop)`` of the file's: all, ``--model-shard K/N``'s, or a
    part's (:mod:`hmmcascade.search_parts`)."""
    if getattr(args, "model_range", None) is not None:
        return tuple(args.model_range)
    if not args.model_shard:
        return 0, len(db)
    k, n = args.model_shard
    try:
        return db.shard(k, n)
    except ValueError as exc:
        raise InputError(f"{args.hmms}: {exc}") from None


def _search_as_parts(args, options, paths: dict, th: Thresholds):
    """``--model-parts``: the search (its outputs ``paths``, :func:`_search_outputs`') as that many
    processes on one device (:mod:`hmmcascade.search_parts`): (its exit status, None); (None, the models
    read) when it takes one part (this process searches, on the device chosen here)."""
    from .device_choice import device_set, is_device_part, lock_key, opencl, pick
    from .device_slots import claim
    from .planner import CPU_FRACTION, GPU_FRACTION
    from .profiles import ProfileDB
    from .search_parts import parts_of, search_in_parts

    spec = args.device or "auto"
    if str(args.model_parts).strip().lower() == "auto" and (
            is_device_part(spec) or args.hmms == "-"
            or not (args.hmms.endswith(".npz") or ProfileDB.is_mapped(args.hmms))):
        # (auto: pressed models on a GPU; a part of a device split by fission is a CPU's. Text models are
        # read after the device opens, as the kernel builds of a cold machine start)
        return None, None
    choices = device_set(spec)
    if choices is not None:  # (the set's free device claimed by this process, for its life: the parts use it)
        spec = choices[claim([lock_key(c) for c in choices], spec)]
    dev, concrete, part = pick(spec)
    args.device = concrete
    db = _load_input(load_models, args.hmms)
    first, stop = _model_range(args, db)
    is_gpu = bool(dev.type & opencl().device_type.GPU)
    tables = {option: (kind, paths[option]) for option, kind in PART_TABLES.items()
              if paths.get(option) and paths[option] != os.devnull}
    others = [option for option, path in paths.items() if path and option not in (*PART_TABLES, "--hits", "--stats")]
    cuttable = not others and (not args.hits or (args.hits_parts > 1 and str(args.hits).endswith(".parquet")))
    n = parts_of(args, db, first, stop, is_gpu, cuttable)
    if n <= 1:
        return None, db
    budget = options.device_memory_bytes
    if budget is None:
        budget = int(dev.global_mem_size * (GPU_FRACTION if is_gpu else CPU_FRACTION))
    return search_in_parts(args, db, first, stop, n, concrete, budget // n, run_part, tables,
                           lambda kind, Z: _table_stream(args, kind, th, Z)), None


def run_part(args, parent: int | None = None) -> None:
    """A process of ``search --model-parts``: its part searched as ``hmmcascade search`` does (errors one
    line), its exit status.  On Linux it is sent SIGTERM (its outputs dropped) if the search's process
    ``parent`` ends first (killed: a part must not search on alone)."""
    if sys.platform.startswith("linux"):
        import ctypes

        try:
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # (PR_SET_PDEATHSIG)
        except (OSError, AttributeError):
            pass
    if parent is not None and os.getppid() != parent:  # (the parent ended before the line above)
        sys.exit(143)
    sys.exit(run_parsed(args))


def _peak_rss_mb() -> float:
    """This process's peak resident memory in MB (Linux's ru_maxrss is in KB)."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class _Parser(argparse.ArgumentParser):
    """argparse with usage errors on one line (``PROG: error: what (see PROG --help)``), exit status 2."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {' '.join(message.split())} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    from . import __version__
    from .fetch import add_fetch_parser

    p = _Parser(prog="hmmcascade", description=__doc__.splitlines()[0])
    p.add_argument("--version", action="version", version=f"hmmcascade {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("search", add_help=False, usage="hmmcascade search [options] HMMS SEQS",
                       help="search models against sequences (MSV -> Viterbi -> Forward), as hmmsearch: its text "
                            "on standard output",
                       description="Search profile(s) against a sequence database, as hmmsearch does: its main "
                                   "output on standard output (or -o FILE), progress and summary on standard error.")
    s.add_argument("hmms", help="HMMER3 models (text/binary, .gz ok) or pressed models (hmmcascade press); "
                                "- reads standard input")
    s.add_argument("seqs", help="protein FASTA (.gz ok) or a prepared .npz batch; - reads standard input")
    b = s.add_argument_group("Basic options")
    b.add_argument("-h", "--help", action="help", help="show this help and exit")
    _add_search_outputs(s)
    expert = add_thresholds(s)
    expert.add_argument("--cpu", type=int, default=None, metavar="N",
                        help="host worker processes for the domain work left to the host and for the text of "
                             "HMMER's outputs (default: one per CPU; 0: none, in this process)")
    r = s.add_argument_group("hmmcascade's device and run options")
    r.add_argument("--device", default=None,
                   help="auto (default), gpu, cpu, P:D, P:D:S/N (part S of N of device P:D, split by OpenCL device "
                        "fission), or a name substring; or a set to claim one device of that no other process "
                        "holds (a lock file per device, for this process's life): all (every GPU) or A,B,...")
    r.add_argument("--quiet", action="store_true", help="no progress on standard error (a bar on a terminal, "
                                                        "else a line at least every 10 s)")
    r.add_argument("--model-shard", metavar="K/N", type=shard_arg, default=None,
                   help="search shard K of N of the models (consecutive models, even in nodes); hit records "
                        "keep the whole file's model numbers, so a merge of every shard's equals one search")
    r.add_argument("--model-parts", metavar="N", type=_parts_arg, default="auto",
                   help="search the models as N parts at once, a process each on the same device with 1/N of its "
                        "memory budget (one part's host work runs while the device works on another's); auto: 3 "
                        "for pressed models on a GPU and a search of 2e13 cells or more, else 1. With N > 1: HMMER's outputs (-o, --tblout, "
                        "--domtblout, --pfamtblout), --hits as a folder (--hits-parts) and --stats, not the "
                        "per-protein tables (auto takes 1 with those) (default auto)")
    r.add_argument("--model-range", type=_range_arg, default=None, help=argparse.SUPPRESS)  # (a part's models)
    r.add_argument("--device-memory", metavar="SIZE", default=None,
                   help="device-memory budget of the search, e.g. 40G or 512M (default: 85%% of a GPU's memory, "
                        "50%% of a CPU device's); launches and batches are sized to keep within it")
    r.add_argument("--kernel-options", metavar="KEY=VALUE[,KEY=VALUE]", default=None,
                   help="expert: kernel variants and tunables (hmmcascade.options.SearchOptions: msv, viterbi, "
                        "forward, forward_wg_cells, decode, envelope, region_forward, ensemble, null2, select, "
                        "side_queue, inline_ptx, workers, device_memory; each 'auto' by default); over $HMMCASCADE_OPTIONS")
    s.set_defaults(func=cmd_search)

    s = sub.add_parser("press", help="pack models' filter tables for the kernels: mapped (loads at once), "
                                     "or a .npz where the output's name ends so")
    s.add_argument("hmms")
    s.add_argument("-o", "--output", required=True)
    s.set_defaults(func=cmd_press)

    s = sub.add_parser("prepare", help="sort sequences by length and split them into batches")
    s.add_argument("seqs")
    s.add_argument("--outdir", required=True)
    s.add_argument("--meta", required=True, help="JSON with target and residue counts (Z)")
    s.add_argument("--batches", type=int, default=1)
    s.set_defaults(func=cmd_prepare)

    add_merge_parser(sub)
    add_compare_parser(sub)
    add_genome_parsers(sub)

    s = sub.add_parser("devices", help="list OpenCL devices")
    s.add_argument("--check", action="store_true", help="also build a kernel on the chosen device (exit 1 if none)")
    s.add_argument("--build", action="store_true",
                   help="build every kernel a search may need on the GPUs --device names, now (a cold machine's "
                        "searches then find them built)")
    s.add_argument("--device", default=None, help="device to check or build on (default: auto)")
    s.set_defaults(func=cmd_devices)

    add_fetch_parser(sub)
    return p


def _error_line(exc: BaseException) -> str:
    """A user-facing error on one line; an OSError as ``FILE: what is wrong``."""
    if isinstance(exc, OSError) and not isinstance(exc, OutputError) and exc.strerror:
        return f"{exc.filename}: {exc.strerror}" if exc.filename else exc.strerror
    return " ".join(str(exc).split())


class _Terminated(KeyboardInterrupt):
    """SIGTERM (a scheduler or Snakemake cancelling the job), handled as Ctrl-C: outputs dropped, exit 143."""


def _on_sigterm(signum, frame):
    raise _Terminated()


def _parts_arg(text: str) -> str:
    """``auto`` or a count >= 1, for argparse."""
    value = text.strip().lower()
    if value != "auto" and not (value.isdigit() and int(value) >= 1):
        raise argparse.ArgumentTypeError(f"expected auto or a number >= 1, got {text!r}")
    return value


def _range_arg(text: str) -> tuple[int, int]:
    """``A:B`` (0 <= A < B) as (A, B), for argparse."""
    a, _, b = text.partition(":")
    if not (a.isdigit() and b.isdigit() and int(a) < int(b)):
        raise argparse.ArgumentTypeError(f"expected A:B with 0 <= A < B, got {text!r}")
    return int(a), int(b)


def main(argv=None, keep: list | None = None, reader=None) -> int:
    """The command of ``argv`` (default: ``sys.argv``); its exit status.  ``keep``: a list the command
    leaves its large objects in (a search's records, sequences and device), for a caller that ends the
    process right after (``python -m hmmcascade``: 0.14 s of freeing them one by one on the CLI case).
    ``reader``: a search's sequences' reader (``ask(path)`` of :func:`~hmmcascade.background.asked_child`,
    whose answer is :func:`~hmmcascade.io.load_sequences`'s: ``python -m hmmcascade`` starts one before its
    imports)."""
    args = build_parser().parse_args(argv)
    args.keep, args.reader = keep, reader
    return run_parsed(args)


def run_parsed(args) -> int:
    """A parsed command run, its errors one line on standard error: the exit status."""
    from .device import DeviceError
    from .fetch import FetchError

    previous = signal.signal(signal.SIGTERM, _on_sigterm) if _in_main_thread() else None
    try:
        check_option_ranges(args)
        return args.func(args)
    except (InputError, DeviceError, FetchError, ValueError, OSError) as exc:
        print(f"hmmcascade: error: {_error_line(exc)}", file=sys.stderr)
        return 1
    except _Terminated:
        print("hmmcascade: terminated", file=sys.stderr)
        return 143
    except Exception as exc:  # the OpenCL runtime's errors (out of device memory, a lost device): one line too
        if not type(exc).__module__.startswith("pyopencl"):
            raise
        print(f"hmmcascade: error: OpenCL device: {_error_line(exc)}{_where(exc)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("hmmcascade: interrupted", file=sys.stderr)
        return 130
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _where(exc: BaseException, depth: int = 3) -> str:
    """`` (at FILE:LINE in FUNCTION < ...)``: the ``depth`` innermost frames of this package that
    the error passed through, innermost first (the wait or launch that failed, and the stage that
    made it), or ''."""
    import os
    import traceback

    here = os.path.dirname(os.path.abspath(__file__))
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if os.path.abspath(f.filename).startswith(here)]
    if not frames:
        return ""
    return " (at " + " < ".join(f"{os.path.relpath(f.filename, here)}:{f.lineno} in {f.name}"
                                for f in reversed(frames[-depth:])) + ")"


def _in_main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


if __name__ == "__main__":
    sys.exit(main())
