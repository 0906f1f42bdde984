"""hmmcascade.annotate: Pfam-A.hmm.dat, pfam_scan.pl's table with its clan-overlap rule, and GFF3.

The expected behaviour is pfam_scan's (Bio::Pfam::Scan::PfamScan 1.6): ``_read_pfam_data``,
``HMMResults::remove_overlaps_by_clan`` and ``HMMResultsIO::write_ascii_out``.
"""

from __future__ import annotations

import gzip
import shutil
import subprocess

import pytest

from hmmcascade import __version__
from hmmcascade.annotate import AnnotationStream, pfam_domains, thresholds_note, write_gff3, write_pfam_scan
from hmmcascade.reporting import Thresholds
from hmmcascade.io import InputError
from hmmcascade.pfam_dat import PfamFamily, read_pfam_dat
from hmmcascade.results import Alignment, Domain, Hit

#: Four records in Pfam-A.hmm.dat's format (Pfam 37 families: three of the NAD(P)-binding
#: Rossmann clan CL0063 and one of CL0325).  The NE line, declaring Shikimate_DH nested in
#: AlaDh_PNT_C, is made up for the test; pfam_scan treats NE in either record as mutual.
PFAM_DAT = """\
# STOCKHOLM 1.0
#=GF ID   2-Hacid_dh
#=GF AC   PF00389.34
#=GF DE   D-isomer specific 2-hydroxyacid dehydrogenase, catalytic domain
#=GF GA   27.00; 27.00;
#=GF TP   Domain
#=GF ML   134
#=GF CL   CL0325
//
# STOCKHOLM 1.0
#=GF ID   2-Hacid_dh_C
#=GF AC   PF02826.23
#=GF DE   D-isomer specific 2-hydroxyacid dehydrogenase, NAD binding domain
#=GF GA   25.10; 25.10;
#=GF TP   Domain
#=GF ML   178
#=GF CL   CL0063
//
# STOCKHOLM 1.0
#=GF ID   AlaDh_PNT_C
#=GF AC   PF01262.25
#=GF DE   Alanine dehydrogenase/PNT, C-terminal domain
#=GF GA   22.40; 22.40;
#=GF TP   Domain
#=GF ML   215
#=GF NE   Shikimate_DH
#=GF CL   CL0063
//
# STOCKHOLM 1.0
#=GF ID   Shikimate_DH
#=GF AC   PF01488.24
#=GF DE   Shikimate / quinate 5-dehydrogenase
#=GF GA   26.00; 26.00;
#=GF TP   Family
#=GF ML   136
#=GF CL   CL0063
//
"""

MODELS = {"2-Hacid_dh": (0, "PF00389.34", 134), "2-Hacid_dh_C": (1, "PF02826.23", 178),
          "AlaDh_PNT_C": (2, "PF01262.25", 215), "Shikimate_DH": (3, "PF01488.24", 136),
          "DUF1234": (4, "", 90)}


@pytest.fixture
def families(tmp_path):
    path = tmp_path / "Pfam-A.hmm.dat"
    path.write_text(PFAM_DAT)
    return read_pfam_dat(path)


def test_read_pfam_dat(tmp_path, families):
    assert list(families) == ["2-Hacid_dh", "2-Hacid_dh_C", "AlaDh_PNT_C", "Shikimate_DH"]
    assert families["2-Hacid_dh_C"] == PfamFamily(
        id="2-Hacid_dh_C", accession="PF02826.23",
        description="D-isomer specific 2-hydroxyacid dehydrogenase, NAD binding domain", type="Domain",
        model_length=178, clan="CL0063", nested=frozenset(), ga_seq_bits=25.1, ga_dom_bits=25.1)
    assert families["AlaDh_PNT_C"].nested == {"Shikimate_DH"} and families["Shikimate_DH"].nested == {"AlaDh_PNT_C"}
    gz = tmp_path / "Pfam-A.hmm.dat.gz"
    gz.write_bytes(gzip.compress(PFAM_DAT.encode()))
    assert read_pfam_dat(gz) == families


