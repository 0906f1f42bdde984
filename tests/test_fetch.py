"""Tests for hmmcascade.fetch against a local HTTP server mimicking the Pfam and UniProt sites."""

from __future__ import annotations

import argparse
import errno
import gzip
import hashlib
import http.server
import io
import json
import os
import re
import socket
import threading
from pathlib import Path

import pyhmmer
import pytest

from hmmcascade import fetch
from hmmcascade.fetch import FetchError

PYHMMER_DATA = Path(os.path.dirname(pyhmmer.__file__)) / "tests" / "data"
HMM_NAMES = ("PF02826.hmm", "Thioesterase.hmm", "KR.hmm")
N_PROTEINS = 50
FAST = {"retries": 4, "backoff_s": 0.01, "timeout_s": 5}

PFAM_DAT = """# STOCKHOLM 1.0
#=GF ID   2-Hacid_dh_C
#=GF AC   PF02826.20
#=GF DE   D-isomer specific 2-hydroxyacid dehydrogenase, NAD binding domain
#=GF GA   25.10; 25.10;
#=GF TC   25.10; 25.10;
#=GF NC   25.00; 25.00;
#=GF TP   Domain
#=GF ML   178
#=GF CL   CL0063
//
# STOCKHOLM 1.0
#=GF ID   Thioesterase
#=GF AC   PF00975.23
#=GF DE   Thioesterase domain
#=GF GA   25.00; 25.00;
#=GF TC   25.00; 25.00;
#=GF NC   24.90; 24.90;
#=GF TP   Domain
#=GF ML   243
#=GF CL   CL0028
//
# STOCKHOLM 1.0
#=GF ID   KR
#=GF AC   PF08659.13
#=GF DE   KR domain
#=GF GA   25.00; 25.00;
#=GF TC   25.00; 25.00;
#=GF NC   24.90; 24.90;
#=GF TP   Domain
#=GF ML   262
#=GF CL   CL0063
//
"""

RELNOTES = """                  Pfam release notes
                  ------------------

                  RELEASE 35.0

  Pfam-A families: 3 (test fixture)
"""

RELDATE = """UniProt Knowledgebase Release 2024_01 consists of:
UniProtKB/Swiss-Prot Release 2024_01 of 24-Jan-2024
UniProtKB/TrEMBL Release 2024_01 of 24-Jan-2024
"""

METALINK = """<?xml version="1.0" encoding="UTF-8"?>
<metalink xmlns="http://www.metalinker.org/" version="3.0">
  <publisher><name>UniProt Consortium</name></publisher>
  <files>
    <file name="uniprot_sprot.fasta.gz">
      <size>{size}</size>
      <verification><hash type="md5">{md5}</hash></verification>
      <resources><url type="ftp" location="ch">ftp://example.invalid/uniprot_sprot.fasta.gz</url></resources>
    </file>
    <file name="uniprot_trembl.fasta.gz">
      <verification><hash type="md5">00000000000000000000000000000000</hash></verification>
    </file>
  </files>
</metalink>
"""


