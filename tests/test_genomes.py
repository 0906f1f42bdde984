"""Genome runs (hmmcascade.genomes, hmmcascade.genome_split): pyrodigal's gene calls, the pooled search split
back per genome, and the workflow over a folder of genomes.

Test genomes: pyrodigal's own (its package's tests/data: KK037166, 20 kbp, meta mode; NCTC11397, the first
100 kbp and the whole 2.46 Mbp, single mode) and pyhmmer's contigs of 1390.SAMEA104415756 (two contigs, one
genome, single mode). Expected genes: pyrodigal.GeneFinder on the same genome and settings; expected domains:
pyhmmer.hmmsearch on each genome's proteins alone (Z: its proteins) or on the pool."""

from __future__ import annotations

import gzip
import shutil
import subprocess
import sys
from pathlib import Path

import pyhmmer
import pyrodigal
import pytest
from Bio import SeqIO
from Bio.Seq import Seq

from hmmcascade.genome_split import SCAN_ROW_GROUPS, genome_span
from hmmcascade.genomes import GenomeInputError, genome_inputs, read_contigs, read_gene_table
from test_workflow import RESOURCES, _config, _dry_run, _snakemake

PYRODIGAL_DATA = Path(pyrodigal.__file__).parent / "tests" / "data"
PYHMMER_SEQS = Path(pyhmmer.__file__).parent / "tests" / "data" / "seqs"
MODELS = RESOURCES / "pfam35_default.hmm.gz"


def _hmmcascade(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hmmcascade", *map(str, args)], capture_output=True, text=True,
                          timeout=600)


def _genomes(folder: Path, full: bool = False) -> Path:
    """KK037166 (meta mode), NCTC11397's first 100 kbp (or, ``full``, the whole genome) and 1390.SAMEA104415756's
    two contigs as one genome, in ``folder``."""
    folder.mkdir()
    shutil.copy(PYRODIGAL_DATA / "KK037166.fna.gz", folder / "KK037166.fna.gz")
    nctc = "GCF_001457455.1_NCTC11397_genomic" + ("" if full else "_100kb") + ".fna.gz"
    shutil.copy(PYRODIGAL_DATA / nctc, folder / ("NCTC11397.fna.gz" if full else "NCTC11397_100kb.fna.gz"))
    with open(folder / "SAMEA104415756.fa", "wb") as fh:
        for contig in ("OFHT01000022", "OFHT01000024"):
            fh.write((PYHMMER_SEQS / f"1390.SAMEA104415756.{contig}.fna").read_bytes())
    return folder


def _call(folder: Path, out: Path, *options) -> subprocess.CompletedProcess:
    out.mkdir(exist_ok=True)
    return _hmmcascade("genes", folder, "--outdir", out, "--proteins", out / "proteins.faa", "--genes",
                       out / "genes.tsv", "--meta", out / "genomes.json", "--cpu", 2, *options)


def _pyrodigal_genes(path: Path, meta: bool, table: int = 11) -> list[tuple]:
    """(contig, begin, end, strand, partial, start type, protein) of pyrodigal.GeneFinder on the genome."""
    opener = gzip.open if path.read_bytes()[:2] == b"\x1f\x8b" else open  # (one test file: gzipped, named .fna)
    with opener(path, "rt") as fh:
        contigs = [(r.id, str(r.seq)) for r in SeqIO.parse(fh, "fasta")]
    finder = pyrodigal.GeneFinder(meta=meta)
    if not meta:
        finder.train(*(s for _, s in contigs), translation_table=table)
    return [(name, g.begin, g.end, "+" if g.strand > 0 else "-", f"{int(g.partial_begin)}{int(g.partial_end)}",
             g.start_type, g.translate(include_stop=False))
            for name, seq in contigs for g in finder.find_genes(seq)]