@pytest.mark.parametrize("text, message", [
    ("", "Pfam-A.hmm.dat file is empty"),
    ("# STOCKHOLM 1.0\n", "no Pfam family records"),
    (PFAM_DAT[:-3], "truncated: the record of Shikimate_DH has no closing //"),
    (PFAM_DAT.replace("#=GF ML   178", "#=GF ML   long"), "line 16: #=GF ML must be a model length, got 'long'"),
    (PFAM_DAT.replace("#=GF GA   27.00; 27.00;", "#=GF GA   27.00 27.00"), "line 5: #=GF GA must read"),
    (PFAM_DAT.replace("#=GF TP   Family", "TP Family"), "line 34: not a Pfam-A.hmm.dat line: 'TP Family'"),
    ("#=GF AC   PF00001.1\n//\n", "line 1: #=GF AC outside a record"),
    ("# STOCKHOLM 1.0\n#=GF AC   PF00001.1\n//\n", "line 2: #=GF AC outside a record"),
    (PFAM_DAT.replace("//\n# STOCKHOLM 1.0\n#=GF ID   2-Hacid_dh_C", "#=GF ID   2-Hacid_dh_C", 1),
     "line 9: #=GF ID 2-Hacid_dh_C before the previous record's //"),
    (PFAM_DAT + PFAM_DAT.split("//\n")[0] + "//\n", "line 39: family 2-Hacid_dh appears twice"),
])
def test_malformed_dat_is_one_line_error(tmp_path, text, message):
    path = tmp_path / "Pfam-A.hmm.dat"
    path.write_text(text)
    with pytest.raises(InputError) as err:
        read_pfam_dat(path)
    assert str(err.value).startswith(f"{path}: ") and message in str(err.value) and "\n" not in str(err.value)
    assert isinstance(err.value, ValueError)


def test_truncated_gzip_dat(tmp_path):
    path = tmp_path / "Pfam-A.hmm.dat.gz"
    path.write_bytes(gzip.compress(PFAM_DAT.encode())[:-20])
    with pytest.raises(InputError, match="truncated or corrupt gzip file"):
        read_pfam_dat(path)


def test_same_clan_overlap_keeps_the_best_evalue(families):
    hits = [_hit("2-Hacid_dh_C", "seq1", [(101, 279, 1e-53)]),
            _hit("AlaDh_PNT_C", "seq1", [(150, 250, 1e-5), (300, 350, 2e-3)])]
    rows = pfam_domains(hits, families)
    assert [(a.hmm_name, a.ali_from) for a in rows] == [("2-Hacid_dh_C", 101), ("AlaDh_PNT_C", 300)]
    assert [(a.type, a.clan) for a in rows] == [("Domain", "CL0063")] * 2
    # the better E-value wins whichever model comes first
    hits[1].domains[0].i_evalue = 1e-60
    assert [(a.hmm_name, a.ali_from) for a in pfam_domains(hits, families)] == [("AlaDh_PNT_C", 150),
                                                                                ("AlaDh_PNT_C", 300)]
    # one shared residue is an overlap; adjacent alignments are not
    hits[0].domains[0].alignment.ali_to = 149
    assert len(pfam_domains(hits, families)) == 3
    hits[0].domains[0].alignment.ali_to = 150
    assert len(pfam_domains(hits, families)) == 2


def test_evalues_compare_as_printed(families):
    """pfam_scan sorts on hmmsearch's printed E-values: 1.04e-5 and 1.01e-5 both read 1e-05, model order decides."""
    hits = [_hit("2-Hacid_dh_C", "seq1", [(10, 120, 1.04e-5)]), _hit("AlaDh_PNT_C", "seq1", [(50, 200, 1.01e-5)])]
    assert [a.hmm_name for a in pfam_domains(hits, families)] == ["2-Hacid_dh_C"]


def test_nested_families_and_other_clans_are_kept(families):
    hits = [_hit("AlaDh_PNT_C", "seq1", [(10, 200, 1e-30)]), _hit("Shikimate_DH", "seq1", [(60, 150, 1e-10)]),
            _hit("2-Hacid_dh", "seq1", [(20, 140, 1e-20)]), _hit("DUF1234", "seq1", [(15, 90, 1e-3)])]
    rows = pfam_domains(hits, families)
    assert [(a.hmm_name, a.clan) for a in rows] == [("AlaDh_PNT_C", "CL0063"), ("DUF1234", "No_clan"),
                                                    ("2-Hacid_dh", "CL0325"), ("Shikimate_DH", "CL0063")]
    # nesting exempts only the declared pair: 2-Hacid_dh_C overlapping both is dropped
    hits.append(_hit("2-Hacid_dh_C", "seq1", [(100, 180, 1e-8)]))
    assert "2-Hacid_dh_C" not in [a.hmm_name for a in pfam_domains(hits, families)]
    # -clan_overlap keeps everything
    assert len(pfam_domains(hits, families, resolve_clan_overlap=False)) == 5


