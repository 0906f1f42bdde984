"""From genomes to proteins: the samples, their nucleotide FASTA files, and pyrodigal's gene calls.

A genome run (the workflow's ``genomes:``) annotates many bacterial genomes at once: their genes are
called here, the proteins of all genomes go into one pooled FASTA file that the search shards like
any other, and :mod:`hmmcascade.genome_split` cuts the merged hits back into one set of outputs per
genome.

* :func:`genome_inputs` reads the samples: a folder of nucleotide FASTA files (``*.fna``, ``*.fa``,
  ``*.fasta``, ``*.fas``, ``*.fsa``, ``*.ffn``, ``*.fna.gz`` ...: the sample is the file name
  without them) or a sample sheet (TSV: ``sample<TAB>path``; a ``sample path`` header, blank and
  ``#`` lines allowed; paths relative to the sheet).  Sample names are ``[A-Za-z0-9][A-Za-z0-9._-]*``:
  they name folders and files, and begin the pooled protein names.
* :func:`read_contigs` reads one genome (gzipped or not; one contig or many), checking that it is
  nucleotide FASTA with unique contig names; any fault is one line naming the file.
* :func:`call_genes` runs pyrodigal (Prodigal 2.6.3's algorithm) on one genome: *single* mode
  trained on all of the genome's contigs together (as Prodigal does, ``GeneFinder.train(*contigs)``)
  with the configured translation table, or *meta* mode (Prodigal's pre-trained metagenomic models,
  each contig its best model and that model's table, 11 or 4) for short or metagenomic inputs;
  ``auto`` takes single mode from :data:`SINGLE_MIN_BP` bases (Prodigal's advice: training needs
  20 kbp and works best from about 100 kbp; below, meta mode).  Genes are numbered per contig along
  it from 1, and named as Prodigal names its proteins, ``<contig>_<n>``; the translations have no
  stop codon's ``*`` (HMMER reads it as a residue).
* :func:`call_all_genes` calls every genome in a process pool, a genome a task, and writes each
  genome's ``<sample>.faa``, the pooled FASTA (proteins named ``<sample>|<contig>_<n>``: sample
  names hold no ``|``, so the sample is the name up to its first ``|``; the name has no white space,
  so it is one word in every table, and GFF3 and pfam_scan keep it as it is), the gene table
  (:data:`GENE_COLUMNS`, one line per gene in pooled order) and the run's JSON (per genome: its
  file, mode, contigs and their lengths, genes, seconds).
"""

from __future__ import annotations

import gzip
import json
import os
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["FASTA_SUFFIXES", "GENE_COLUMNS", "SINGLE_MIN_BP", "GeneCalls", "GeneSettings", "GenomeInputError",
           "call_all_genes", "call_genes", "genome_inputs", "pooled_name", "read_contigs", "read_gene_table"]

#: nucleotide FASTA file names in a genomes folder (each also gzipped: ``.gz``)
FASTA_SUFFIXES = (".fna", ".fa", ".fasta", ".fas", ".fsa", ".ffn", ".fsa_nt")
#: auto mode: single mode (trained on the genome) from this many bases, else meta mode
SINGLE_MIN_BP = 100_000
#: pyrodigal's least training sequence (GeneFinder.train refuses shorter)
TRAINING_MIN_BP = 20_000
#: the gene table's columns (``genes.tsv``): the pooled protein name, where the gene lies (1-based,
#: inclusive, on the contig's forward strand), pyrodigal's partial flags (``10``: runs off the
#: contig's start, as Prodigal writes ``partial=``), and its start, RBS and scores
GENE_COLUMNS = ("protein", "sample", "contig", "gene", "begin", "end", "strand", "partial", "start_type", "rbs_motif",
                "rbs_spacer", "gc_cont", "confidence", "score", "cscore", "sscore", "rscore", "uscore", "tscore",
                "translation_table", "length_aa")

class GenomeInputError(ValueError):
    """A bad genomes folder, sample sheet, genome file or gene table: one line naming it.  (This module
    imports nothing outside Python's standard library at its top: the workflow reads the samples with
    it when it starts, whatever environment Snakemake runs in.)"""


SAMPLE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
#: IUPAC nucleotide codes (either case) and gaps: what a nucleotide FASTA line may hold
_NUCLEOTIDES = re.compile(rb"[ACGTUNRYKMSWBDHVacgtunrykmswbdhv.\-]*")


def pooled_name(sample: str, gene_name: str) -> str:
    return f"{sample}|{gene_name}"


