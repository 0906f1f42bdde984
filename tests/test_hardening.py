"""Bad input and faults, as a careful user would cause them: one line naming the file, exit status 1,
no shell injection from a config, outputs that keep links, FIFOs and devices, no temporary file
followed or left behind, no partial set of outputs (a real full file system), HMMER's option ranges,
and FASTA names that are not UTF-8 written back byte for byte.

Everything runs for real: the CLI and Snakemake as subprocesses on PoCL (or the GPU), a tmpfs of a
few kilobytes for a full disk (as root, as CI runs; a file-size limit would also stop the OpenCL
compiler's own files, so it is no substitute), a FIFO with a
reader, ``/dev/null``, and the loopback mirror of ``test_fetch`` for downloads.
"""

from __future__ import annotations

import gzip
import json
import os
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml

from hmmcascade.io import read_hmms
from test_fetch import site  # noqa: F401 - the loopback Pfam/UniProt mirror fixture

REPO = Path(__file__).resolve().parents[1]
HMMS = REPO / "resources" / "pfam35_default.hmm.gz"
SEQS = REPO / "resources" / "proteins_default.faa.gz"
ENV = {"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/root")}
TABLES = {"--tblout": "o.tbl", "--domtblout": "o.domtbl", "--alignments": "o.ali", "--pfamscan": "o.pfam.tsv",
          "--gff3": "o.gff3", "--hits": "o.hits.json.gz", "--stats": "o.stats.json"}