def test_without_dat_nothing_is_resolved():
    hits = [_hit("2-Hacid_dh_C", "seq1", [(101, 279, 1e-53)]), _hit("AlaDh_PNT_C", "seq1", [(150, 250, 1e-5)])]
    hits[1].included = False
    rows = pfam_domains(hits)
    assert [(a.hmm_name, a.hmm_acc, a.type, a.clan, a.significant) for a in rows] == [
        ("2-Hacid_dh_C", "PF02826.23", "-", "No_clan", True), ("AlaDh_PNT_C", "PF01262.25", "-", "No_clan", False)]


def test_pfam_scan_table(tmp_path, families):
    hits = [_hit("2-Hacid_dh_C", "sp|P0A9T0|SERA_ECOLI", [(101, 279, 1.04e-53, 178.33)], score=179.1, env=(100, 280)),
            _hit("AlaDh_PNT_C", "seq0", [(20, 40, 3.2e-3, 25.06), (60, 80, 0.12, 25.04)], score=30.0),
            _hit("2-Hacid_dh", "seq0", [(5, 30, 4.56e-2, 27.0)], score=26.95, reported=False),
            _hit("DUF1234", "seq0", [(1, 12, 1.0, 3.0)], score=31.0)]
    hits[1].domains[1].reported = False
    write_pfam_scan(tmp_path / "t.txt", hits, families)
    lines = (tmp_path / "t.txt").read_text().splitlines()
    assert lines[2] == "#    resolve clan overlaps: on"
    assert lines[6].startswith("# <seq id> <alignment start> <alignment end> <envelope start>") and lines[7] == ""
    # pfam_scan's printf: "%-*s %6d %6d %6d %6d %-11s %-16s %7s %5d %5d %5d %8s %9s %3d %-8s "
    assert lines[8:] == [
        "seq0                      1     12      1     15 -           DUF1234                -     3    14    90"
        "      3.0         1   1 No_clan  ",
        "seq0                     20     40     15     43 PF01262.25  AlaDh_PNT_C       Domain     3    23   215"
        "     25.1    0.0032   1 CL0063   ",
        "sp|P0A9T0|SERA_ECOLI    101    279    100    280 PF02826.23  2-Hacid_dh_C      Domain     3   181   178"
        "    178.3     1e-53   1 CL0063   ",
    ]
    write_pfam_scan(tmp_path / "sig.txt", hits, families, significant_only=True, name_width=30)
    rows = [line for line in (tmp_path / "sig.txt").read_text().splitlines() if line and not line.startswith("#")]
    assert len(rows) == 3 and rows[1].startswith("seq0" + " " * 27 + "    20")
    # pfam_scan compares the scores hmmsearch prints with GA (2-Hacid_dh_C: 25.10 bits)
    hits[0].domains[0].score = 25.06  # prints 25.1
    assert [a.significant for a in pfam_domains(hits, families)] == [True, True, True]
    hits[0].domains[0].score = 25.04  # prints 25.0
    assert [a.significant for a in pfam_domains(hits, families)] == [True, True, False]
    write_pfam_scan(tmp_path / "sig.txt", hits, families, significant_only=True)
    assert "2-Hacid_dh_C" not in (tmp_path / "sig.txt").read_text()


