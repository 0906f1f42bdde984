"""A pooled search's hits cut back into one set of outputs per genome (:mod:`hmmcascade.genomes`).

The proteins of all genomes were searched together (one search per shard, not per genome) and
merged as one search (Z: all proteins).  :func:`split_genomes` reads the merged hit file a block
of models at a time, gives each hit to its genome (the pooled protein name's sample, found in the
gene table), and writes for each genome, under ``<outdir>/<sample>/``:

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
frequent families).

**Z.**  ``z="genome"``: each genome's E-values are those of a search of that genome alone (Z its
proteins, domZ each model's reported proteins of that genome), recomputed from the records' P-values
as HMMER does (:func:`~hmmcascade.reporting.threshold_hits`).  That needs bit-score thresholds
(``--cut_ga``/``--cut_tc``/``--cut_nc``: which hits and domains are reported and significant does
not depend on Z): with E-value thresholds a genome alone would report hits that the pool's larger Z
left out, so ``genome`` is refused there.  ``z="pool"``: the merged search's own E-values (Z all
proteins of all genomes).
"""

from __future__ import annotations

import os
import re
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

from .annotate import AnnotationStream, DomainUnit, thresholds_note, unit_annotations
from .columnar import HitFile
from .genomes import read_gene_table
from .io import InputError
from .reporting import threshold_hits

__all__ = ["SUMMARY_COLUMNS", "Z_MODES", "genome_span", "split_genomes"]

Z_MODES = ("genome", "pool")
#: the summary table's columns: a line per genome
SUMMARY_COLUMNS = ("sample", "mode", "contigs", "bases", "genes", "genes_with_domains", "domains", "families", "Z",
                   "top_families")
#: models' hits per block read (a model's hits stay in one block)
BLOCK_HITS = 50_000
TOP_FAMILIES = 10


def genome_span(begin: int, end: int, strand: str, aa_from: int, aa_to: int) -> tuple[int, int]:
    """The bases (1-based, inclusive, forward strand) of residues ``aa_from..aa_to`` of a gene from
    ``begin`` to ``end`` on ``strand``."""
    if strand == "+":
        return begin + 3 * (aa_from - 1), begin + 3 * aa_to - 1
    return end - 3 * aa_to + 1, end - 3 * (aa_from - 1)


def _blocks(counts: np.ndarray, block_hits: int) -> list[tuple[int, int]]:
    """Consecutive model ranges of at most ``block_hits`` hits (or one model's)."""
    out, lo, n = [], 0, 0
    for m, c in enumerate(counts.tolist()):
        if n and n + c > block_hits:
            out.append((lo, m))
            lo, n = m, 0
        n += c
    if n:
        out.append((lo, len(counts)))
    return out


def _genome_units(hits_path: str, genes: dict[str, dict], sizes: dict[str, int], th, z_mode: str,
                  block_hits: int) -> dict[str, dict[str, list[DomainUnit]]]:
    """{sample: {protein (the genome's own name): its reported domains}} of the merged hits."""
    hf = HitFile(hits_path)
    units: dict[str, dict[str, list[DomainUnit]]] = {s: {} for s in sizes}
    if hf.rows == 0:
        return units
    for lo, hi in _blocks(hf.model_counts(hf.last_model + 1), block_hits):
        per_genome: dict[str, list] = {}
        for h in hf.read_models(lo, hi):
            gene = genes.get(h.target_name)
            if gene is None:
                raise InputError(f"{hits_path}: target {h.target_name!r} is not in the gene table")
            per_genome.setdefault(gene["sample"], []).append(h)
        for sample, hits in per_genome.items():
            if z_mode == "genome":
                threshold_hits(hits, th, float(sizes[sample]))
            cut = len(sample) + 1
            proteins = units[sample]
            for h in hits:
                if not h.reported:
                    continue
                name = h.target_name[cut:]
                for d in h.domains:
                    if d.reported:
                        proteins.setdefault(name, []).append(DomainUnit(
                            h.model, h.model_name, h.model_acc, h.model_length, name, h.target_length, h.score,
                            h.included, d.env_from, d.env_to, d.score, d.i_evalue, d.included, d.hmm_from,
                            d.hmm_to, d.ali_from, d.ali_to))
    return units


