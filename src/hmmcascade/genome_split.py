"""A pooled search's hits cut back into one set of outputs per genome (:mod:`hmmcascade.genomes`).

The proteins of all genomes were searched together (one search per shard, not per genome) and
merged as one search (Z: all proteins).  :func:`split_genomes` gives each hit to its genome (the
pooled protein name's sample, its protein found in that genome's lines of the gene table) and writes
for each genome, under ``<outdir>/<sample>/``:

* ``<sample>.pfam_scan.tsv``: pfam_scan.pl's table (:class:`~hmmcascade.annotate.AnnotationStream`),
  the proteins under their genome's own names (``<contig>_<n>``, as in ``<sample>.faa``);
* ``<sample>.gff3``: every gene as a ``CDS`` feature on its contig (pyrodigal's coordinates, strand,
  phase 0 -- pyrodigal puts a partial gene's open end on a whole codon -- and its attributes as
  Prodigal writes them: ``partial=``, ``start_type=``, ``rbs_motif=``, ...), and each domain of the
  table as a ``protein_match`` feature, the child (``Parent``) of its CDS, on the genome: the
  alignment's residues ``a..b`` of a gene from ``begin`` to ``end`` are the bases
  ``begin + 3(a-1) .. begin + 3b - 1`` on the ``+`` strand and ``end - 3b + 1 .. end - 3(a-1)`` on the
  ``-`` strand (``protein_start``/``protein_end`` keep the residues, ``Target`` the model's);

and ``summary.tsv`` over all genomes (:data:`SUMMARY_COLUMNS`: genes, genes with a domain, the most
frequent families); with ``protein_summary``, also the protein summary of every genome's proteins with domains
(merge's ``--protein-summary`` format, a line per protein of its pfam_scan table, named ``<sample>|<protein>``, the
genomes in the calls' order), the workflow report's per-protein counts in a genome run.

**The hits.**  The merged hits (``merge --merged-hits``), or every search job's own hit file (a list, read as one,
in any order): the merge changes no column that the split reads where each domain's reporting does not depend on
domZ (model cutoffs, a fixed ``--domZ``, or every target in each search job): hits' flags are set with the same Z
there, and the domains' i-Evalues are ``exp(lnP) * Z``.

**Z.**  ``z="genome"``: each genome's E-values are those of a search of that genome alone (Z its
proteins, domZ each model's reported proteins of that genome), recomputed from the records' P-values
as HMMER does (:func:`~hmmcascade.reporting.threshold_hits`).  That needs bit-score thresholds
(``--cut_ga``/``--cut_tc``/``--cut_nc``: which hits and domains are reported and significant does
not depend on Z): with E-value thresholds a genome alone would report hits that the pool's larger Z
left out, so ``genome`` is refused there.  ``z="pool"``: the merged search's own E-values (Z all
proteins of all genomes).

**In processes** (``workers``).  Two rounds of tasks, in a pool of processes: a *scan* task reads
:data:`SCAN_ROW_GROUPS` row groups of the hit file, only the columns the tables need (no alignment
text, no Hit objects), and writes a spool file (Arrow IPC, beside the outputs, removed at the end):
a row per listed domain with its hit's fields, sorted by genome, each genome's rows in the file's
order; then a task per genome reads its rows of every spool file (memory-mapped slices) and its
lines of the gene table, and writes its tables.  Each genome's domains reach the same
:func:`~hmmcascade.annotate.unit_annotations` in the same order as in one process, so the outputs
are the same bytes whatever ``workers``.  Memory: the main process holds the calls' JSON and a few
numbers per genome; a worker, one scan task's columns (at most ``SCAN_ROW_GROUPS`` x 8,192 hits) or
one genome's domains.  Disk: the spool, about 150 bytes per listed domain.
"""

from __future__ import annotations

import math
import os
import shutil
import sys
import tempfile
import time
from collections import Counter
from contextlib import ExitStack
from dataclasses import dataclass
from itertools import starmap
from pathlib import Path

import numpy as np