def _run(*args, cwd=None, timeout=600, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hmmcascade", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, cwd=cwd, env=ENV, **kwargs)


def _one_error_line(run: subprocess.CompletedProcess, *needles: str, rc: int = 1) -> str:
    """The run failed with ``rc`` and ended with one ``hmmcascade: error:`` line holding every needle."""
    assert run.returncode == rc, (run.returncode, run.stderr[-2000:])
    assert "Traceback" not in run.stderr, run.stderr[-3000:]
    errors = [line for line in run.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1, run.stderr[-2000:]
    line = errors[0]
    assert line == run.stderr.strip().splitlines()[-1]
    for needle in needles:
        assert needle in line, (needle, line)
    return line


@pytest.fixture(scope="module")
def seqs400(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("hardening") / "s400.faa"
    records = gzip.open(SEQS, "rt").read().split(">")[1:401]
    path.write_text("".join(">" + r for r in records))
    return path


@pytest.fixture(scope="module")
def reference(tmp_path_factory, seqs400) -> dict[str, bytes]:
    """Every output of one clean search of the embedded models x 400 proteins."""
    folder = tmp_path_factory.mktemp("reference")
    run = _run("search", HMMS, seqs400, "--quiet", *[a for opt, name in TABLES.items()
                                                    for a in (opt, folder / name)])
    assert run.returncode == 0, run.stderr
    return {name: (folder / name).read_bytes() for name in TABLES.values()}


def _table_rows(data: bytes) -> list[bytes]:
    return [line for line in data.splitlines() if not line.startswith(b"#")]


# --- 1. config values never reach a shell as code --------------------------------------------------------


def _snakemake(workdir: Path, config: dict) -> subprocess.CompletedProcess:
    path = workdir / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--directory", str(workdir),
           "--configfile", str(REPO / "config.yaml"), str(path), "--cores", "2", "--quiet"]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=900)


def _small_models(path: Path, n: int = 8) -> Path:
    with open(path, "wb") as fh:
        for hmm in read_hmms(HMMS)[:n]:
            hmm.write(fh)
    return path


def test_injection_in_device_is_refused_and_runs_nothing(tmp_path):
    marker = tmp_path / "INJECTED"
    run = _snakemake(tmp_path, {"device": f"cpu; touch {marker}; echo", "compare": {"enabled": False}})
    assert run.returncode != 0
    assert "device" in run.stderr and "does not match" in run.stderr, run.stderr[-2000:]
    assert not marker.exists()
    assert not (tmp_path / "results").exists()


def test_names_with_shell_syntax_and_a_device_name_with_spaces_run_as_data(tmp_path):
    """Models, sequences and Pfam-A.hmm.dat named with $(...) and ; and spaces; the device named by a
    substring with spaces: the run completes, equals pyhmmer, and no command inside the names ran."""
    from hmmcascade.device import open_device
    from test_annotate import PFAM_DAT

    hmms = _small_models(tmp_path / "my models $(touch INJ1).hmm")
    seqs = tmp_path / "s; touch INJ2 #.faa"
    seqs.write_text("".join(">" + r for r in gzip.open(SEQS, "rt").read().split(">")[1:121]))
    dat = tmp_path / "Pfam-A dat `touch INJ3`.txt"
    dat.write_text(PFAM_DAT)
    platform, _, device_name = open_device(None).name.partition(" / ")
    spec = device_name if " " in device_name else platform  # "pthread-AMD EPYC", "NVIDIA H100 80GB HBM3"
    assert " " in spec
    config = {"databases": "local", "hmms": str(hmms), "sequences": str(seqs), "pfam_dat": str(dat),
              "device": spec, "batches": 2}
    run = _snakemake(tmp_path, config)
    assert run.returncode == 0, run.stderr[-3000:]
    assert not list(tmp_path.rglob("INJ*")) and not list(Path.cwd().glob("INJ*"))
    accuracy = json.loads((tmp_path / "results/accuracy.json").read_text())
    assert accuracy["recall"] == accuracy["precision"] == 1.0 and accuracy["pyhmmer_hits"] > 0
    assert spec in (tmp_path / "logs/search_batch/batch000.log").read_text()


def _write_parquet_without_domains(path):
    """A Parquet file that says it is a hit file but whose hits have only a model column."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({"model": pa.array([0], pa.int64())})
    pq.write_table(table.replace_schema_metadata({"hmmcascade": json.dumps({"format": "hmmcascade-hits/2"})}), path)


def test_failed_merge_leaves_no_older_accuracy_beside_missing_tables(tmp_path):
    hmms = _small_models(tmp_path / "models.hmm", 4)
    seqs = tmp_path / "s.faa"
    seqs.write_text("".join(">" + r for r in gzip.open(SEQS, "rt").read().split(">")[1:61]))
    config = {"databases": "local", "hmms": str(hmms), "sequences": str(seqs), "batches": 1}
    assert _snakemake(tmp_path, config).returncode == 0
    assert (tmp_path / "results/accuracy.json").exists()
    batch = tmp_path / "results/search/batch000.hits.parquet"  # (a folder of the search's parts)
    (batch / "part000.parquet").unlink()
    _write_parquet_without_domains(batch / "part000.parquet")
    (batch / ".snakemake_timestamp").touch()  # (Snakemake dates a folder output by this file: changed now)
    run = _snakemake(tmp_path, config)
    assert run.returncode != 0
    # the shard's merge fails on it, naming the file; the merge of the parts never starts, so the last
    # run's tables and the comparison that described them are left together, and no part of the shard
    assert "not a complete hmmcascade hits file" in (tmp_path / "logs/merge_shard/part.log").read_text()
    assert not list((tmp_path / "results/merge").glob("part*"))
    tables = [(tmp_path / "results" / name).exists() for name in ("hmmcascade.tblout", "accuracy.json", "accuracy.txt")]
    assert tables in ([True] * 3, [False] * 3), tables


# --- 2. links, FIFOs and devices keep their type; - is standard output ------------------------------------


def test_outputs_into_link_fifo_device_and_stdout_keep_their_type(tmp_path, seqs400, reference):
    target = tmp_path / "real.tbl"
    target.write_text("old\n")
    link = tmp_path / "link.tbl"
    link.symlink_to(target)
    fifo = tmp_path / "pipe.domtbl"
    os.mkfifo(fifo)
    received = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()), daemon=True)
    reader.start()
    run = _run("search", HMMS, seqs400, "--quiet", "--tblout", link, "--domtblout", fifo, "--alignments", "/dev/null",
               "--gff3", "-")
    reader.join(timeout=60)
    assert run.returncode == 0, run.stderr
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert _table_rows(target.read_bytes()) == _table_rows(reference["o.tbl"])
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert _table_rows(received[0]) == _table_rows(reference["o.domtbl"])
    assert stat.S_ISCHR(os.lstat("/dev/null").st_mode)
    assert run.stdout.encode() == reference["o.gff3"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.tbl", "pipe.domtbl", "real.tbl"]


def test_new_outputs_get_the_permissions_of_a_plain_open(tmp_path, seqs400):
    old = tmp_path / "old.tbl"
    old.write_text("x\n")
    old.chmod(0o640)
    run = _run("search", HMMS, seqs400, "--quiet", "--tblout", tmp_path / "new.tbl", "--domtblout", old,
               preexec_fn=lambda: os.umask(0o022))
    assert run.returncode == 0, run.stderr
    assert stat.S_IMODE(os.stat(tmp_path / "new.tbl").st_mode) == 0o644
    assert stat.S_IMODE(os.stat(old).st_mode) == 0o640


# --- 3. a symlink planted at a temporary path is never followed --------------------------------------------


def test_planted_links_at_temporary_names_are_not_followed(tmp_path, seqs400):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    planted = ["o.hits.json.gz.tmp", "m.npz.tmp.npz", "b.npz.tmp.npz", ".o.tbl.tmp", "o.tbl.tmp"]
    for name in planted:
        (tmp_path / name).symlink_to(victim)
    (tmp_path / "prep").mkdir()
    for name in ("batch000.npz.tmp.npz", ".meta.json.tmp"):
        (tmp_path / "prep" / name).symlink_to(victim)
    runs = [
        _run("search", HMMS, seqs400, "--quiet", "--hits", "o.hits.json.gz", "--tblout", "o.tbl", cwd=tmp_path),
        _run("press", HMMS, "-o", "m.npz", cwd=tmp_path),
        _run("prepare", seqs400, "--outdir", "prep", "--meta", "prep/meta.json", "--batches", "1", cwd=tmp_path),
    ]
    for run in runs:
        assert run.returncode == 0, run.stderr
    assert victim.read_text() == "precious\n"
    for name in planted:
        assert (tmp_path / name).is_symlink()
    left = {p.name for p in tmp_path.iterdir()} - set(planted)
    assert left == {"victim.txt", "prep", "o.hits.json.gz", "o.tbl", "m.npz"}


def test_download_refuses_a_link_planted_at_the_partial_file(tmp_path, site):  # noqa: F811 - pytest fixture
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    outdir = tmp_path / "pfam"
    outdir.mkdir()
    (outdir / "Pfam-A.hmm.gz.part").symlink_to(victim)
    run = _run("fetch", "pfam", "--base-url", site.pfam_url + "/", "--outdir", outdir,
               "--provenance", tmp_path / "pfam.json")
    _one_error_line(run, "Pfam-A.hmm.gz.part", "symbolic link")
    assert victim.read_text() == "precious\n"
    assert not (tmp_path / "pfam.json").exists()


# --- 4. outputs checked before the search; a full disk leaves no debris and no partial set ----------------


def test_unwritable_output_fails_before_the_search(tmp_path, seqs400):
    run = _run("search", HMMS, seqs400, "--tblout", tmp_path / "o.tbl", "--hits", "/nonexistent/dir/h.json.gz")
    _one_error_line(run, "/nonexistent/dir/h.json.gz", "does not exist")
    assert "# hmmcascade search:" not in run.stderr  # nothing was searched
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "d.tbl").mkdir()
    _one_error_line(_run("search", HMMS, seqs400, "--tblout", tmp_path / "d.tbl"), "d.tbl", "is a directory")
    _one_error_line(_run("search", HMMS, seqs400, "--tblout", "x.tbl", "--domtblout", "./x.tbl", cwd=tmp_path),
                    "both --tblout and --domtblout")
    _one_error_line(_run("search", HMMS, seqs400, "--tblout", seqs400), str(seqs400), "is an input")


@pytest.fixture
def small_filesystem(tmp_path):
    """A 64 KiB tmpfs (root only), or None where mounting is not allowed."""
    mount = tmp_path / "small"
    mount.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)], capture_output=True)
    if made.returncode != 0:
        yield None
        return
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=True)


def _full_disk_run(folder: Path, seqs: Path) -> subprocess.CompletedProcess:
    return _run("search", HMMS, seqs, "--quiet", *[a for opt, name in TABLES.items() for a in (opt, folder / name)])


def _assert_no_partial_set(folder: Path, old: dict[str, bytes]) -> None:
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == old  # no debris, old outputs untouched


def test_full_disk_leaves_no_debris_and_no_partial_set(small_filesystem, seqs400, reference):
    if small_filesystem is None:
        pytest.skip("mounting a tmpfs needs root (CI runs as root)")
    old = {"o.tbl": b"old table\n", "o.stats.json": b"{}\n"}
    for name, data in old.items():
        (small_filesystem / name).write_bytes(data)
    assert sum(map(len, reference.values())) > 64 * 1024 > len(reference["o.tbl"])
    run = _full_disk_run(small_filesystem, seqs400)
    line = _one_error_line(run, str(small_filesystem / "o."), "No space left on device")
    assert "cannot write output" in line
    _assert_no_partial_set(small_filesystem, old)


def test_sigterm_drops_every_output(tmp_path, seqs400):
    proc = subprocess.Popen([sys.executable, "-m", "hmmcascade", "search", str(HMMS), str(seqs400),
                             *[str(a) for opt, name in TABLES.items() for a in (opt, tmp_path / name)]],
                            stderr=subprocess.PIPE, text=True, env=ENV)
    for line in proc.stderr:
        if line.startswith("# hmmcascade search:"):
            break
    time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    rest = proc.stderr.read()
    assert proc.wait(timeout=120) == 143, rest
    assert "hmmcascade: terminated" in rest and "Traceback" not in rest
    assert list(tmp_path.iterdir()) == []


def test_debris_of_a_killed_writer_is_removed_by_the_next_write_of_the_output(tmp_path, seqs400):
    """A process killed outright while writing (SIGKILL, a lost node: no handler runs) leaves its
    temporary files, named as mkstemp names them; the next write of the same outputs removes them, but
    not one that a live process is writing (locked), nor a link planted at such a name."""
    import fcntl

    outs = [a for opt, name in TABLES.items() for a in (opt, tmp_path / name)]
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    dead = [tmp_path / f".{name}.k1ll3d_x.tmp" for name in TABLES.values()]
    for path in dead:
        path.write_text("partial")
    name = next(iter(TABLES.values()))
    live, link = tmp_path / f".{name}.abcd_123.tmp", tmp_path / f".{name}.l1nk_xyz.tmp"
    live.write_text("x")
    link.symlink_to(victim)
    with open(live) as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # (another process's file, being written)
        run = _run("search", HMMS, seqs400, "--quiet", *outs)
        assert run.returncode == 0, run.stderr
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted([*TABLES.values(), live.name, link.name,
                                                                       victim.name])
    assert victim.read_text() == "precious\n"


# --- 5. one line naming the file for every input a user can get wrong ------------------------------------


@pytest.fixture(scope="module")
def made_files(tmp_path_factory, seqs400):
    folder = tmp_path_factory.mktemp("made")
    assert _run("press", HMMS, "-o", folder / "models.npz").returncode == 0
    assert _run("prepare", seqs400, "--outdir", folder, "--meta", folder / "meta.json").returncode == 0
    run = _run("search", HMMS, seqs400, "--quiet", "--hits", folder / "hits.json.gz", "--stats", folder / "stats.json")
    assert run.returncode == 0, run.stderr
    return folder


def test_broken_pressed_and_prepared_files(tmp_path, made_files, seqs400):
    import numpy as np

    models, batch = made_files / "models.npz", made_files / "batch000.npz"
    cut = tmp_path / "cut.npz"
    cut.write_bytes(models.read_bytes()[: models.stat().st_size // 2])
    _one_error_line(_run("search", cut, seqs400), str(cut), "truncated or corrupt pressed hmmcascade model file")
    _one_error_line(_run("search", batch, seqs400), str(batch), "not a pressed hmmcascade model file")
    _one_error_line(_run("search", HMMS, models), str(models), "not a prepared hmmcascade sequence file")
    lacking = tmp_path / "lacking.npz"
    with np.load(batch) as z:
        np.savez(lacking, **{k: z[k] for k in z.files if k != "offsets"})
    _one_error_line(_run("search", HMMS, lacking), str(lacking), "no 'offsets' array")
    text = tmp_path / "text.npz"
    text.write_text("hello\n")
    _one_error_line(_run("search", HMMS, text), str(text), "not an .npz archive")


def test_broken_hits_and_side_files_in_merge_and_compare(tmp_path, made_files, seqs400):
    hits = made_files / "hits.json.gz"
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(hits.read_bytes()[:-200])
    no_domains = tmp_path / "nodom.json.gz"
    data = json.loads(gzip.decompress(hits.read_bytes()))
    del data["hits"][0]["domains"]
    no_domains.write_bytes(gzip.compress(json.dumps(data).encode()))
    out = tmp_path / "o.tbl"
    for bad, message in ((cut, "not an hmmcascade hits file"), (no_domains, "no 'domains' field")):
        _one_error_line(_run("merge", bad, "-Z", "400", "--tblout", out), str(bad), message)
        _one_error_line(_run("compare", HMMS, seqs400, "--ours", bad, "--json", tmp_path / "a.json"), str(bad), message)
    assert set(tmp_path.iterdir()) == {cut, no_domains}
    bad_meta = tmp_path / "meta.json"
    bad_meta.write_text('{"residues": 5}')
    _one_error_line(_run("merge", hits, "--targets-from", bad_meta, "--tblout", out), str(bad_meta), "'targets'")
    _one_error_line(_run("search", HMMS, seqs400, "--targets-from", tmp_path / "none.json"), "none.json",
                    "not found")
    bad_stats = tmp_path / "stats.json"
    bad_stats.write_text("[1, 2")
    _one_error_line(_run("merge", hits, "-Z", "400", "--stats", tmp_path / "s.json", "--batch-stats", bad_stats),
                    str(bad_stats), "not a search --stats file")
    assert not out.exists() and not (tmp_path / "s.json").exists()


# --- 6. HMMER's ranges for numeric options ----------------------------------------------------------------


RANGE_CASES = [
    (["-E", "-1"], "Option -E takes real-valued arg in range x>0; got -1"),
    (["-E", "0"], "Option -E takes real-valued arg in range x>0; got 0"),
    (["-E", "nan"], "Option -E takes real-valued arg in range x>0; got nan"),
    (["--domE", "-1"], "Option --domE takes real-valued arg in range x>0; got -1"),
    (["--incE", "0"], "Option --incE takes real-valued arg in range x>0; got 0"),
    (["--incdomE", "-0.5"], "Option --incdomE takes real-valued arg in range x>0; got -0.5"),
    (["-Z", "0"], "Option -Z takes finite real-valued arg in range x>0; got 0"),
    (["-Z", "inf"], "Option -Z takes finite real-valued arg in range x>0; got inf"),
    (["--domZ", "-3"], "Option --domZ takes finite real-valued arg in range x>0; got -3"),
    (["-T", "nan"], "Option -T takes finite real-valued arg; got nan"),
    (["--domT", "inf"], "Option --domT takes finite real-valued arg; got inf"),
    (["--F2", "2"], "--F2 must be in (0, 1]"),
    (["--F3", "0"], "--F3 must be in (0, 1]"),
]


@pytest.mark.parametrize("args,message", RANGE_CASES, ids=[" ".join(a) for a, _ in RANGE_CASES])
def test_numeric_options_take_hmmers_ranges(tmp_path, args, message):
    out = tmp_path / "o.tbl"
    run = _run("search", HMMS, SEQS, "--tblout", out, *args)
    _one_error_line(run, message)
    assert "# hmmcascade search:" not in run.stderr and not out.exists()


def test_count_options_take_their_ranges(tmp_path, made_files):
    _one_error_line(_run("prepare", SEQS, "--outdir", tmp_path, "--meta", tmp_path / "m.json", "--batches", "0"),
                    "Option --batches takes integer arg in range n>=1; got 0")
    _one_error_line(_run("compare", HMMS, SEQS, "--ours", made_files / "hits.json.gz", "--json", tmp_path / "a.json",
                         "--cpus", "-1"), "Option --cpus takes integer arg in range n>=0; got -1")
    _one_error_line(_run("compare", HMMS, SEQS, "--ours", made_files / "hits.json.gz", "--json", tmp_path / "a.json",
                         "--require-recall", "1.5"), "Option --require-recall takes real-valued arg in range 0<=x<=1")
    run = _run("search", HMMS, SEQS, "--bogus")
    _one_error_line(run, "unrecognized arguments: --bogus", rc=2)
    assert list(tmp_path.iterdir()) == []


# --- 7. FASTA names that are not UTF-8; Easel's line and character ---------------------------------------


def test_names_that_are_not_utf8_are_written_back_byte_for_byte(tmp_path, seqs400, reference):
    """A hit's target renamed with bytes 0xE9 0xFF: every table shows the bytes where it showed the name,
    merge reads them back from the hits file, and compare finds pyhmmer's hits identical."""
    name = _table_rows(reference["o.tbl"])[0].split()[0]
    raw = name + b"\xe9\xff"
    fasta = tmp_path / "latin.faa"
    fasta.write_bytes(seqs400.read_bytes().replace(b">" + name + b" ", b">" + raw + b" ", 1))
    out = tmp_path / "out"
    out.mkdir()
    run = _run("search", HMMS, fasta, "--quiet", *[a for opt, n in TABLES.items() for a in (opt, out / n)])
    assert run.returncode == 0, run.stderr
    def words(row: bytes) -> list[bytes]:  # a ">> name description" line is cut at a width: its last word goes
        return row.split()[:-1] if row.startswith(b">>") else row.split()

    for table in ("o.tbl", "o.domtbl", "o.ali", "o.pfam.tsv"):  # the same words, the name's bytes added
        expected = [[raw if word == name else word for word in words(row)] for row in _table_rows(reference[table])]
        assert raw in (out / table).read_bytes()
        assert [words(row) for row in _table_rows((out / table).read_bytes())] == expected, table
    assert name + b"%E9%FF" in (out / "o.gff3").read_bytes()  # GFF3 percent-encodes the bytes
    merged = tmp_path / "merged.tbl"
    assert _run("merge", out / "o.hits.json.gz", "-Z", "400", "--tblout", merged).returncode == 0
    assert _table_rows(merged.read_bytes()) == _table_rows((out / "o.tbl").read_bytes())
    run = _run("compare", HMMS, fasta, "--ours", out / "o.hits.json.gz", "--json", tmp_path / "acc.json",
               "--require-identical", "--cpus", "2")
    assert run.returncode == 0, run.stderr[-2000:]


def test_bad_character_message_keeps_easels_line_and_character(tmp_path):
    from pyhmmer.easel import Alphabet, SequenceFile

    text = b">s1 first\nACDEFGHIK\n>s2\nACDEF\nGH1IK\nAAA\n"
    plain = tmp_path / "bad.faa"
    plain.write_bytes(text)
    packed = tmp_path / "bad.faa.gz"
    packed.write_bytes(gzip.compress(text))
    with pytest.raises(ValueError) as easel:  # Easel reading the file by name
        with SequenceFile(str(plain), digital=True, alphabet=Alphabet.amino()) as sf:
            list(sf)
    assert "Line 5: illegal character 1" in str(easel.value)
    for path in (plain, packed):
        _one_error_line(_run("search", HMMS, path), str(path), "line 5: illegal character 1")