def _strip_suffix(name: str) -> str | None:
    """The sample name of a genome file's name, or None when it is not named as nucleotide FASTA."""
    base = name[:-3] if name.endswith(".gz") else name
    for suffix in FASTA_SUFFIXES:
        if base.endswith(suffix) and len(base) > len(suffix):
            return base[: -len(suffix)]
    return None


def _check_sample(sample: str, where: str) -> None:
    if not SAMPLE_NAME.fullmatch(sample):
        raise GenomeInputError(f"{where}: sample name {sample!r} must be letters, digits, '.', '_' or '-' (not "
                               "first: '.', '_', '-'): it names the sample's folder and begins its proteins' names")


def genome_inputs(spec) -> dict[str, str]:
    """``{sample: nucleotide FASTA path}`` of a genomes folder or sample sheet, in the folder's name order
    or the sheet's line order.

    Raises:
        GenomeInputError: one line naming the folder, sheet or file (none found, a bad line or name, a
            sample twice, a file missing).
    """
    spec = os.fspath(spec)
    if os.path.isdir(spec):
        found: dict[str, str] = {}
        for name in sorted(os.listdir(spec)):
            sample = _strip_suffix(name)
            if sample is None or name.startswith("."):
                continue
            _check_sample(sample, os.path.join(spec, name))
            if sample in found:
                raise GenomeInputError(f"{os.path.join(spec, name)}: sample {sample!r} again (also {found[sample]})")
            found[sample] = os.path.join(spec, name)
        if not found:
            raise GenomeInputError(f"{spec}: no nucleotide FASTA files in the folder (named *"
                             + ", *".join(FASTA_SUFFIXES) + ", gzipped or not)")
        return found
    return _read_sheet(spec)


def _read_sheet(path: str) -> dict[str, str]:
    try:
        with open(path, encoding="utf-8") as fh:
            lines = fh.read().splitlines()
    except FileNotFoundError:
        raise GenomeInputError(f"{path}: genomes folder or sample sheet not found") from None
    except UnicodeDecodeError:
        raise GenomeInputError(f"{path}: not a sample sheet (not UTF-8 text)") from None
    except OSError as exc:
        raise GenomeInputError(f"{path}: cannot read the sample sheet ({exc.strerror})") from None
    found: dict[str, str] = {}
    for n, line in enumerate(lines, 1):
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.rstrip("\r").split("\t")
        if len(fields) != 2 or not all(f.strip() for f in fields):
            raise GenomeInputError(f"{path}: line {n}: expected 'sample<TAB>path', got {line[:80]!r}")
        sample, file = (f.strip() for f in fields)
        if not found and (sample.lower(), file.lower()) == ("sample", "path"):
            continue  # (the header)
        _check_sample(sample, f"{path}: line {n}")
        if sample in found:
            raise GenomeInputError(f"{path}: line {n}: sample {sample!r} again")
        file = file if os.path.isabs(file) else os.path.join(os.path.dirname(path), file)
        if not os.path.isfile(file):
            raise GenomeInputError(f"{path}: line {n}: {file}: genome file not found")
        found[sample] = file
    if not found:
        raise GenomeInputError(f"{path}: the sample sheet lists no genomes")
    return found


def read_contigs(path) -> list[tuple[str, str]]:
    """The (name, sequence) records of a nucleotide FASTA file, gzipped or not, in file order.

    Raises:
        GenomeInputError: one line naming the file: not FASTA, a line that is not nucleotides (with its
            number), a contig without a name, a name twice, or no sequence at all.
    """
    path = os.fspath(path)
    try:
        with open(path, "rb") as raw:
            gzipped = raw.read(2) == b"\x1f\x8b"
        with (gzip.open(path, "rb") if gzipped else open(path, "rb")) as fh:
            data = fh.read()
    except FileNotFoundError:
        raise GenomeInputError(f"{path}: genome file not found") from None
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise GenomeInputError(f"{path}: cannot read the genome ({' '.join(str(exc).split())})") from None
    records: list[tuple[str, str]] = []
    names: set[str] = set()
    name, parts = None, []
    for n, line in enumerate(data.split(b"\n"), 1):
        line = line.rstrip(b"\r")
        if line.startswith(b">"):
            if name is not None:
                records.append((name, b"".join(parts).decode("ascii")))
            words = line[1:].split()
            if not words:
                raise GenomeInputError(f"{path}: line {n}: a FASTA record without a name")
            name, parts = words[0].decode("utf-8", "surrogateescape"), []
            if name in names:
                raise GenomeInputError(f"{path}: line {n}: contig {name!r} again (a genome's contig names must be "
                                       "unique)")
            names.add(name)
        elif line.strip():
            if name is None:
                raise GenomeInputError(f"{path}: not FASTA (line {n} comes before any '>' header)")
            line = line.strip()
            if not _NUCLEOTIDES.fullmatch(line):
                bad = next(chr(b) for b in line if not _NUCLEOTIDES.fullmatch(bytes([b])))
                raise GenomeInputError(f"{path}: line {n}: {bad!r} is not a nucleotide (IUPAC): not nucleotide FASTA")
            parts.append(line)
    if name is not None:
        records.append((name, b"".join(parts).decode("ascii")))
    if not records or not any(seq for _, seq in records):
        raise GenomeInputError(f"{path}: no nucleotide sequence in the file")
    return records