from .annotate import AnnotationStream, DomainUnit, protein_summary_line, thresholds_note, unit_annotations
from .hit_file import HitFile
from .gff3 import PFAM_ACCESSION, gff3_attribute, gff3_seqid
from .genomes import GENE_COLUMNS, GenomeInputError
from .io import InputError
from .reporting import duplicate_alignments

__all__ = ["SCAN_ROW_GROUPS", "SUMMARY_COLUMNS", "Z_MODES", "genome_span", "split_genomes"]

Z_MODES = ("genome", "pool")
#: the summary table's columns: a line per genome
SUMMARY_COLUMNS = ("sample", "mode", "contigs", "bases", "genes", "genes_with_domains", "domains", "families", "Z",
                   "top_families")
#: row groups of the hit file per scan task (of :data:`~hmmcascade.columnar.ROW_GROUP_HITS` hits each): what one
#: task holds of the hits at once
SCAN_ROW_GROUPS = 8
TOP_FAMILIES = 10
#: the hit file's columns the split reads: a hit's, then its domains'
_HIT_COLUMNS = ("model", "model_name", "model_acc", "model_length", "target_name", "target_length", "score",
                "included", "reported", "noverlaps")
_DOMAIN_COLUMNS = ("env_from", "env_to", "score", "i_evalue", "lnP", "included", "hmm_from", "hmm_to", "ali_from",
                   "ali_to", "reported")
#: the hit fields of a spool row, then its domain's (with :data:`_HIT_COLUMNS` and :data:`_DOMAIN_COLUMNS`, the
#: fields of :class:`~hmmcascade.annotate.DomainUnit` in its order), then ``listed``
_SPOOL_HIT = _HIT_COLUMNS[:8]
_SPOOL_DOMAIN = _DOMAIN_COLUMNS[:4] + _DOMAIN_COLUMNS[5:10]


def genome_span(begin: int, end: int, strand: str, aa_from: int, aa_to: int) -> tuple[int, int]:
    """The bases (1-based, inclusive, forward strand) of residues ``aa_from..aa_to`` of a gene from
    ``begin`` to ``end`` on ``strand``."""
    if strand == "+":
        return begin + 3 * (aa_from - 1), begin + 3 * aa_to - 1
    return end - 3 * aa_to + 1, end - 3 * (aa_from - 1)


@dataclass(frozen=True)
class _Split:
    """What every task of one split reads (given once to each worker process)."""

    hits_path: tuple  #: the hit files or folders, read as one
    gene_table: str
    spool: str  #: the folder of the scan's spool files (``<task>.arrow``)
    samples: tuple  #: the calls' samples, in their order (a genome's number: its place here)
    gene_bytes: tuple  #: per sample: (offset, size) of its lines in the gene table
    Z: tuple  #: per sample: its tables' Z
    calls: dict  #: the calls' JSON's genomes
    z_mode: str
    th: object
    families: dict | None
    significant_only: bool
    outdir: str
    gff3_head: str  #: the GFF3 head's comment, up to the genome's mode
    translation_table: int  #: single mode's (the calls' settings)
    listed: str  #: which domains the tables list, in words
    source: str  #: the CDS features' source column
    proteins: str | None = None  #: the pooled FASTA, whose slices (the calls' ``faa_bytes``) become each ``.faa``
    protein_summary: bool = False  #: each genome's lines of the protein summary made too


_WORKER: dict = {}  #: this process's split (``split``), its hit file and spool tables once opened


def _start_worker(split: _Split) -> None:
    _WORKER.clear()
    _WORKER["split"] = split


def _hit_file() -> HitFile:
    if "hits" not in _WORKER:
        _WORKER["hits"] = HitFile(_WORKER["split"].hits_path)
    return _WORKER["hits"]