def _md5(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


def _proteins_fasta(n_records: int) -> bytes:
    text = (PYHMMER_DATA / "seqs" / "938293.PRJEB85.HG003687.faa").read_text()
    records = re.split(r"(?m)^(?=>)", text)
    return "".join([r for r in records if r.startswith(">")][:n_records]).encode()


def _write_pfam_site(site: Path) -> dict[str, bytes]:
    site.mkdir(parents=True)
    hmm_text = b"".join((PYHMMER_DATA / "hmms" / "txt" / n).read_bytes() for n in HMM_NAMES)
    payloads = {
        "Pfam-A.hmm.gz": gzip.compress(hmm_text, mtime=0),
        "Pfam-A.hmm.dat.gz": gzip.compress(PFAM_DAT.encode(), mtime=0),
    }
    for name, data in payloads.items():
        (site / name).write_bytes(data)
    (site / "md5_checksums").write_text(
        "".join(f"{_md5(d)}  {n}\n" for n, d in payloads.items())
    )
    (site / "relnotes.txt").write_text(RELNOTES)
    return payloads


def _write_uniprot_site(site: Path) -> dict[str, bytes]:
    site.mkdir(parents=True)
    data = gzip.compress(_proteins_fasta(N_PROTEINS), mtime=0)
    (site / "uniprot_sprot.fasta.gz").write_bytes(data)
    (site / "RELEASE.metalink").write_text(METALINK.format(size=len(data), md5=_md5(data)))
    (site / "reldate.txt").write_text(RELDATE)
    return {"uniprot_sprot.fasta.gz": data}


class _Handler(http.server.BaseHTTPRequestHandler):
    """Serves the site directory with Range support and fault-injection switches."""

    def log_message(self, format, *args):  # noqa: A002 - signature fixed by the base class
        pass

    def do_GET(self):  # noqa: N802 - name fixed by the base class
        server = self.server
        path = self.path.split("?", 1)[0]
        range_header = self.headers.get("Range")
        with server.lock:
            server.requests.append((path, range_header))
            cut = server.cut.get(path, 0) > 0
            if cut:
                server.cut[path] -= 1
        file_path = (server.root / path.lstrip("/")).resolve()
        if path in server.missing or not file_path.is_file() or server.root not in file_path.parents:
            self.send_error(404, "Not Found")
            return
        data = file_path.read_bytes()
        if path in server.corrupt:
            data = bytes(b ^ 0xFF for b in data[:64]) + data[64:]
        start = 0
        match = re.fullmatch(r"bytes=(\d+)-", range_header or "")
        if match:
            start = int(match.group(1))
            if start >= len(data):
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{len(data)}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        else:
            self.send_response(200)
        body = data[start:]
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if cut:
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        self.wfile.write(body)


class Site:
    """A running mock mirror: base URLs, published payloads and fault switches."""

    def __init__(self, server, root: Path, payloads: dict[str, bytes]):
        self.server = server
        self.root = root
        self.payloads = payloads
        host, port = server.server_address[:2]
        self.url = f"http://{host}:{port}"
        self.pfam_url = f"{self.url}/pfam"
        self.uniprot_url = f"{self.url}/uniprot"

    def requests_for(self, path: str) -> list[str | None]:
        with self.server.lock:
            return [rng for p, rng in self.server.requests if p == path]


@pytest.fixture
def site(tmp_path):
    root = tmp_path / "site"
    payloads = _write_pfam_site(root / "pfam")
    payloads.update(_write_uniprot_site(root / "uniprot"))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    server.root = root.resolve()
    server.lock = threading.Lock()
    server.requests = []
    server.cut = {}
    server.corrupt = set()
    server.missing = set()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.daemon = True
    thread.start()
    try:
        yield Site(server, root, payloads)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def test_clean_download_of_both_databases(site, tmp_path):
    log = io.StringIO()
    pfam = fetch.fetch_pfam(site.pfam_url, tmp_path / "pfam", progress=log, **FAST)
    uniprot = fetch.fetch_uniprot(site.uniprot_url, tmp_path / "uniprot", progress=log, **FAST)

    assert pfam["database"] == "pfam" and pfam["release"] == "35.0"
    assert uniprot["database"] == "uniprot" and uniprot["release"] == "2024_01"
    assert pfam["base_url"] == site.pfam_url
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", pfam["fetched_utc"])
    for record, subdir in ((pfam, "pfam"), (uniprot, "uniprot")):
        for name, info in record["files"].items():
            data = (tmp_path / subdir / name).read_bytes()
            assert data == site.payloads[name]
            assert info == {"md5": _md5(data), "bytes": len(data)}
    assert set(pfam["files"]) == {"Pfam-A.hmm.gz", "Pfam-A.hmm.dat.gz"}
    assert set(uniprot["files"]) == {"uniprot_sprot.fasta.gz"}
    with gzip.open(tmp_path / "uniprot" / "uniprot_sprot.fasta.gz", "rt") as handle:
        assert handle.read().count(">") == N_PROTEINS
    assert "fetched Pfam-A.hmm.gz:" in log.getvalue() and "md5 ok" in log.getvalue()
    assert not list(tmp_path.rglob("*.part"))

    out = tmp_path / "prov" / "pfam.json"
    fetch.write_provenance(out, pfam)
    assert json.loads(out.read_text()) == pfam
    assert [p.name for p in out.parent.iterdir()] == ["pfam.json"]


def test_resume_after_connection_cut(site, tmp_path):
    path = "/pfam/Pfam-A.hmm.gz"
    site.server.cut[path] = 2
    fetch.fetch_pfam(site.pfam_url, tmp_path, progress=io.StringIO(), **FAST)

    ranges = site.requests_for(path)
    assert len(ranges) == 3
    assert ranges[0] is None
    assert all(r is not None and r.startswith("bytes=") for r in ranges[1:])
    assert (tmp_path / "Pfam-A.hmm.gz").read_bytes() == site.payloads["Pfam-A.hmm.gz"]
    assert not (tmp_path / "Pfam-A.hmm.gz.part").exists()


def test_leftover_part_is_resumed(site, tmp_path):
    data = site.payloads["uniprot_sprot.fasta.gz"]
    (tmp_path / "uniprot_sprot.fasta.gz.part").write_bytes(data[:100])
    fetch.download(
        f"{site.uniprot_url}/uniprot_sprot.fasta.gz",
        tmp_path / "uniprot_sprot.fasta.gz",
        expected_md5=_md5(data),
        progress=io.StringIO(),
        **FAST,
    )
    assert site.requests_for("/uniprot/uniprot_sprot.fasta.gz") == ["bytes=100-"]
    assert (tmp_path / "uniprot_sprot.fasta.gz").read_bytes() == data


def test_complete_part_answered_416_is_accepted(site, tmp_path):
    data = site.payloads["uniprot_sprot.fasta.gz"]
    (tmp_path / "uniprot_sprot.fasta.gz.part").write_bytes(data)
    fetch.download(
        f"{site.uniprot_url}/uniprot_sprot.fasta.gz",
        tmp_path / "uniprot_sprot.fasta.gz",
        expected_md5=_md5(data),
        progress=io.StringIO(),
        **FAST,
    )
    assert (tmp_path / "uniprot_sprot.fasta.gz").read_bytes() == data


def test_corrupted_file_is_rejected(site, tmp_path):
    site.server.corrupt.add("/pfam/Pfam-A.hmm.dat.gz")
    with pytest.raises(FetchError, match="checksum mismatch for Pfam-A.hmm.dat.gz"):
        fetch.fetch_pfam(site.pfam_url, tmp_path, progress=io.StringIO(), **FAST)
    assert not (tmp_path / "Pfam-A.hmm.dat.gz").exists()
    assert not (tmp_path / "Pfam-A.hmm.dat.gz.part").exists()


def test_404_fails_immediately(site, tmp_path):
    site.server.missing.add("/uniprot/uniprot_sprot.fasta.gz")
    with pytest.raises(FetchError, match="HTTP 404") as info:
        fetch.fetch_uniprot(site.uniprot_url, tmp_path, progress=io.StringIO(), **FAST)
    assert "uniprot_sprot.fasta.gz" in str(info.value)
    assert len(site.requests_for("/uniprot/uniprot_sprot.fasta.gz")) == 1
    assert not (tmp_path / "uniprot_sprot.fasta.gz").exists()


def test_truncated_gzip_with_matching_md5(site, tmp_path):
    pfam_site = site.root / "pfam"
    truncated = site.payloads["Pfam-A.hmm.gz"][:-40]
    (pfam_site / "Pfam-A.hmm.gz").write_bytes(truncated)
    dat_md5 = _md5(site.payloads["Pfam-A.hmm.dat.gz"])
    (pfam_site / "md5_checksums").write_text(
        f"{_md5(truncated)}  Pfam-A.hmm.gz\n{dat_md5}  Pfam-A.hmm.dat.gz\n"
    )
    with pytest.raises(FetchError, match="truncated gzip: Pfam-A.hmm.gz"):
        fetch.fetch_pfam(site.pfam_url, tmp_path, progress=io.StringIO(), **FAST)
    assert not (tmp_path / "Pfam-A.hmm.gz").exists()
    assert not (tmp_path / "Pfam-A.hmm.gz.part").exists()


def test_file_missing_from_checksums(site, tmp_path):
    (site.root / "pfam" / "md5_checksums").write_text(
        f"{_md5(site.payloads['Pfam-A.hmm.gz'])}  Pfam-A.hmm.gz\n"
    )
    with pytest.raises(FetchError, match="Pfam-A.hmm.dat.gz is not listed in md5_checksums"):
        fetch.fetch_pfam(site.pfam_url, tmp_path, progress=io.StringIO(), **FAST)


def test_second_run_downloads_nothing(site, tmp_path):
    fetch.fetch_pfam(site.pfam_url, tmp_path / "pfam", progress=io.StringIO(), **FAST)
    fetch.fetch_uniprot(site.uniprot_url, tmp_path / "uniprot", progress=io.StringIO(), **FAST)
    big = ("/pfam/Pfam-A.hmm.gz", "/pfam/Pfam-A.hmm.dat.gz", "/uniprot/uniprot_sprot.fasta.gz")
    before = {p: len(site.requests_for(p)) for p in big}

    log = io.StringIO()
    again = fetch.fetch_pfam(site.pfam_url, tmp_path / "pfam", progress=log, **FAST)
    fetch.fetch_uniprot(site.uniprot_url, tmp_path / "uniprot", progress=log, **FAST)

    assert {p: len(site.requests_for(p)) - before[p] for p in big} == dict.fromkeys(big, 0)
    assert "Pfam-A.hmm.gz: up to date" in log.getvalue()
    assert again["files"]["Pfam-A.hmm.gz"]["md5"] == _md5(site.payloads["Pfam-A.hmm.gz"])


def test_connection_refused_names_host(tmp_path):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(FetchError, match="127.0.0.1"):
        fetch.download(
            f"http://127.0.0.1:{port}/x.gz",
            tmp_path / "x.gz",
            retries=1,
            backoff_s=0.01,
            timeout_s=2,
            progress=io.StringIO(),
        )


def test_disk_full_is_one_line_error(site, tmp_path, monkeypatch):
    def full(handle, chunk_bytes):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(fetch, "_write_chunk", full)
    dest = tmp_path / "uniprot_sprot.fasta.gz"
    with pytest.raises(FetchError, match="disk full while writing"):
        fetch.download(f"{site.uniprot_url}/uniprot_sprot.fasta.gz", dest, **FAST)
    assert not dest.exists()


def _cli(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="hmmcascade")
    fetch.add_fetch_parser(parser.add_subparsers(dest="command", required=True))
    return parser.parse_args(argv)


def test_cli_success_writes_provenance(site, tmp_path, capsys):
    prov = tmp_path / "prov" / "uniprot.json"
    args = _cli(
        ["fetch", "uniprot", "--base-url", site.uniprot_url,
         "--outdir", str(tmp_path / "u"), "--provenance", str(prov)]
    )
    assert args.func is fetch.run_fetch
    assert args.func(args) == 0
    record = json.loads(prov.read_text())
    assert record["release"] == "2024_01"
    assert "hmmcascade: error" not in capsys.readouterr().err


def test_cli_error_is_one_line(site, tmp_path, capsys):
    site.server.missing.add("/pfam/Pfam-A.hmm.gz")
    prov = tmp_path / "pfam.json"
    args = _cli(
        ["fetch", "pfam", "--base-url", site.pfam_url,
         "--outdir", str(tmp_path / "p"), "--provenance", str(prov)]
    )
    assert fetch.run_fetch(args) == 1
    err_lines = [
        line for line in capsys.readouterr().err.splitlines() if line.startswith("hmmcascade:")
    ]
    assert err_lines == [f"hmmcascade: error: HTTP 404 Not Found: {site.pfam_url}/Pfam-A.hmm.gz"]
    assert not prov.exists()


def test_parsers_tolerate_variants():
    assert fetch.parse_md5_checksums(
        "d41d8cd98f00b204e9800998ecf8427e  Pfam-A.hmm.gz\n"
        "D41D8CD98F00B204E9800998ECF8427F *Pfam-A.hmm.dat.gz\n\nnot a checksum line\n"
    ) == {
        "Pfam-A.hmm.gz": "d41d8cd98f00b204e9800998ecf8427e",
        "Pfam-A.hmm.dat.gz": "d41d8cd98f00b204e9800998ecf8427f",
    }
    v4 = (
        '<metalink xmlns="urn:ietf:params:xml:ns:metalink"><file name="a.gz">'
        '<hash type="MD5">ABC</hash></file></metalink>'
    )
    assert fetch.parse_metalink(v4) == {"a.gz": "abc"}
    bare = '<metalink><files><file name="b.gz"><verification><hash type="sha256">x</hash>' \
        '<hash type="md5">def</hash></verification></file></files></metalink>'
    assert fetch.parse_metalink(bare) == {"b.gz": "def"}
    with pytest.raises(FetchError, match="malformed RELEASE.metalink"):
        fetch.parse_metalink("<metalink>")
    assert fetch.parse_pfam_release(RELNOTES) == "35.0"
    assert fetch.parse_uniprot_release(RELDATE) == "2024_01"
    with pytest.raises(FetchError, match="no Pfam release"):
        fetch.parse_pfam_release("nothing here")