@dataclass(frozen=True)
class GeneSettings:
    """How genes are called: ``mode`` auto, single or meta; the translation table of single mode;
    auto's single-mode threshold in bases; ``closed``: genes may not run off contig edges."""

    mode: str = "auto"
    translation_table: int = 11
    single_min_bp: int = SINGLE_MIN_BP
    closed: bool = False

    def mode_for(self, bases: int) -> str:
        if self.mode == "auto":
            return "single" if bases >= max(self.single_min_bp, TRAINING_MIN_BP) else "meta"
        return self.mode


@dataclass
class GeneCalls:
    """One genome's gene calls: its contigs (name, length), mode, genes (rows of :data:`GENE_COLUMNS`,
    the protein name pooled), proteins (name, sequence) in the same order, and seconds taken."""

    sample: str
    path: str
    mode: str
    contigs: list[tuple[str, int]] = field(default_factory=list)
    genes: list[tuple] = field(default_factory=list)
    proteins: list[tuple[str, str]] = field(default_factory=list)
    seconds: float = 0.0


def call_genes(sample: str, path: str, settings: GeneSettings) -> GeneCalls:
    """pyrodigal's genes of one genome (see the module's text).

    Raises:
        GenomeInputError: the genome's file is bad, or too short for single mode (one line naming it).
    """
    import pyrodigal

    t0 = time.perf_counter()
    contigs = read_contigs(path)
    bases = sum(len(s) for _, s in contigs)
    mode = settings.mode_for(bases)
    if mode == "single":
        if bases < TRAINING_MIN_BP:
            raise GenomeInputError(f"{path}: {bases} bases, too short to train single mode (pyrodigal needs "
                             f"{TRAINING_MIN_BP}): use meta mode")
        finder = pyrodigal.GeneFinder(closed=settings.closed)
        finder.train(*(s for _, s in contigs), translation_table=settings.translation_table)
    else:
        finder = pyrodigal.GeneFinder(meta=True, closed=settings.closed)
    calls = GeneCalls(sample, path, mode, contigs=[(name, len(seq)) for name, seq in contigs])
    for contig, seq in contigs:
        for n, gene in enumerate(finder.find_genes(seq), 1):
            protein = pooled_name(sample, f"{contig}_{n}")
            aa = gene.translate(include_stop=False)
            calls.genes.append((
                protein, sample, contig, n, gene.begin, gene.end, "+" if gene.strand > 0 else "-",
                f"{int(gene.partial_begin)}{int(gene.partial_end)}", gene.start_type, gene.rbs_motif or "None",
                gene.rbs_spacer or "None", f"{gene.gc_cont:.3f}", f"{gene.confidence():.2f}", f"{gene.score:.2f}",
                f"{gene.cscore:.2f}", f"{gene.sscore:.2f}", f"{gene.rscore:.2f}", f"{gene.uscore:.2f}",
                f"{gene.tscore:.2f}", gene.translation_table, len(aa)))
            calls.proteins.append((protein, aa))
    calls.seconds = time.perf_counter() - t0
    return calls


def _call_task(task) -> GeneCalls:
    return call_genes(*task)


def _fasta(records, strip: int = 0) -> str:
    """FASTA text, 60 residues a line; ``strip``: characters cut from each name's start."""
    out = []
    for name, seq in records:
        out.append(">" + name[strip:])
        out.extend(seq[i: i + 60] for i in range(0, len(seq), 60))
    return "\n".join(out) + "\n" if out else ""