_UNSAFE_SEQID = re.compile(r"[^a-zA-Z0-9.:^*$@!+_?\-|]")
_UNSAFE_ATTR = re.compile("[;=&,%\t\n\r\x00-\x1f\x7f\udc80-\udcff]")


def _escape(text: str, unsafe: re.Pattern) -> str:
    """GFF3's percent-encoding (upper-case hex of the UTF-8 bytes) of the characters ``unsafe`` matches."""
    return unsafe.sub(lambda m: "".join(f"%{b:02X}" for b in m.group().encode("utf-8", "surrogateescape")), text)


_PFAM_ACC = re.compile(r"PF\d{5}")


def _gff3_lines(sample_genes: list[dict], contigs: list, annotations: dict, source: str) -> list[str]:
    lines = [f"##sequence-region {_escape(name, _UNSAFE_SEQID)} 1 {length}" for name, length in contigs if length]
    for g in sample_genes:
        seqid = _escape(g["contig"], _UNSAFE_SEQID)
        gene_id = _escape(f"{g['contig']}_{g['gene']}", _UNSAFE_ATTR)
        attrs = [f"ID={gene_id}", f"Name={gene_id}", f"partial={g['partial']}", f"start_type={g['start_type']}",
                 f"rbs_motif={g['rbs_motif']}", f"rbs_spacer={g['rbs_spacer']}", f"gc_cont={g['gc_cont']}",
                 f"conf={g['confidence']}", f"score={g['score']}", f"cscore={g['cscore']}", f"sscore={g['sscore']}",
                 f"rscore={g['rscore']}", f"uscore={g['uscore']}", f"tscore={g['tscore']}",
                 f"transl_table={g['translation_table']}"]
        begin, end, strand = int(g["begin"]), int(g["end"]), g["strand"]
        lines.append("\t".join([seqid, source, "CDS", str(begin), str(end), "%.1f" % float(g["score"]), strand, "0",
                                ";".join(attrs)]))
        for k, a in enumerate(annotations.get(f"{g['contig']}_{g['gene']}", ()), 1):
            start, stop = genome_span(begin, end, strand, a.ali_from, a.ali_to)
            name = _escape(a.hmm_name, _UNSAFE_ATTR)
            column9 = [f"ID={gene_id}.domain{k}", f"Parent={gene_id}", f"Name={name}",
                       f"Target={name.replace(' ', '%20')} {a.hmm_from} {a.hmm_to}"]
            pfam = _PFAM_ACC.match(a.hmm_acc)
            if pfam:
                column9.append(f"Dbxref=Pfam:{pfam.group(0)}")
            if a.hmm_acc != "-":
                column9.append(f"accession={_escape(a.hmm_acc, _UNSAFE_ATTR)}")
            column9.append(f"evalue={a.evalue:.2g};protein_start={a.ali_from};protein_end={a.ali_to};"
                           f"env_start={a.env_from};env_end={a.env_to};hmm_length={a.hmm_length};"
                           f"significant={int(a.significant)}")
            if a.type != "-":
                column9.append(f"type={_escape(a.type, _UNSAFE_ATTR)}")
            if a.clan != "No_clan":
                column9.append(f"clan={_escape(a.clan, _UNSAFE_ATTR)}")
            lines.append("\t".join([seqid, "hmmcascade", "protein_match", str(start), str(stop), "%.1f" % a.bits,
                                    strand, ".", ";".join(column9)]))
    return lines