def test_gff3(tmp_path, families):
    hits = [_hit("2-Hacid_dh_C", "sp|P0A9T0|SERA ECOLI;1", [(101, 279, 1e-53, 178.33)]),
            _hit("DUF1234", "seq%2", [(1, 12, 1.0, 3.0)]), _hit("DUF1234", "a", [(5, 50, 2e-4, 12.0)])]
    hits[1].model_name = "DUF=1,2"
    write_gff3(tmp_path / "t.gff3", hits, families)
    lines = (tmp_path / "t.gff3").read_text().splitlines()
    assert lines == [
        "##gff-version 3",
        "##sequence-region a 1 400",
        "a\thmmcascade\tpolypeptide\t1\t400\t.\t.\t.\tID=protein:a;Name=a",
        "a\thmmcascade\tprotein_match\t5\t50\t12.0\t.\t.\tID=domain:a:1;Parent=protein:a;Name=DUF1234;"
        "Target=DUF1234 3 48;evalue=0.0002;hmm_start=3;hmm_end=48;hmm_length=90;env_start=1;env_end=53;significant=1",
        "##sequence-region seq%252 1 400",
        "seq%252\thmmcascade\tpolypeptide\t1\t400\t.\t.\t.\tID=protein:seq%252;Name=seq%252",
        "seq%252\thmmcascade\tprotein_match\t1\t12\t3.0\t.\t.\tID=domain:seq%252:1;Parent=protein:seq%252;"
        "Name=DUF%3D1%2C2;Target=DUF%3D1%2C2 3 14;evalue=1;hmm_start=3;hmm_end=14;"
        "hmm_length=90;env_start=1;env_end=15;significant=1",
        "##sequence-region sp|P0A9T0|SERA%20ECOLI%3B1 1 400",
        "sp|P0A9T0|SERA%20ECOLI%3B1\thmmcascade\tpolypeptide\t1\t400\t.\t.\t.\t"
        "ID=protein:sp|P0A9T0|SERA ECOLI%3B1;Name=sp|P0A9T0|SERA ECOLI%3B1",
        "sp|P0A9T0|SERA%20ECOLI%3B1\thmmcascade\tprotein_match\t101\t279\t178.3\t.\t.\t"
        "ID=domain:sp|P0A9T0|SERA ECOLI%3B1:1;Parent=protein:sp|P0A9T0|SERA ECOLI%3B1;Name=2-Hacid_dh_C;"
        "Target=2-Hacid_dh_C 3 181;Dbxref=Pfam:PF02826;accession=PF02826.23;evalue=1e-53;hmm_start=3;hmm_end=181;"
        "hmm_length=178;env_start=96;env_end=282;significant=1;type=Domain;clan=CL0063",
    ]
    assert all(len(line.split("\t")) == 9 for line in lines if not line.startswith("##"))