def call_all_genes(genomes: dict[str, str], settings: GeneSettings, *, outdir=None, pooled, gene_table, meta,
                   workers: int = 1, log=sys.stderr) -> dict:
    """Call every genome's genes (``workers`` processes, a genome a task, results written in the
    samples' order), write the pooled FASTA ``pooled``, the gene table and the run's JSON ``meta``
    together (per genome, ``faa_bytes``: the offset and size of its records in ``pooled``, from which
    ``split-genomes`` writes its own ``.faa``), and, with ``outdir``, ``outdir/<sample>/<sample>.faa``
    (each genome's on its own, atomically; the workflow leaves them to ``split-genomes``: a job with
    a file per genome among its outputs makes Snakemake checksum every input once per output).  Logs a
    line per genome and the total (genomes, genes, seconds, genomes per hour).  Returns the JSON."""
    from concurrent.futures import ProcessPoolExecutor

    from .outfiles import OutputSet, open_output, output_folder

    t0 = time.perf_counter()
    outputs = OutputSet({"--proteins": pooled, "--genes": gene_table, "--meta": meta})
    tasks = [(sample, path, settings) for sample, path in genomes.items()]
    summary = {"settings": vars(settings), "genomes": {}}
    with (ProcessPoolExecutor(workers) if workers > 1 else _Serial()) as pool, outputs, _CancelOnError(pool):
        with open_output(pooled) as faa, open_output(gene_table) as tsv:
            tsv.write("\t".join(GENE_COLUMNS) + "\n")
            offset = 0
            for calls in pool.map(_call_task, tasks, chunksize=1):
                if outdir is not None:
                    folder = output_folder(Path(outdir) / calls.sample)
                    with OutputSet({"--outdir": folder / f"{calls.sample}.faa"}):
                        with open_output(folder / f"{calls.sample}.faa") as fh:
                            fh.write(_fasta(calls.proteins, strip=len(calls.sample) + 1))
                text = _fasta(calls.proteins)
                size = len(text.encode("ascii"))
                faa.write(text)
                tsv.writelines("\t".join(map(str, row)) + "\n" for row in calls.genes)
                bases = sum(n for _, n in calls.contigs)
                summary["genomes"][calls.sample] = {"path": calls.path, "mode": calls.mode, "bases": bases,
                                                    "contigs": calls.contigs, "genes": len(calls.genes),
                                                    "seconds": round(calls.seconds, 3), "faa_bytes": [offset, size]}
                offset += size
                print(f"{calls.sample}: {len(calls.contigs)} contigs, {bases} bp, {calls.mode} mode: "
                      f"{len(calls.genes)} genes in {calls.seconds:.2f} s", file=log, flush=True)
        seconds = time.perf_counter() - t0
        genes = sum(g["genes"] for g in summary["genomes"].values())
        summary.update(genes=genes, seconds=round(seconds, 3), workers=workers)
        with open_output(meta) as fh:
            json.dump(summary, fh, indent=1)
    print(f"called {genes} genes on {len(genomes)} genomes in {seconds:.1f} s with {workers} processes: "
          f"{len(genomes) * 3600 / max(seconds, 1e-9):.0f} genomes per hour", file=log, flush=True)
    return summary


class _CancelOnError:
    """On an error (a bad genome), the pool's genomes not yet started are dropped rather than called;
    the ones running are waited for (a genome each).  Not waiting (``wait=False``) left the pool's
    manager thread running at the interpreter's exit, whose wake-up then raced its closing pipe: now and
    then "OSError: [Errno 9] Bad file descriptor" after the error's one line (Python 3.11; the second,
    waiting shutdown of the ``with`` no longer joins a pool once shut down)."""

    def __init__(self, pool):
        self.pool = pool

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        if exc_type is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
        return False


class _Serial:
    """A pool of none: ``map`` in this process (``workers`` 1)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> bool:
        return False

    @staticmethod
    def map(fn, items, chunksize=1):
        return map(fn, items)

    def shutdown(self, wait=True, cancel_futures=False) -> None:
        pass


def read_gene_table(path) -> list[dict]:
    """The gene table (:data:`GENE_COLUMNS`) as dicts of strings, or one line naming the file."""
    path = os.fspath(path)
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as fh:
            head = fh.readline().rstrip("\n").split("\t")
            if tuple(head) != GENE_COLUMNS:
                raise GenomeInputError(f"{path}: not a gene table of hmmcascade genes (its columns differ)")
            return [dict(zip(GENE_COLUMNS, line.rstrip("\n").split("\t"))) for line in fh]
    except FileNotFoundError:
        raise GenomeInputError(f"{path}: gene table not found") from None