def _scan(task: tuple[int, int, int]) -> np.ndarray:
    """Row groups ``first <= g < last`` of the hit file into spool file ``part``: a row per listed domain (a
    reported domain of a reported hit, E-values and flags as the genome's tables give them) with its hit's
    fields, and a row per hit without one (``listed`` false: its target is only checked), rows sorted by genome
    (stably: each genome's listed domains in the file's order).  Returns each genome's first row and the end
    (length: genomes + 1)."""
    import pyarrow as pa

    split = _WORKER["split"]
    first, last, part = task
    hf = _hit_file()
    columns = [*_HIT_COLUMNS, *(f"domains.list.element.{n}" for n in _DOMAIN_COLUMNS)]
    samples = pa.array(split.samples, type=pa.string())
    Z = np.asarray(split.Z, dtype=np.float64)
    pieces = [_spool_rows(table, samples, Z, split) for table in (hf.read_row_group(g, columns)
                                                                  for g in range(first, last)) if table.num_rows]
    genome = np.concatenate([p[0] for p in pieces]) if pieces else np.empty(0, dtype=np.int64)
    table = pa.concat_tables([p[1] for p in pieces]) if pieces else None
    order = np.argsort(genome, kind="stable")
    with pa.OSFile(os.path.join(split.spool, f"{part}.arrow"), "wb") as sink:
        if table is not None:
            table = table.take(pa.array(order))
            with pa.ipc.new_file(sink, table.schema) as writer:
                writer.write_table(table)
    offsets = np.zeros(len(split.samples) + 1, dtype=np.int64)
    np.cumsum(np.bincount(genome, minlength=len(split.samples)), out=offsets[1:])
    return offsets


def _spool_rows(table, samples, Z: np.ndarray, split: _Split) -> tuple:
    """(genome of each row, the spool rows) of one row group (see :func:`_scan`)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    names = table.column("target_name").combine_chunks()
    genome = pc.index_in(pc.list_element(pc.split_pattern(names, pattern="|", max_splits=1), 0), value_set=samples)
    if genome.null_count:
        bad = names[pc.index(pc.is_null(genome), True).as_py()].as_py()
        raise InputError(f"{' '.join(split.hits_path)}: target {bad!r} is not in the gene table")
    genome = genome.to_numpy(zero_copy_only=False).astype(np.int64)
    lists = table.column("domains").combine_chunks()
    offsets = lists.offsets.to_numpy()
    struct = lists.flatten()
    dom = {n: pc.struct_field(struct, n).to_numpy(zero_copy_only=False) for n in _DOMAIN_COLUMNS}
    hit_reported = table.column("reported").to_numpy()
    n = table.num_rows
    dh = np.repeat(np.arange(n), np.diff(offsets))  # (each domain's hit)
    reported = dom["reported"].copy()
    if split.z_mode == "genome":  # (the genome's own thresholding: threshold_hits' with model cutoffs)
        starts = offsets - offsets[0]
        over = np.flatnonzero(table.column("noverlaps").to_numpy())
        reported[duplicate_alignments(starts[over], starts[over + 1] - starts[over], dom["ali_from"], dom["ali_to"],
                                      dom["score"])] = False
    listed = np.flatnonzero(reported & hit_reported[dh])
    hits = dh[listed]
    if split.z_mode == "genome":  # (E-values of the genome alone: exp(lnP) * its Z, as threshold_hits)
        i_evalue = np.fromiter(map(math.exp, dom["lnP"][listed].tolist()), dtype=np.float64,
                               count=len(listed)) * Z[genome[hits]]
    else:
        i_evalue = dom["i_evalue"][listed]
    bare = np.flatnonzero(np.bincount(hits, minlength=n) == 0)
    rows = pa.array(np.concatenate([hits, bare]))
    columns = [table.column(name).take(rows) for name in _SPOOL_HIT]
    for name in _SPOOL_DOMAIN:
        values = i_evalue if name == "i_evalue" else dom[name][listed]
        columns.append(pa.array(np.concatenate([values, np.zeros(len(bare), dtype=values.dtype)])))
    columns.append(pa.array(np.arange(len(listed) + len(bare)) < len(listed)))
    spooled = pa.Table.from_arrays(columns, names=[*DomainUnit._fields, "listed"])
    return np.concatenate([genome[hits], genome[bare]]), spooled


def _spool_table(part: int):
    """Spool file ``part`` (memory-mapped, once per process)."""
    import pyarrow as pa

    tables = _WORKER.setdefault("spools", {})
    if part not in tables:
        with pa.ipc.open_file(pa.memory_map(os.path.join(_WORKER["split"].spool, f"{part}.arrow"))) as reader:
            tables[part] = reader.read_all()
    return tables[part]


def _gene_rows(split: _Split, k: int) -> list[dict]:
    """Genome ``k``'s lines of the gene table, as :func:`~hmmcascade.genomes.read_gene_table` reads them."""
    offset, size = split.gene_bytes[k]
    with open(split.gene_table, "rb") as fh:
        fh.seek(offset)
        lines = fh.read(size).decode("utf-8", "surrogateescape").split("\n")
    if lines and not lines[-1]:
        lines.pop()
    return [dict(zip(GENE_COLUMNS, line.split("\t"))) for line in lines]