def _our_genes(out: Path, sample: str) -> list[tuple]:
    proteins = {r.id: str(r.seq) for r in SeqIO.parse(out / sample / f"{sample}.faa", "fasta")}
    rows = [g for g in read_gene_table(out / "genes.tsv") if g["sample"] == sample]
    assert len(proteins) == len(rows)
    return [(g["contig"], int(g["begin"]), int(g["end"]), g["strand"], g["partial"], g["start_type"],
             proteins[f"{g['contig']}_{g['gene']}"]) for g in rows]


def test_genome_inputs_folder_sheet_and_bad_files(tmp_path):
    folder = _genomes(tmp_path / "g")
    (folder / "notes.txt").write_text("not a genome")
    assert list(genome_inputs(folder)) == ["KK037166", "NCTC11397_100kb", "SAMEA104415756"]
    sheet = tmp_path / "sheet.tsv"
    sheet.write_text("sample\tpath\n# two of them\nkk\tg/KK037166.fna.gz\n\nsa\t" + str(folder / "SAMEA104415756.fa")
                     + "\n")
    assert genome_inputs(sheet) == {"kk": str(tmp_path / "g/KK037166.fna.gz"), "sa": str(folder / "SAMEA104415756.fa")}
    for text, message in (("kk\tg/KK037166.fna.gz\nkk\tg/KK037166.fna.gz\n", "line 2: sample 'kk' again"),
                          ("a|b\tg/KK037166.fna.gz\n", "sample name 'a|b'"),
                          ("kk\tg/missing.fna\n", "missing.fna: genome file not found"),
                          ("kk g/KK037166.fna.gz\n", "line 1: expected 'sample<TAB>path'")):
        sheet.write_text(text)
        with pytest.raises(GenomeInputError, match=message):
            genome_inputs(sheet)
    with pytest.raises(GenomeInputError, match="no nucleotide FASTA files"):
        genome_inputs(tmp_path)
    bad = tmp_path / "bad.fna"
    for text, message in ((">p1\nMKVLEEPQ\n", r"line 2: 'L' is not a nucleotide"), ("ACGT\n", "not FASTA"),
                          (">c\nACGT\n>c\nACGT\n", "contig 'c' again"), ("", "no nucleotide sequence")):
        bad.write_text(text)
        with pytest.raises(GenomeInputError, match=message):
            read_contigs(bad)
    assert [(n, len(s)) for n, s in read_contigs(folder / "SAMEA104415756.fa")] == [
        ("1390.SAMEA104415756.OFHT01000022", 391023), ("1390.SAMEA104415756.OFHT01000024", 574)]