def split_genomes(hits_path, gene_table, meta: dict, th, pool_Z: float, *, outdir, summary, z_mode: str = "genome",
                  families=None, significant_only: bool = False, block_hits: int = BLOCK_HITS,
                  log=sys.stderr) -> list[dict]:
    """Write each genome's pfam_scan table and GFF3 and the summary (see the module's text); ``meta``:
    the gene calls' JSON (:func:`~hmmcascade.genomes.call_all_genes`).  Returns the summary's rows.

    Raises:
        ValueError: ``z_mode`` genome without model cutoffs; InputError: a hit of a protein not in the
            gene table, or a gene table that is not the calls' (one line naming the file).
    """
    import pyrodigal

    from . import __version__
    from .outfiles import OutputSet, open_output, output_folder

    if z_mode not in Z_MODES:
        raise ValueError(f"Z per {z_mode!r}: expected one of {', '.join(Z_MODES)}")
    if z_mode == "genome" and not th.cut:
        raise ValueError("Z per genome needs model cutoffs (--cut_ga, --cut_tc or --cut_nc: bit scores, whatever Z);"
                         " with E-value thresholds a genome alone reports hits the pool's Z left out: use Z per pool")
    t0 = time.perf_counter()
    rows = read_gene_table(gene_table)
    genes = {g["protein"]: g for g in rows}
    by_sample: dict[str, list[dict]] = {}
    for g in rows:
        by_sample.setdefault(g["sample"], []).append(g)
    calls = meta["genomes"]
    if set(by_sample) - set(calls) or any(calls[s]["genes"] != len(by_sample.get(s, ())) for s in calls):
        raise InputError(f"{gene_table}: the gene table does not hold the genes of the calls' JSON")
    sizes = {s: max(1, calls[s]["genes"]) for s in calls}
    units = _genome_units(os.fspath(hits_path), genes, sizes, th, z_mode, block_hits)
    settings = meta.get("settings", {})
    source = f"pyrodigal_v{pyrodigal.__version__}"
    listed = "significant domains" if significant_only else "all reported domains"
    out_rows = []
    for sample, info in calls.items():
        Z = float(sizes[sample]) if z_mode == "genome" else pool_Z
        note = thresholds_note(th, Z)
        annotations = [a for a in unit_annotations(units[sample], families)
                       if a.significant or not significant_only]
        by_protein: dict[str, list] = {}
        for a in annotations:
            by_protein.setdefault(a.seq_id, []).append(a)
        folder = output_folder(Path(outdir) / sample)
        pfamscan, gff3 = folder / f"{sample}.pfam_scan.tsv", folder / f"{sample}.gff3"
        with OutputSet({"pfam_scan": pfamscan, "gff3": gff3}):
            with open_output(pfamscan) as fh:
                stream = AnnotationStream("pfamscan", families, significant_only=significant_only, note=note)
                stream.start(fh)
                stream.add(annotations)
                stream.close()
            with open_output(gff3) as fh:
                table = "" if info["mode"] == "meta" else f", translation table {settings.get('translation_table', 11)}"
                head = ["##gff-version 3",
                        f"# hmmcascade {__version__}: genes by pyrodigal {pyrodigal.__version__} ({info['mode']} mode"
                        f"{table}); {listed}; thresholds: {note}"]
                fh.write("\n".join(head + _gff3_lines(by_sample.get(sample, []), info["contigs"], by_protein,
                                                      source)) + "\n")
        families_seen = Counter(a.hmm_name for a in annotations)
        top = sorted(families_seen.items(), key=lambda kv: (-kv[1], kv[0]))[:TOP_FAMILIES]
        out_rows.append({"sample": sample, "mode": info["mode"], "contigs": len(info["contigs"]),
                         "bases": info["bases"], "genes": info["genes"], "genes_with_domains": len(by_protein),
                         "domains": len(annotations), "families": len(families_seen), "Z": f"{Z:g}",
                         "top_families": ", ".join(f"{name} ({n})" for name, n in top) or "-"})
        print(f"{sample}: {info['genes']} genes, {len(by_protein)} with domains, {len(annotations)} domains "
              f"(Z = {Z:g})", file=log, flush=True)
    with open_output(summary) as fh:
        fh.write("\t".join(SUMMARY_COLUMNS) + "\n")
        fh.writelines("\t".join(str(r[c]) for c in SUMMARY_COLUMNS) + "\n" for r in out_rows)
    seconds = time.perf_counter() - t0
    print(f"split the pool's hits into {len(calls)} genomes in {seconds:.1f} s", file=log, flush=True)
    return out_rows