def _genome_units(split: _Split, k: int, parts: list, genes: list[dict]) -> dict[str, list[DomainUnit]]:
    """{protein (the genome's own name): its listed domains, in the file's order} of genome ``k``, from its rows
    in the spool files (``parts``: (part, first row, end))."""
    sample = split.samples[k]
    proteins = {g["protein"] for g in genes}
    cut = len(sample) + 1
    units: dict[str, list[DomainUnit]] = {}
    for part, lo, hi in parts:
        table = _spool_table(part).slice(lo, hi - lo)
        names = table.column("target_name").to_pylist()
        if not proteins.issuperset(names):
            bad = next(name for name in names if name not in proteins)
            raise InputError(f"{' '.join(split.hits_path)}: target {bad!r} is not in the gene table")
        table = table.filter(table.column("listed"))
        columns = [table.column(name).to_pylist() for name in DomainUnit._fields]
        columns[4] = [name[cut:] for name in columns[4]]
        for u in starmap(DomainUnit, zip(*columns)):
            units.setdefault(u.target_name, []).append(u)
    return units


def _match_attributes(hmm_name: str, hmm_acc: str, family_type: str, clan: str) -> tuple[str, str, str]:
    """A model's parts of a protein_match's attributes: ``Name`` and ``Target``'s name; ``Dbxref`` and
    ``accession`` (after Target's coordinates); ``type`` and ``clan`` (last)."""
    name = gff3_attribute(hmm_name)
    pfam = PFAM_ACCESSION.match(hmm_acc)
    middle = (f";Dbxref=Pfam:{pfam.group(0)}" if pfam else "") + (
        f";accession={gff3_attribute(hmm_acc)}" if hmm_acc != "-" else "")
    last = (f";type={gff3_attribute(family_type)}" if family_type != "-" else "") + (
        f";clan={gff3_attribute(clan)}" if clan != "No_clan" else "")
    return f"Name={name};Target={name.replace(' ', '%20')}", middle, last