def test_genes_equal_pyrodigal_gene_finder(tmp_path):
    """hmmcascade genes (2 processes) on four genomes -- one short (meta mode under auto), one whole genome, one
    of two contigs -- gives pyrodigal.GeneFinder's genes on each: coordinates, strand, partial flags, start and
    protein; the pooled FASTA holds each genome's proteins as <sample>|<name>. Forced modes and a translation
    table too. A protein FASTA among the genomes: one line naming it, exit 1."""
    folder = _genomes(tmp_path / "g", full=True)
    shutil.copy(PYRODIGAL_DATA / "GCF_001457455.1_NCTC11397_genomic_100kb.fna.gz", folder / "NCTC11397_100kb.fna")
    out = tmp_path / "out"
    run = _call(folder, out)
    assert run.returncode == 0, run.stderr
    assert "genomes per hour" in run.stderr.splitlines()[-1]
    modes = {"KK037166": True, "NCTC11397": False, "NCTC11397_100kb": False, "SAMEA104415756": False}
    for sample, meta in modes.items():
        path = next(folder.glob(sample + ".f*"))
        ours = _our_genes(out, sample)
        assert ours == _pyrodigal_genes(path, meta) and len(ours) > 10, sample
    pooled = [r.id for r in SeqIO.parse(out / "proteins.faa", "fasta")]
    assert pooled == [g["protein"] for g in read_gene_table(out / "genes.tsv")]
    assert pooled[0] == "KK037166|KK037166.1_1" and len(set(pooled)) == len(pooled)

    two = tmp_path / "two"
    two.mkdir()
    for name in ("KK037166.fna.gz", "SAMEA104415756.fa"):
        shutil.copy(folder / name, two / name)
    run = _call(two, tmp_path / "meta", "--mode", "meta")
    assert run.returncode == 0, run.stderr
    assert _our_genes(tmp_path / "meta", "SAMEA104415756") == _pyrodigal_genes(two / "SAMEA104415756.fa", True)
    run = _call(two, tmp_path / "t4", "--mode", "single", "--translation-table", "4")
    assert run.returncode == 0, run.stderr
    assert _our_genes(tmp_path / "t4", "SAMEA104415756") == _pyrodigal_genes(two / "SAMEA104415756.fa", False, 4)
    short = tmp_path / "short"
    short.mkdir()
    (short / "short.fna").write_text(">c\n" + read_contigs(folder / "KK037166.fna.gz")[0][1][:5000] + "\n")
    run = _call(short, tmp_path / "short_out", "--mode", "single")
    assert run.returncode == 1 and f"{short / 'short.fna'}: 5000 bases, too short to train single mode" in run.stderr

    (two / "proteins.fasta").write_text(">p1\nMKVLEEPQ\n")
    run = _call(two, tmp_path / "bad")
    assert run.returncode == 1 and not (tmp_path / "bad/proteins.faa").exists()  # (the genomes before it: logged)
    assert run.stderr.splitlines()[-1].startswith(f"hmmcascade: error: {two / 'proteins.fasta'}: line 2:"), run.stderr


def _our_domains(path: Path) -> set[tuple]:
    """(protein, model, ali, env, hmm coordinates, bits, i-Evalue as printed) of a pfam_scan table."""
    rows = set()
    for line in path.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            f = line.split()
            rows.add((f[0], f[6], *map(int, f[1:5]), int(f[8]), int(f[9]), f[11], f[12]))
    return rows


def _pyhmmer_domains(faa: Path, Z: int, cut: bool) -> set[tuple]:
    with pyhmmer.plan7.HMMFile(MODELS) as fh:
        hmms = list(fh)
    with pyhmmer.easel.SequenceFile(faa, digital=True) as fh:
        seqs = fh.read_block()
    options = {"bit_cutoffs": "gathering"} if cut else {}
    rows = set()
    for hits in pyhmmer.hmmsearch(hmms, seqs, cpus=1, Z=Z, **options):
        for h in hits.reported:
            for d in h.domains.reported:
                a = d.alignment
                name = h.name.decode() if isinstance(h.name, bytes) else h.name
                model = a.hmm_name.decode() if isinstance(a.hmm_name, bytes) else a.hmm_name
                rows.add((name, model, a.target_from, a.target_to, d.env_from, d.env_to, a.hmm_from, a.hmm_to,
                          "%.1f" % d.score, "%.2g" % d.i_evalue))
    return rows


