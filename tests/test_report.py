"""The workflow's report: a plain small run, then `snakemake --report report.html` in the same folder (no --cores);
the report's results hold the plots (SVG, with their captions) and the tables people open."""

from __future__ import annotations

import base64
import json
import re
import subprocess
import sys

import pytest

from test_workflow import REPO, _config, _small_files, _snakemake

#: plot -> (a phrase of its caption, a phrase of its figure)
PLOTS = {
    "score_agreement.svg": ("accuracy_rows.tsv", "Score agreement with pyhmmer.hmmsearch"),
    "stages.svg": ("pass rates", "Per-stage pass rates"),
    "families.svg": ("most frequent Pfam families", "Most frequent families"),
    "domains_per_protein.svg": ("domains in the pfam_scan table", "Domains per protein"),
    "provenance.svg": ("Pfam and UniProt releases", "Run provenance"),
}
TABLES = ("hmmcascade.tblout", "hmmcascade.domtblout", "hmmcascade.pfam_scan.tsv", "hmmcascade.gff3",
          "hmmcascade.proteins.tsv")


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """(folder, the report's results by path): one small run (8 models x 300 proteins) and its report."""
    tmp_path = tmp_path_factory.mktemp("report")
    hmm_path, seq_path = _small_files(tmp_path, 8, 300)
    config = _config(tmp_path, databases="local", hmms=str(hmm_path), sequences=str(seq_path))
    run = _snakemake(tmp_path, config)
    assert run.returncode == 0, run.stderr[-3000:]
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--directory", str(tmp_path),
           "--configfile", str(config), "--report", "report.html"]  # (as a user types it: no --cores)
    made = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert made.returncode == 0, made.stderr[-3000:]
    html = (tmp_path / "report.html").read_text()
    return tmp_path, html, _results(html)


def _results(html: str) -> dict:
    """The report's results (Snakemake's HTML report keeps them as JSON: path -> name, caption, data_uri, ...)."""
    results = {}
    decoder = json.JSONDecoder()
    for m in re.finditer(r'"(results/[^"]+)": (\{"name")', html):
        results[m.group(1)], _ = decoder.raw_decode(html, m.start(2))
    return results


def test_the_report_shows_each_plot_with_its_caption(report):
    tmp_path, html, results = report
    for name, (caption, title) in PLOTS.items():
        entry = results.get(f"results/report/{name}")
        assert entry is not None, (name, sorted(results))
        assert entry["mime_type"] == "image/svg+xml" and caption in " ".join(entry["caption"].split()), entry["caption"]
        header, _, data = entry["data_uri"].partition(",")
        assert header.startswith("data:image/svg+xml;") and header.endswith(";base64"), header
        svg = base64.b64decode(data).decode()
        assert svg.lstrip().startswith("<?xml") and "<svg" in svg and title in svg, name
        assert svg == (tmp_path / "results/report" / name).read_text()
    assert "Plots" in html and "Tables" in html  # (the categories of the report's menu)


def test_the_plots_show_this_run(report):
    tmp_path, html, results = report
    svg = {name: base64.b64decode(results[f"results/report/{name}"]["data_uri"].partition(",")[2]).decode()
           for name in PLOTS}
    stats = json.loads((tmp_path / "results/stats.json").read_text())["stats"]
    assert f"{stats['models']:,} models x {stats['targets']:,} targets" in svg["stages.svg"]
    rows = (tmp_path / "results/accuracy_rows.tsv").read_text().splitlines()[1:]
    compared = sum(line.startswith("sequence\t") for line in rows)
    assert compared > 0 and f"sequence scores: {compared} compared" in svg["score_agreement.svg"]
    device = json.loads(next((tmp_path / "results/search").glob("*.stats.json")).read_text())["device"]
    assert device in svg["provenance.svg"] and "not downloaded (databases: local)" in svg["provenance.svg"]
    domains = [line for line in (tmp_path / "results/hmmcascade.pfam_scan.tsv").read_text().splitlines()
               if line and not line.startswith("#")]
    assert f"{len(domains):,} domains" in svg["domains_per_protein.svg"]


def test_the_tables_people_open_are_in_the_report(report):
    tmp_path, html, results = report
    for name in TABLES:
        entry = results.get(f"results/{name}")
        assert entry is not None and entry["caption"], (name, sorted(results))
        data = base64.b64decode(entry["data_uri"].partition(",")[2])
        assert data == (tmp_path / "results" / name).read_bytes(), name
    assert "results/hmmcascade.alignments.txt" not in results  # (often the largest file: not embedded)


def test_the_protein_summary_counts_families_clans_and_domains_per_protein(tmp_path):
    """read_proteins counts lines by architecture first: the counts are each line's, added up (families by
    name and accession, a family without an accession by name; clans per protein; proteins per domain count),
    and a line that is not a summary line is one error naming the file and line."""
    sys.path.insert(0, str(REPO / "workflow" / "scripts"))
    try:
        import report_plots
    finally:
        sys.path.pop(0)
    lines = [("p1", 2, "A B", "PF00001.2 PF00002.1", "CL0001"), ("p2", 1, "A", "PF00001.2", "-"),
             ("p3", 2, "A B", "PF00001.2 PF00002.1", "CL0001"), ("p4", 3, "C A C", "- PF00001.2 -", "CL0001 CL0002"),
             ("p5", 2, "A B", "PF00001.2 PF00002.1", "CL0001")]
    path = tmp_path / "proteins.tsv"
    path.write_text("# a comment\nprotein\tlength\tdomains\tarchitecture\taccessions\tclans\n"
                    + "".join(f"{p}\t100\t{n}\t{a}\t{acc}\t{c}\n" for p, n, a, acc, c in lines))
    counts = report_plots.read_proteins(str(path))
    assert counts["families"] == {"A (PF00001)": 5, "B (PF00002)": 3, "C": 2}
    assert counts["clans"] == {"CL0001": 4, "CL0002": 1}
    assert counts["per_protein"] == {2: 3, 1: 1, 3: 1}
    path.write_text(path.read_text() + "p6\t100\tx\tA\tPF00001.2\t-\n")
    with pytest.raises(report_plots.ReportError, match=r"proteins.tsv: line 8: not a protein summary line"):
        report_plots.read_proteins(str(path))