def _gff3_lines(sample_genes: list[dict], contigs: list, annotations: dict, source: str) -> list[str]:
    lines = [f"##sequence-region {gff3_seqid(name)} 1 {length}" for name, length in contigs if length]
    seqids: dict[str, str] = {}
    models: dict[tuple, tuple[str, str, str]] = {}  # (a model's attributes, made once)
    for g in sample_genes:
        contig = g["contig"]
        seqid = seqids.get(contig)
        if seqid is None:
            seqid = seqids[contig] = gff3_seqid(contig)
        gene_id = gff3_attribute(f"{contig}_{g['gene']}")
        attrs = [f"ID={gene_id}", f"Name={gene_id}", f"partial={g['partial']}", f"start_type={g['start_type']}",
                 f"rbs_motif={g['rbs_motif']}", f"rbs_spacer={g['rbs_spacer']}", f"gc_cont={g['gc_cont']}",
                 f"conf={g['confidence']}", f"score={g['score']}", f"cscore={g['cscore']}", f"sscore={g['sscore']}",
                 f"rscore={g['rscore']}", f"uscore={g['uscore']}", f"tscore={g['tscore']}",
                 f"transl_table={g['translation_table']}"]
        begin, end, strand = int(g["begin"]), int(g["end"]), g["strand"]
        lines.append("\t".join([seqid, source, "CDS", str(begin), str(end), "%.1f" % float(g["score"]), strand, "0",
                                ";".join(attrs)]))
        for k, a in enumerate(annotations.get(f"{contig}_{g['gene']}", ()), 1):
            start, stop = genome_span(begin, end, strand, a.ali_from, a.ali_to)
            key = (a.hmm_name, a.hmm_acc, a.type, a.clan)
            model = models.get(key)
            if model is None:
                model = models[key] = _match_attributes(*key)
            lines.append(f"{seqid}\thmmcascade\tprotein_match\t{start}\t{stop}\t{a.bits:.1f}\t{strand}\t.\t"
                         f"ID={gene_id}.domain{k};Parent={gene_id};{model[0]} {a.hmm_from} {a.hmm_to}{model[1]};"
                         f"evalue={a.evalue:.2g};protein_start={a.ali_from};protein_end={a.ali_to};"
                         f"env_start={a.env_from};env_end={a.env_to};hmm_length={a.hmm_length};"
                         f"significant={int(a.significant)}{model[2]}")
    return lines


def _write_genome(task: tuple[int, list]) -> tuple[dict, str, str]:
    """Genome ``k``'s pfam_scan table and GFF3 from its spool rows (``parts``); returns its summary row, its
    log line and its lines of the protein summary (``""`` unless the split makes one)."""
    from .outfiles import OutputSet, open_output, output_folder

    split = _WORKER["split"]
    k, parts = task
    sample = split.samples[k]
    info = split.calls[sample]
    genes = _gene_rows(split, k)
    Z = split.Z[k]
    note = thresholds_note(split.th, Z)
    annotations = [a for a in unit_annotations(_genome_units(split, k, parts, genes), split.families)
                   if a.significant or not split.significant_only]
    by_protein: dict[str, list] = {}
    for a in annotations:
        by_protein.setdefault(a.seq_id, []).append(a)
    folder = output_folder(Path(split.outdir) / sample)
    pfamscan, gff3 = folder / f"{sample}.pfam_scan.tsv", folder / f"{sample}.gff3"
    if split.proteins is not None:  # the genome's proteins under its own names: its records, "<sample>|" cut
        offset, size = info["faa_bytes"]
        with open(split.proteins, "rb") as fh:
            fh.seek(offset)
            records = fh.read(size)
        tag = sample.encode() + b"|"
        if len(records) != size or (size and not records.startswith(b">" + tag)):
            raise InputError(f"{split.proteins}: not the pooled proteins of the gene calls (genome {sample})")
        body = records.replace(b"\n>" + tag, b"\n>")
        with OutputSet({"faa": folder / f"{sample}.faa"}), open_output(folder / f"{sample}.faa") as fh:
            fh.write((b">" + body[1 + len(tag):] if size else b"").decode("ascii"))
    with OutputSet({"pfam_scan": pfamscan, "gff3": gff3}):
        with open_output(pfamscan) as fh:  # (its id column as wide as the widest id written, as pfam_scan's)
            stream = AnnotationStream("pfamscan", split.families, significant_only=split.significant_only, note=note,
                                      name_width=max([1, *map(len, by_protein)]))
            stream.start(fh)
            stream.add(annotations)
            stream.close()
        with open_output(gff3) as fh:
            table = "" if info["mode"] == "meta" else f", translation table {split.translation_table}"
            head = ["##gff-version 3", f"{split.gff3_head} ({info['mode']} mode{table}); {split.listed}; "
                                       f"thresholds: {note}"]
            fh.write("\n".join(head + _gff3_lines(genes, info["contigs"], by_protein, split.source)) + "\n")
    families_seen = Counter(a.hmm_name for a in annotations)
    top = sorted(families_seen.items(), key=lambda kv: (-kv[1], kv[0]))[:TOP_FAMILIES]
    row = {"sample": sample, "mode": info["mode"], "contigs": len(info["contigs"]), "bases": info["bases"],
           "genes": info["genes"], "genes_with_domains": len(by_protein), "domains": len(annotations),
           "families": len(families_seen), "Z": f"{Z:g}",
           "top_families": ", ".join(f"{name} ({n})" for name, n in top) or "-"}
    proteins = "".join(f"{sample}|{protein_summary_line(doms)}\n" for doms in by_protein.values()
                       ) if split.protein_summary else ""
    return row, (f"{sample}: {info['genes']} genes, {len(by_protein)} with domains, {len(annotations)} domains "
                 f"(Z = {Z:g})"), proteins