def _check_gff3(out: Path, sample: str, genome: Path) -> int:
    """gt gff3validator passes; every CDS is a gene of the table; each protein_match's bases translate to its
    protein's residues (protein_start..protein_end) and lie in its CDS. Returns the domains checked."""
    gff3 = out / sample / f"{sample}.gff3"
    gt = subprocess.run(["gt", "gff3validator", str(gff3)], capture_output=True, text=True)
    assert gt.returncode == 0 and "input is valid GFF3" in gt.stdout, gt.stderr
    contigs = dict(read_contigs(genome))
    proteins = {r.id: str(r.seq) for r in SeqIO.parse(out / sample / f"{sample}.faa", "fasta")}
    cds, checked = {}, 0
    for line in gff3.read_text().splitlines():
        if line.startswith("#"):
            continue
        seqid, _, kind, start, end, _, strand, phase, column9 = line.split("\t")
        attrs = dict(kv.split("=", 1) for kv in column9.split(";"))
        start, end = int(start), int(end)
        if kind == "CDS":
            assert phase == "0" and attrs["partial"] in ("00", "01", "10", "11")
            cds[attrs["ID"]] = (seqid, start, end, strand)
            continue
        assert kind == "protein_match" and attrs["Parent"] in cds
        parent = cds[attrs["Parent"]]
        a, b = int(attrs["protein_start"]), int(attrs["protein_end"])
        assert (start, end) == genome_span(parent[1], parent[2], strand, a, b) and strand == parent[3]
        assert parent[1] <= start <= end <= parent[2] and (end - start + 1) == 3 * (b - a + 1)
        bases = Seq(contigs[seqid][start - 1:end])
        table = int(next(line.split("transl_table=")[1].split(";")[0] for line in gff3.read_text().splitlines()
                         if f"ID={attrs['Parent']};" in line))
        protein = str((bases if strand == "+" else bases.reverse_complement()).translate(table=table))
        expected = proteins[attrs["Parent"]][a - 1:b]
        assert protein[1:] == expected[1:] and (a > 1 or expected[0] == "M" or protein[0] == expected[0])
        checked += 1
    return checked


def test_split_genomes_equals_pyhmmer_per_genome_and_pool(tmp_path):
    """The pooled proteins of three genomes searched once (48 embedded Pfam models, --cut_ga), then split: each
    genome's pfam_scan rows are pyhmmer.hmmsearch's on that genome's proteins alone (Z its proteins), alignment
    and envelope coordinates, bits and i-Evalues as printed; its GFF3 is valid and its domains translate to the
    proteins' residues. With E-value thresholds (hmmsearch's), Z per pool: pyhmmer on the pool, per genome;
    Z per genome is refused there (one line)."""
    folder = _genomes(tmp_path / "g")
    out = tmp_path / "out"
    assert _call(folder, out).returncode == 0
    genes = read_gene_table(out / "genes.tsv")
    Z = len(genes)
    for cut in (True, False):
        hits = tmp_path / f"hits{cut}.parquet"
        threshold = ["--cut_ga"] if cut else []
        run = _hmmcascade("search", MODELS, out / "proteins.faa", "-o", "/dev/null", "--hits", hits, "--quiet",
                          *threshold)
        assert run.returncode == 0, run.stderr
        split = ["split-genomes", hits, "--genes", out / "genes.tsv", "--meta", out / "genomes.json", "--outdir", out,
                 "--summary", out / "summary.tsv", "-Z", Z, *threshold]
        run = _hmmcascade(*split, "--z-per", "genome" if cut else "pool")
        assert run.returncode == 0, run.stderr
        domains = 0
        for sample in ("KK037166", "NCTC11397_100kb", "SAMEA104415756"):
            faa = out / sample / f"{sample}.faa"
            n = sum(g["sample"] == sample for g in genes)
            if cut:
                expected = _pyhmmer_domains(faa, n, cut)
            else:
                pooled = _pyhmmer_domains(out / "proteins.faa", Z, cut)
                expected = {(r[0].partition("|")[2], *r[1:]) for r in pooled if r[0].startswith(sample + "|")}
            ours = _our_domains(out / sample / f"{sample}.pfam_scan.tsv")
            assert ours == expected, sample
            assert _check_gff3(out, sample, next(folder.glob(sample + ".f*"))) == len(ours)
            domains += len(ours)
        assert domains >= (12 if cut else 40)
        summary = [line.split("\t") for line in (out / "summary.tsv").read_text().splitlines()]
        assert summary[0][:7] == ["sample", "mode", "contigs", "bases", "genes", "genes_with_domains", "domains"]
        assert [r[:5] for r in summary[1:]] == [["KK037166", "meta", "1", "20000", "19"],
                                               ["NCTC11397_100kb", "single", "1", "100000", "103"],
                                               ["SAMEA104415756", "single", "2", "391597", "287"]]
        assert sum(int(r[6]) for r in summary[1:]) == domains
    run = _hmmcascade(*split, "--z-per", "genome")
    assert run.returncode == 1 and "Z per genome needs model cutoffs" in run.stderr and run.stderr.count("\n") == 1
    # each genome's proteins from the pooled FASTA (the workflow's way): the bytes genes --outdir wrote
    out2 = tmp_path / "out2"
    run = _hmmcascade("split-genomes", hits, "--proteins", out / "proteins.faa", "--genes", out / "genes.tsv", "--meta",
                      out / "genomes.json", "--outdir", out2, "--summary", out2 / "summary.tsv", "-Z", Z, "--z-per", "pool")
    assert run.returncode == 0, run.stderr
    for sample in ("KK037166", "NCTC11397_100kb", "SAMEA104415756"):
        assert (out2 / sample / f"{sample}.faa").read_bytes() == (out / sample / f"{sample}.faa").read_bytes(), sample
    run = _hmmcascade("split-genomes", hits, "--proteins", out / "genes.tsv", "--genes", out / "genes.tsv", "--meta",
                      out / "genomes.json", "--outdir", out2, "--summary", out2 / "summary.tsv", "-Z", Z, "--z-per", "pool")
    assert run.returncode == 1 and "not the pooled proteins" in run.stderr and run.stderr.count("\n") == 1