def _gff3_validator(path) -> None:
    """genometools' strict GFF3 check (Debian package genometools)."""
    gt = shutil.which("gt")
    if gt is None:
        pytest.skip("genometools' gt is not installed (apt-get install genometools)")
    run = subprocess.run([gt, "gff3validator", str(path)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and "input is valid GFF3" in run.stdout, run.stderr


def test_gff3_is_valid_with_unique_ids_and_one_parent_per_protein(tmp_path, families):
    """gt gff3validator accepts the file: each protein one polypeptide feature (the domains' Parent), IDs unique
    (names that look like another protein's IDs, several domains of one protein, a name of bytes that are not
    UTF-8), Target on the model."""
    hits = [_hit("2-Hacid_dh_C", "sp|P0A9T0|SERA ECOLI;1", [(101, 279, 1e-53, 178.33)]),
            _hit("AlaDh_PNT_C", "a", [(20, 40, 3.2e-3, 25.06), (60, 80, 0.12, 25.04)]),
            _hit("Shikimate_DH", "a", [(200, 260, 1e-9, 40.0)]), _hit("DUF1234", "a:1", [(5, 50, 2e-4, 12.0)]),
            _hit("DUF1234", "domain:a:1", [(5, 50, 2e-4, 12.0)]), _hit("DUF1234", "x=y,%z", [(2, 9, 1.0, 3.0)]),
            _hit("DUF1234", b"b\xe9\xff".decode("utf-8", "surrogateescape"), [(2, 9, 1.0, 3.0)])]
    note = thresholds_note(Thresholds(cut="ga"), 2000)
    stream = AnnotationStream("gff3", families, note=note, significant_only=False)
    path = tmp_path / "t.gff3"
    with open(path, "w") as fh:
        stream.start(fh)
        stream.add(pfam_domains(hits, families))
        stream.close()
    _gff3_validator(path)
    lines = path.read_text().splitlines()
    assert lines[:2] == ["##gff-version 3", "# hmmcascade %s: all reported domains; thresholds: --cut_ga (each model's "
                         "gathering cutoffs); Z = 2000" % __version__]
    rows = [line.split("\t") for line in lines if not line.startswith("#")]
    attrs = [dict(kv.split("=", 1) for kv in r[8].split(";")) for r in rows]
    ids = [a["ID"] for a in attrs]
    assert len(ids) == len(set(ids)) == 6 + 8 and "protein:b%E9%FF" in ids  # (a name's bytes, not UTF-8: escaped)
    proteins = {r[0]: a["ID"] for r, a in zip(rows, attrs) if r[2] == "polypeptide"}
    assert [r[3:5] for r in rows if r[2] == "polypeptide"] == [["1", "400"]] * 6
    for r, a in zip(rows, attrs):
        if r[2] == "protein_match":
            assert a["Parent"] == proteins[r[0]] and a["Target"].split(" ")[0] == a["Name"]
            assert a["Target"].split(" ")[1:] == [a["hmm_start"], a["hmm_end"]]
    assert [a["ID"] for r, a in zip(rows, attrs) if r[0] == "a" and r[2] == "protein_match"] == \
        ["domain:a:1", "domain:a:2", "domain:a:3"]


def test_tables_name_their_thresholds(tmp_path, families):
    """pfam_scan's table and the protein summary say which thresholds and Z made them; significant_only shows."""
    hits = [_hit("AlaDh_PNT_C", "a", [(20, 40, 3.2e-3, 25.06), (60, 80, 0.12, 5.0)], score=30.0)]
    assert thresholds_note(Thresholds(), 300) == "-E 10 --domE 10 --incE 0.01 --incdomE 0.01; Z = 300"
    assert thresholds_note(Thresholds(T=25, domT=20, domZ=5), 1e6) == \
        "-T 25 --domT 20 --incE 0.01 --incdomE 0.01; domZ = 5; Z = 1e+06"
    out = {}
    for kind in ("pfamscan", "protein_summary"):
        stream = AnnotationStream(kind, families, note="-E 10; Z = 3", significant_only=True)
        with open(tmp_path / kind, "w") as fh:
            stream.start(fh)
            stream.add(pfam_domains(hits, families))
            stream.close()
        out[kind] = (tmp_path / kind).read_text().splitlines()
    assert "#               thresholds: -E 10; Z = 3" in out["pfamscan"]
    assert "#                  domains: significant only" in out["pfamscan"]
    assert len([line for line in out["pfamscan"] if line and not line.startswith("#")]) == 1
    assert out["protein_summary"] == [
        "# hmmcascade %s: significant domains; thresholds: -E 10; Z = 3" % __version__,
        "protein\tlength\tdomains\tarchitecture\taccessions\tclans", "a\t400\t1\tAlaDh_PNT_C\tPF01262.25\tCL0063"]


def test_bad_hits_are_one_line_errors_and_leave_no_file(tmp_path):
    out = tmp_path / "t.gff3"
    with pytest.raises(TypeError, match=r"^hits\[0\]: expected a hmmcascade.results.Hit, got str$"):
        write_gff3(out, ["2-Hacid_dh_C"])
    hit = _hit("DUF1234", "s", [(0, 12, 1.0, 3.0)])
    with pytest.raises(ValueError, match=r"^hit DUF1234 x s: domain coordinates ali 0-12, env 1-15 are not"):
        write_pfam_scan(out, [hit])
    assert list(tmp_path.iterdir()) == []


def _hit(model: str, target: str, domains, *, score=50.0, env=None, reported=True) -> Hit:
    """A reported hit of ``model`` to ``target`` (400 residues); domains as (ali_from, ali_to, i-Evalue[, bits])."""
    index, acc, length = MODELS[model]
    doms = []
    for ali_from, ali_to, evalue, *bits in domains:
        n = ali_to - ali_from + 1
        env_from, env_to = env or (max(1, ali_from - 5), ali_to + 3)
        ali = Alignment(3, 2 + n, ali_from, ali_to, "x" * n, " " * n, "A" * n, "*" * n, M=length, L=400)
        doms.append(Domain(env_from=env_from, env_to=env_to, score=bits[0] if bits else 40.0, bias=0.0, lnP=0.0,
                           c_evalue=evalue, i_evalue=evalue, acc=0.9, alignment=ali, reported=True, included=True))
    return Hit(model=index, target=hash(target) % 1000, model_name=model, model_acc=acc, model_length=length,
               target_name=target, target_acc="", target_desc="", target_length=400, score=score, pre_score=score,
               bias=0.0, lnP=0.0, evalue=0.0, reported=reported, included=reported, domains=doms)