def _gene_bytes(path: str, calls: dict) -> tuple:
    """Per sample of the calls, in their order: (offset, size) of its lines in the gene table (a genome's
    lines together, as genes writes them), checked to be the calls' genes.

    Raises:
        GenomeInputError, InputError: one line naming the file.
    """
    runs: dict[str, list[int]] = {}
    try:
        fh = open(path, "rb")
    except FileNotFoundError:
        raise GenomeInputError(f"{path}: gene table not found") from None
    with fh:
        head = fh.readline()
        if tuple(head.rstrip(b"\n").decode("utf-8", "surrogateescape").split("\t")) != GENE_COLUMNS:
            raise GenomeInputError(f"{path}: not a gene table of hmmcascade genes (its columns differ)")
        offset, last, run = len(head), None, None
        for n, line in enumerate(fh, 2):
            fields = line.split(b"\t", 2)
            if len(fields) < 3:
                raise GenomeInputError(f"{path}: line {n}: not a line of a gene table of hmmcascade genes")
            if fields[1] != last:
                last, sample = fields[1], fields[1].decode("utf-8", "surrogateescape")
                if sample in runs:
                    raise GenomeInputError(f"{path}: line {n}: sample {sample!r} again after other samples' genes "
                                           "(genes writes a genome's genes together)")
                run = runs[sample] = [offset, 0, 0]
            run[1] += len(line)
            run[2] += 1
            offset += len(line)
    if set(runs) - set(calls) or any(calls[s]["genes"] != runs.get(s, (0, 0, 0))[2] for s in calls):
        raise InputError(f"{path}: the gene table does not hold the genes of the calls' JSON")
    return tuple(tuple(runs[s][:2]) if s in runs else (0, 0) for s in calls)


class _Tasks:
    """``map`` in ``workers`` processes, each given the split once (or in this process: ``workers`` 1), results
    in the tasks' order; after an error, the tasks not yet started are dropped."""

    def __init__(self, workers: int, split: _Split):
        from concurrent.futures import ProcessPoolExecutor

        self.pool = None
        if workers > 1:
            self.pool = ProcessPoolExecutor(workers, initializer=_start_worker, initargs=(split,))
        else:
            _start_worker(split)

    def __enter__(self):
        return self

    def map(self, fn, tasks):
        return self.pool.map(fn, tasks) if self.pool is not None else map(fn, tasks)

    def __exit__(self, exc_type, exc, tb) -> bool:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=exc_type is not None)
        _WORKER.clear()
        return False