def _tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_split_genomes_in_processes_equals_one_process(tmp_path):
    """split-genomes --cpu 2 on the hits cut into a folder of three hit files of one-hit row groups (many scan
    tasks, each genome's rows in several spool files) writes the same bytes as --cpu 1 on the search's one hit
    file: every genome's pfam_scan table and GFF3 and the summary; with Z per genome or per pool, with Pfam-A.hmm.dat
    families (types, GA cutoffs, clan overlaps resolved, a nested pair) and --significant-only."""
    import pyarrow.parquet as pq

    folder = _genomes(tmp_path / "g")
    genes = tmp_path / "genes"
    assert _call(folder, genes).returncode == 0
    Z = len(read_gene_table(genes / "genes.tsv"))
    with pyhmmer.plan7.HMMFile(MODELS) as fh:
        names = [(h.name, h.accession) for h in fh]
    dat = tmp_path / "Pfam-A.hmm.dat"
    dat.write_text("".join(
        f"# STOCKHOLM 1.0\n#=GF ID   {name}\n#=GF AC   {acc}\n#=GF GA   {18 + i % 5}.00; {16 + i % 7}.00;\n"
        f"#=GF TP   {('Domain', 'Family', 'Repeat')[i % 3]}\n#=GF ML   100\n"
        + (f"#=GF NE   {names[i + 1][0]}\n" if i % 6 == 0 else "") + (f"#=GF CL   CL{i % 4:04d}\n" if i % 5 else "")
        + "//\n" for i, (name, acc) in enumerate(names)))
    runs = 0
    for cut in (True, False):
        hits = tmp_path / f"hits{cut}.parquet"
        run = _hmmcascade("search", MODELS, genes / "proteins.faa", "-o", "/dev/null", "--hits", hits, "--quiet",
                          *(["--cut_ga"] if cut else []))
        assert run.returncode == 0, run.stderr
        table = pq.read_table(hits)
        parts = tmp_path / f"parts{cut}.parquet"
        parts.mkdir()
        third = -(-table.num_rows // 3)
        for k in range(3):
            pq.write_table(table.slice(k * third, third), parts / f"part{k:03d}.parquet", row_group_size=1)
        assert sum(pq.ParquetFile(p).metadata.num_row_groups for p in parts.iterdir()) > SCAN_ROW_GROUPS
        for options in ([["--z-per", "genome", "--cut_ga"], ["--z-per", "genome", "--cut_ga", "--pfam-dat", dat]]
                        if cut else [["--z-per", "pool"], ["--z-per", "pool", "--pfam-dat", dat, "--significant-only"]]):
            trees = []
            for cpu, source in ((1, hits), (2, parts)):
                out = tmp_path / f"out{runs}_{cpu}"
                run = _hmmcascade("split-genomes", source, "--genes", genes / "genes.tsv", "--meta",
                                  genes / "genomes.json", "--outdir", out, "--summary", out / "summary.tsv", "-Z", Z,
                                  "--cpu", cpu, *options)
                assert run.returncode == 0, run.stderr
                assert f"with {cpu} processes" in run.stderr.splitlines()[-1]
                trees.append(_tree(out))
            assert len(trees[0]) == 7 and trees[0] == trees[1], options
            domains = [line for p, text in trees[0].items() if p.endswith(".pfam_scan.tsv")
                       for line in text.decode().splitlines() if line and not line.startswith("#")]
            assert len(domains) >= 5, options
            runs += 1


def test_split_genomes_reads_the_search_jobs_hits_as_the_merged(tmp_path):
    """The workflow's way with model cutoffs: split-genomes on the search jobs' own hit files (two batches of the
    pooled proteins, each searched with the pool's Z and --cut_ga, the second as two processes: --model-parts)
    writes the same bytes as on their merge's hits
    (merge: the pool's thresholds, domZ over both batches), with 1 or 2 processes; its --protein-summary has the
    lines of the merge's --protein-summary (the pooled names, a genome's proteins together)."""
    folder = _genomes(tmp_path / "g")
    genes = tmp_path / "genes"
    assert _call(folder, genes).returncode == 0
    records = (genes / "proteins.faa").read_text().split(">")[1:]
    Z = len(records)
    batches = []
    for k, part in enumerate((records[: Z // 2], records[Z // 2:])):
        (tmp_path / f"b{k}.faa").write_text("".join(">" + r for r in part))
        batches.append(tmp_path / f"b{k}.hits.parquet")
        run = _hmmcascade("search", MODELS, tmp_path / f"b{k}.faa", "-o", "/dev/null", "--hits", batches[-1],
                          "--hits-parts", 2, "--quiet", "-Z", Z, "--cut_ga", "--model-parts", 1 + k)
        assert run.returncode == 0, run.stderr
    merged = tmp_path / "merged.parquet"
    run = _hmmcascade("merge", *batches, "--models", MODELS, "-Z", Z, "--cut_ga", "--merged-hits", merged,
                      "--significant-only", "--protein-summary", tmp_path / "merged.proteins.tsv")
    assert run.returncode == 0, run.stderr

    def c_evalues(paths):  # (the domains' c-Evalues: domZ, a model's reported targets, is each job's alone)
        import pyarrow.parquet as pq

        tables = [pq.read_table(p) for p in paths]
        return sorted((t, e) for table in tables for t, doms in zip(table.column("target_name").to_pylist(),
                                                                     table.column("domains").to_pylist())
                      for e in (d["c_evalue"] for d in doms))
    assert c_evalues(batches) != c_evalues([merged])  # (the merge's change, not read by the split)
    trees = []
    for name, hits, cpu in (("merged", [merged], 1), ("jobs", batches, 1), ("jobs2", batches[::-1], 2)):
        out = tmp_path / name
        run = _hmmcascade("split-genomes", *hits, "--genes", genes / "genes.tsv", "--meta", genes / "genomes.json",
                          "--outdir", out, "--summary", out / "summary.tsv", "--protein-summary", out / "proteins.tsv",
                          "-Z", Z, "--cut_ga", "--z-per", "genome", "--significant-only", "--cpu", cpu)
        assert run.returncode == 0, run.stderr
        trees.append(_tree(out))
    assert len(trees[0]) == 8 and trees[0] == trees[1] == trees[2]

    def lines(text):
        return sorted(line for line in text.splitlines() if not line.startswith("#"))
    pooled = (tmp_path / "merged.proteins.tsv").read_text()
    assert lines(trees[0]["proteins.tsv"].decode()) == lines(pooled) and len(lines(pooled)) >= 10
    assert trees[0]["proteins.tsv"].decode().startswith("# hmmcascade ")


def test_workflow_over_a_folder_of_genomes(tmp_path):
    """config genomes: a folder of two genomes (one of two contigs) on the embedded models: the pooled
    proteins are the search's targets (pfam preset: --cut_ga; the comparison with pyhmmer passes), each genome
    gets its proteins, GFF3 and pfam_scan table, the summary is in the report, and the gene calls' log gives
    genomes per hour. The merge makes HMMER's tables but no pooled per-protein table: the report's plots count
    split_genomes' protein summary of all genomes. A bad sample name stops the run at once, naming the file."""
    folder = tmp_path / "genomes"
    folder.mkdir()
    shutil.copy(PYRODIGAL_DATA / "KK037166.fna.gz", folder / "KK037166.fna.gz")
    with open(folder / "SAMEA104415756.fa", "wb") as fh:
        for contig in ("OFHT01000022", "OFHT01000024"):
            fh.write((PYHMMER_SEQS / f"1390.SAMEA104415756.{contig}.fna").read_bytes())
    config = _config(tmp_path, genomes=str(folder))
    run = _snakemake(tmp_path, config)
    assert run.returncode == 0, run.stderr[-3000:]
    out = tmp_path / "results/genomes"
    for sample in ("KK037166", "SAMEA104415756"):
        assert _check_gff3(out, sample, next(folder.glob(sample + ".f*"))) == len(
            _our_domains(out / sample / f"{sample}.pfam_scan.tsv"))
    assert "--cut_ga" in (out / "SAMEA104415756/SAMEA104415756.pfam_scan.tsv").read_text()
    assert "Z = 287" in (out / "SAMEA104415756/SAMEA104415756.gff3").read_text()
    summary = (out / "summary.tsv").read_text().splitlines()
    assert len(summary) == 3 and summary[2].startswith("SAMEA104415756\tsingle\t2\t391597\t287\t")
    assert "genomes per hour" in (tmp_path / "logs/call_genes/genes.log").read_text()
    assert (tmp_path / "logs/benchmarks/call_genes.tsv").exists()
    assert "identical sets: True" in (tmp_path / "results/accuracy.txt").read_text()
    for table in ("pfam_scan.tsv", "gff3", "interproscan.tsv", "proteins.tsv"):
        assert not (tmp_path / f"results/hmmcascade.{table}").exists(), table
    assert (tmp_path / "results/hmmcascade.tblout").exists() and (tmp_path / "results/hits.parquet").exists()
    proteins = (out / "proteins.tsv").read_text().splitlines()
    listed = sum(int(line.split("\t")[5]) for line in summary[1:])
    assert proteins[1].startswith("protein\t") and sum(int(p.split("\t")[2]) for p in proteins[2:]) == listed
    assert all(p.startswith(("KK037166|", "SAMEA104415756|")) for p in proteins[2:]) and listed > 0
    assert (tmp_path / "results/report/domains_per_protein.svg").exists()
    (folder / "bad|name.fna").write_bytes(b">c\nACGT\n")
    run = _snakemake(tmp_path, config, "--dry-run")
    assert run.returncode != 0 and f"{folder / 'bad|name.fna'}: sample name 'bad|name'" in run.stderr + run.stdout


def _command(jobs: str, rule: str) -> str:
    """The shell command of ``rule``'s job (one job) in a dry run's output."""
    block = next(b for b in jobs.split("rule ")[1:] if b.startswith(rule + ":"))
    return block.split("Shell command: ", 1)[1].split("\n", 1)[0]


def test_genome_runs_split_the_search_jobs_hits_and_make_no_pooled_protein_tables(tmp_path):
    """Dry runs of a genome run: merge_shard makes no per-protein runs, merge_hits only HMMER's tables and the
    merged hits; split_genomes writes the report's protein summary and reads the search jobs' hits (beside the
    merges) with model cutoffs (pfam preset), a fixed domZ, or one batch of the targets; with E-value thresholds
    over batches of the targets, the merged hits. Without genomes the merge makes the per-protein tables."""
    folder = _genomes(tmp_path / "g")
    one = "results/search/batch000.hits.parquet"
    jobs = _dry_run(tmp_path, _config(tmp_path, genomes=str(folder)))
    split = _command(jobs, "split_genomes")
    assert f"split-genomes {one} --proteins" in split and "--protein-summary results/genomes/proteins.tsv" in split
    assert "--no-protein-runs" in _command(jobs, "merge_shard") and "--seqs" not in _command(jobs, "merge_shard")
    merge = _command(jobs, "merge_hits")
    assert "--tblout" in merge and "--merged-hits" in merge
    assert not any(option in merge for option in ("--pfamscan", "--gff3", "--ipr-tsv", "--protein-summary", "--seqs"))
    assert "hmmcascade.proteins.tsv" not in jobs and "--proteins results/genomes/proteins.tsv" in jobs
    shards = {"models": 2, "sequences": 2}
    jobs_of = [f"results/search/batch{b}.m{m}.hits.parquet" for b in ("000", "001") for m in (1, 2)]
    for overrides, hits in (({"shards": shards}, jobs_of),
                            ({"shards": shards, "preset": "hmmsearch"}, ["results/hits.parquet"]),
                            ({"shards": shards, "preset": "hmmsearch", "thresholds": {"domZ": 1000}}, jobs_of),
                            ({"shards": {"models": 2, "sequences": 1}, "preset": "hmmsearch"},
                             [f"results/search/batch000.m{m}.hits.parquet" for m in (1, 2)])):
        split = _command(_dry_run(tmp_path, _config(tmp_path, genomes=str(folder), **overrides)), "split_genomes")
        assert f"split-genomes {' '.join(hits)} --proteins" in split, (overrides, split)
    merge = _command(_dry_run(tmp_path, _config(tmp_path)), "merge_hits")
    assert all(option in merge for option in ("--pfamscan", "--gff3", "--ipr-tsv", "--protein-summary", "--seqs"))


def test_a_downloaded_genome_run_fetches_pfam_alone(tmp_path):
    """databases: download with genomes: Pfam is fetched, Swiss-Prot is not (the genomes' proteins are the
    targets); without genomes both are (dry runs)."""
    folder = _genomes(tmp_path / "g")
    jobs = _dry_run(tmp_path, _config(tmp_path, databases="download", genomes=str(folder)))
    assert "rule fetch_pfam:" in jobs and "rule call_genes:" in jobs and "fetch_uniprot" not in jobs
    jobs = _dry_run(tmp_path, _config(tmp_path, databases="download"))
    assert "rule fetch_pfam:" in jobs and "rule fetch_uniprot:" in jobs and "call_genes" not in jobs


def test_a_bad_genome_leaves_no_pool_thread_behind(tmp_path):
    """On a bad genome the gene-calling pool is shut down and waited for before the error goes up: its
    manager thread left running (a shutdown without waiting) raced the interpreter's exit, which printed
    "OSError: [Errno 9] Bad file descriptor" after the error's one line (CI, 2026-11-27)."""
    import io as _io
    import threading
    from concurrent.futures.process import _ExecutorManagerThread

    from hmmcascade.genomes import GeneSettings, call_all_genes

    folder = tmp_path / "g"
    folder.mkdir()
    shutil.copy(PYRODIGAL_DATA / "KK037166.fna.gz", folder / "KK037166.fna.gz")
    (folder / "proteins.fasta").write_text(">p1\nMKVLEEPQ\n")
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(GenomeInputError, match="proteins.fasta: line 2"):
        call_all_genes(genome_inputs(folder), GeneSettings(), pooled=out / "p.faa", gene_table=out / "g.tsv",
                       meta=out / "m.json", workers=2, log=_io.StringIO())
    assert not [t for t in threading.enumerate() if isinstance(t, _ExecutorManagerThread)]
    assert not (out / "p.faa").exists()
