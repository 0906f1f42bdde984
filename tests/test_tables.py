"""Tables people load: InterProScan's TSV (its documented columns, analysis Pfam, the sequence's MD5)
and a per-protein summary, read back with real readers and checked against pfam_scan's table."""

from __future__ import annotations

import csv
import hashlib
import re
import subprocess
import sys
from pathlib import Path

import pytest
from Bio import SeqIO

from hmmcascade.annotate import IPR_COLUMNS

REPO = Path(__file__).resolve().parents[1]
HMMS = REPO / "resources" / "pfam35_default.hmm.gz"
SEQS = REPO / "resources" / "proteins_default.faa.gz"


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    d = tmp_path_factory.mktemp("tables")
    run = subprocess.run([sys.executable, "-m", "hmmcascade", "search", str(HMMS), str(SEQS), "--quiet",
                          "--ipr-tsv", str(d / "ipr.tsv"), "--protein-summary", str(d / "proteins.tsv"),
                          "--pfamscan", str(d / "pfam_scan.txt")], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    scan = [line.split() for line in (d / "pfam_scan.txt").read_text().splitlines() if line and not line.startswith("#")]
    return d, scan


def test_interproscan_tsv_has_its_documented_columns_and_the_sequences_md5(tables):
    d, scan = tables
    with open(d / "ipr.tsv", newline="") as fh:
        rows = list(csv.reader(fh, delimiter="\t"))
    assert rows and all(len(r) == len(IPR_COLUMNS) == 13 for r in rows)
    import gzip

    with gzip.open(SEQS, "rt") as fh:
        md5 = {rec.id: hashlib.md5(str(rec.seq).upper().encode()).hexdigest() for rec in SeqIO.parse(fh, "fasta")}
    significant = [(s[0], s[5].split(".")[0], int(s[3]), int(s[4]), s[12]) for s in scan if s[13] == "1"]
    assert [(r[0], r[4], int(r[6]), int(r[7])) for r in rows] == [x[:4] for x in significant]  # envelopes
    for r in rows:
        assert r[1] == md5[r[0]] and r[3] == "Pfam" and r[9] == "T" and r[11] == r[12] == "-"
        assert re.fullmatch(r"PF\d{5}", r[4]) and r[5] and re.fullmatch(r"\d\d-\d\d-\d{4}", r[10])
        assert re.fullmatch(r"\d\.\dE-?\d+|0\.0", r[8])
    assert all(float(r[8]) == pytest.approx(float(x[4]), rel=0.06) for r, x in zip(rows, significant))


def test_protein_summary_lists_each_proteins_domains_in_order(tables):
    d, scan = tables
    with open(d / "proteins.tsv", newline="") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    per = {}
    for s in scan:
        per.setdefault(s[0], []).append(s)
    assert [r["protein"] for r in rows] == list(per) and len(rows) > 100
    for r in rows:
        doms = per[r["protein"]]
        assert int(r["domains"]) == len(doms) and r["architecture"] == " ".join(s[6] for s in doms)
        assert r["accessions"] == " ".join(s[5] for s in doms) and r["clans"] == "-"


def test_the_tsvs_load_with_pandas(tables):
    """What pipelines downstream do: pandas reads InterProScan's TSV (no header; its 13 documented
    columns) and the protein summary (a '#' line of thresholds, then a header) with their types."""
    import pandas as pd

    d, scan = tables
    ipr = pd.read_csv(d / "ipr.tsv", sep="\t", header=None, names=IPR_COLUMNS, dtype=str, keep_default_na=False)
    assert len(ipr) == sum(s[13] == "1" for s in scan) > 0 and list(ipr.columns) == list(IPR_COLUMNS)
    assert ipr.iloc[:, 6].astype(int).le(ipr.iloc[:, 7].astype(int)).all()  # start <= stop
    assert ipr.iloc[:, 1].str.fullmatch(r"[0-9a-f]{32}").all() and ipr.iloc[:, 8].astype(float).ge(0).all()
    proteins = pd.read_csv(d / "proteins.tsv", sep="\t", comment="#", dtype={"protein": str})
    assert list(proteins.columns) == ["protein", "length", "domains", "architecture", "accessions", "clans"]
    assert proteins["domains"].sum() == len(scan) and proteins["length"].dtype.kind == "i"
    assert (proteins["architecture"].str.split(" ").str.len() == proteins["domains"]).all()