def split_genomes(hits_path, gene_table, meta: dict, th, pool_Z: float, *, outdir, summary, z_mode: str = "genome",
                  families=None, significant_only: bool = False, workers: int = 1, proteins=None,
                  protein_summary=None, log=sys.stderr) -> list[dict]:
    """Write each genome's pfam_scan table and GFF3 (and, with ``proteins``, the pooled FASTA, its ``.faa``)
    and the summary (with ``protein_summary``, the protein summary too; see the module's text), in ``workers``
    processes; ``hits_path``: a hit file or folder, or a list of them; ``meta``: the gene calls' JSON
    (:func:`~hmmcascade.genomes.call_all_genes`).  Returns the summary's rows.

    Raises:
        ValueError: ``z_mode`` genome without model cutoffs; InputError: a hit of a protein not in the
            gene table, or a gene table that is not the calls' (one line naming the file).
    """
    import pyrodigal

    from . import __version__
    from .outfiles import open_output, output_folder

    if z_mode not in Z_MODES:
        raise ValueError(f"Z per {z_mode!r}: expected one of {', '.join(Z_MODES)}")
    if z_mode == "genome" and not th.cut:
        raise ValueError("Z per genome needs model cutoffs (--cut_ga, --cut_tc or --cut_nc: bit scores, whatever Z);"
                         " with E-value thresholds a genome alone reports hits the pool's Z left out: use Z per pool")
    t0 = time.perf_counter()
    calls = meta["genomes"]
    gene_table = os.fspath(gene_table)
    gene_bytes = _gene_bytes(gene_table, calls)
    hits = tuple(map(os.fspath, hits_path if isinstance(hits_path, (list, tuple)) else [hits_path]))
    hf = HitFile(list(hits))  # (a bad hit file: one line naming it, before any work)
    Z = tuple(float(max(1, calls[s]["genes"])) if z_mode == "genome" else pool_Z for s in calls)
    spool = tempfile.mkdtemp(prefix=".split_genomes.", dir=output_folder(outdir))
    split = _Split(
        hits_path=hits, gene_table=gene_table, spool=spool, samples=tuple(calls),
        gene_bytes=gene_bytes, Z=Z, calls=calls, z_mode=z_mode, th=th, families=families,
        significant_only=significant_only, outdir=os.fspath(outdir),
        gff3_head=f"# hmmcascade {__version__}: genes by pyrodigal {pyrodigal.__version__}",
        translation_table=meta.get("settings", {}).get("translation_table", 11),
        listed="significant domains" if significant_only else "all reported domains",
        source=f"pyrodigal_v{pyrodigal.__version__}", proteins=None if proteins is None else os.fspath(proteins),
        protein_summary=protein_summary is not None)
    if proteins is not None and any("faa_bytes" not in c for c in calls.values()):
        raise InputError("the gene calls' JSON has no faa_bytes (made by an older hmmcascade genes): call the genes "
                         "again")
    groups = hf.row_groups
    scans = [(g, min(g + SCAN_ROW_GROUPS, groups), part) for part, g in enumerate(range(0, groups, SCAN_ROW_GROUPS))]
    out_rows = []
    try:
        with _Tasks(workers, split) as tasks, ExitStack() as stack:
            starts = list(tasks.map(_scan, scans))
            scanned = time.perf_counter() - t0
            genomes = [(k, [(part, int(s[k]), int(s[k + 1])) for part, s in enumerate(starts) if s[k + 1] > s[k]])
                       for k in range(len(calls))]
            pooled = None
            if protein_summary is not None:  # (put in place once every genome's lines are in)
                pooled = stack.enter_context(open_output(protein_summary))
                note = (thresholds_note(th, pool_Z) if z_mode == "pool" else
                        thresholds_note(th, 1).rpartition("; Z = ")[0] + "; Z = each genome's proteins")
                pooled.write(f"# hmmcascade {__version__}: {split.listed} of every genome's pfam_scan table, proteins "
                             f"named <sample>|<protein>; thresholds: {note}\n"
                             "protein\tlength\tdomains\tarchitecture\taccessions\tclans\n")
            for row, line, lines in tasks.map(_write_genome, genomes):
                out_rows.append(row)
                if pooled is not None:
                    pooled.write(lines)
                print(line, file=log, flush=True)
    finally:
        shutil.rmtree(spool, ignore_errors=True)
    with open_output(summary) as fh:
        fh.write("\t".join(SUMMARY_COLUMNS) + "\n")
        fh.writelines("\t".join(str(r[c]) for c in SUMMARY_COLUMNS) + "\n" for r in out_rows)
    seconds = time.perf_counter() - t0
    print(f"split the pool's hits into {len(calls)} genomes in {seconds:.1f} s with {workers} processes ({hf.rows} "
          f"hits read in {scanned:.1f} s)", file=log, flush=True)
    return out_rows
