"""Download layer: fetch Pfam-A and UniProt Swiss-Prot with verification.

Every file is written to ``<dest>.part`` first, resumed with HTTP ``Range``
requests after transient failures, checked against the MD5 published by the
mirror (and, for ``.gz`` files, decompressed to the end), and only then moved
to its final name with :func:`os.replace`. A partial or unverified file is
therefore never visible under the final name.

Only the standard library is used so that fetching works before any of the
heavier dependencies are importable.
"""

from __future__ import annotations

import argparse
import datetime
import errno
import gzip
import hashlib
import http.client
import json
import os
import re
import socket
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ET
import zlib
from pathlib import Path
from typing import Any, TextIO

PFAM_BASE_URL = "https://ftp.ebi.ac.uk/pub/databases/Pfam/current_release"
UNIPROT_BASE_URL = (
    "https://ftp.uniprot.org/pub/databases/uniprot/current_release/knowledgebase/complete"
)
PFAM_FILES = ("Pfam-A.hmm.gz", "Pfam-A.hmm.dat.gz")
UNIPROT_FILES = ("uniprot_sprot.fasta.gz",)

_CHUNK_BYTES = 1 << 20
_TTY_REFRESH_S = 0.2
_USER_AGENT = "hmmcascade-fetch/0.1"


class FetchError(Exception):
    """A download or verification failure; the message is the user-facing error."""


class _RestartDownload(Exception):
    """The partial file cannot be resumed; it was removed and the download restarts."""


def _md5_of_file(path: Path) -> str:
    """Returns the hex MD5 digest of a file, read in chunks."""
    digest = hashlib.md5()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(_CHUNK_BYTES), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _check_gzip_complete(path: Path, name: str) -> None:
    """Decompresses a gzip file to the end, raising FetchError if it is cut short or corrupt."""
    try:
        with gzip.open(path, "rb") as handle:
            while handle.read(_CHUNK_BYTES):
                pass
    except EOFError:
        raise FetchError(f"truncated gzip: {name}") from None
    except (gzip.BadGzipFile, zlib.error) as exc:
        raise FetchError(f"corrupt gzip: {name}: {exc}") from None


def _write_chunk(handle: Any, chunk_bytes: bytes) -> None:
    """Writes one chunk to the partial file (separate so tests can simulate a full disk)."""
    handle.write(chunk_bytes)


def _open_part(part: Path, *, resume: bool):
    """The partial download file, appended to or started anew; a symbolic link there is refused
    (``O_NOFOLLOW``), never written through."""
    flags = os.O_WRONLY | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | (os.O_APPEND if resume else os.O_TRUNC)
    try:
        fd = os.open(part, flags, 0o666)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise FetchError(f"{part}: is a symbolic link; refusing to download through it") from None
        raise
    return os.fdopen(fd, "ab" if resume else "wb")


def _remove_quietly(path: Path) -> None:
    """Deletes a file if it exists."""
    try:
        path.unlink()
    except FileNotFoundError:
        pass


def _format_mb(n_bytes: float) -> str:
    return f"{n_bytes / 1e6:.1f} MB"


class _Meter:
    """Reports download progress: an updating line on a TTY, one summary line otherwise."""

    def __init__(self, name: str, stream: TextIO) -> None:
        self.name = name
        self.stream = stream
        self.is_tty = bool(getattr(stream, "isatty", lambda: False)())
        self.start_s = time.monotonic()
        self.last_draw_s = 0.0
        self.session_bytes = 0

    def update(self, done_bytes: int, total_bytes: int | None, chunk_bytes: int) -> None:
        """Records received bytes and redraws the TTY line at most every 0.2 s."""
        self.session_bytes += chunk_bytes
        if not self.is_tty:
            return
        now_s = time.monotonic()
        if now_s - self.last_draw_s < _TTY_REFRESH_S:
            return
        self.last_draw_s = now_s
        rate_bytes_per_s = self.session_bytes / max(now_s - self.start_s, 1e-9)
        total_text = _format_mb(total_bytes) if total_bytes else "?"
        self.stream.write(
            f"\r{self.name}: {_format_mb(done_bytes)} / {total_text}"
            f"  {rate_bytes_per_s / 1e6:.1f} MB/s   "
        )
        self.stream.flush()

    def finish(self, size_bytes: int, md5_checked: bool) -> None:
        """Writes the one-line summary for the finished file."""
        elapsed_s = max(time.monotonic() - self.start_s, 1e-9)
        rate_mb_per_s = self.session_bytes / elapsed_s / 1e6
        check = "md5 ok" if md5_checked else "no md5 published"
        prefix = "\r\x1b[K" if self.is_tty else ""
        self.stream.write(
            f"{prefix}fetched {self.name}: {size_bytes} bytes in {elapsed_s:.1f} s "
            f"({rate_mb_per_s:.1f} MB/s), {check}\n"
        )
        self.stream.flush()


def _parse_content_range(header: str | None) -> tuple[int | None, int | None]:
    """Parses ``bytes START-END/TOTAL`` or ``bytes */TOTAL`` into (start, total)."""
    match = re.match(r"\s*bytes\s+(\d+|\*)(?:-\d+)?/(\d+|\*)", header or "")
    if not match:
        return None, None
    start = int(match.group(1)) if match.group(1) != "*" else None
    total = int(match.group(2)) if match.group(2) != "*" else None
    return start, total


def _attempt(url: str, part: Path, timeout_s: float, meter: _Meter) -> None:
    """Makes one request, appending to (or restarting) the partial file.

    Raises:
        http.client.IncompleteRead: the connection closed before Content-Length bytes.
        _RestartDownload: the server cannot resume this partial file.
        urllib.error.HTTPError, OSError: passed through for classification.
    """
    offset_bytes = part.stat().st_size if part.exists() else 0
    headers = {"User-Agent": _USER_AGENT}
    if offset_bytes:
        headers["Range"] = f"bytes={offset_bytes}-"
    request = urllib.request.Request(url, headers=headers)
    with urllib.request.urlopen(request, timeout=timeout_s) as response:
        status = getattr(response, "status", None) or 200
        length_header = response.headers.get("Content-Length")
        body_bytes = int(length_header) if length_header and length_header.isdigit() else None
        if status == 206:
            start, total_bytes = _parse_content_range(response.headers.get("Content-Range"))
            if start != offset_bytes:
                _remove_quietly(part)
                raise _RestartDownload
        else:
            offset_bytes = 0
            total_bytes = body_bytes
        received_bytes = 0
        with _open_part(part, resume=bool(offset_bytes)) as handle:
            while True:
                chunk = response.read(_CHUNK_BYTES)
                if not chunk:
                    break
                _write_chunk(handle, chunk)
                received_bytes += len(chunk)
                meter.update(offset_bytes + received_bytes, total_bytes, len(chunk))
        if body_bytes is not None and received_bytes < body_bytes:
            raise http.client.IncompleteRead(b"", body_bytes - received_bytes)


def _handle_416(error: urllib.error.HTTPError, part: Path) -> bool:
    """Decides what a 416 means: True if the part is already complete, else restarts clean."""
    _, total_bytes = _parse_content_range(error.headers.get("Content-Range"))
    size_bytes = part.stat().st_size if part.exists() else 0
    if total_bytes is not None and total_bytes == size_bytes:
        return True
    _remove_quietly(part)
    return False


def _describe_failure(exc: BaseException, url: str) -> str:
    """Turns the last transient exception into a one-line message."""
    host = urllib.parse.urlsplit(url).hostname or url
    if isinstance(exc, urllib.error.HTTPError):
        return f"HTTP {exc.code} {exc.reason}: {url}"
    reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
    if isinstance(reason, socket.gaierror):
        return f"cannot resolve host {host}: {reason.strerror or reason}"
    if isinstance(reason, ConnectionRefusedError):
        return f"connection refused by host {host}: {url}"
    if isinstance(reason, (TimeoutError, socket.timeout)):
        return f"timed out talking to host {host}: {url}"
    detail = str(reason) or type(reason).__name__
    return f"download from host {host} failed: {detail}: {url}"


def download(
    url: str,
    dest: str | os.PathLike[str],
    *,
    expected_md5: str | None = None,
    retries: int = 4,
    backoff_s: float = 0.5,
    timeout_s: float = 30,
    progress: TextIO | None = None,
) -> Path:
    """Downloads ``url`` to ``dest`` atomically, resuming and verifying.

    Args:
        url: Source URL (http, https or file).
        dest: Final path; data goes to ``dest + ".part"`` until verified.
        expected_md5: Hex MD5 the finished file must have; None skips the check.
        retries: Extra attempts after a transient failure (reset, short read,
            timeout, HTTP 5xx, unreachable host).
        backoff_s: Delay before the first retry; doubles on each further retry.
        timeout_s: Socket timeout per request.
        progress: Stream for progress and the summary line; None means stderr.

    Returns:
        The final path.

    Raises:
        FetchError: On HTTP 4xx, exhausted retries, checksum mismatch,
            truncated gzip or a full disk.
    """
    dest_path = Path(dest)
    part = dest_path.with_name(dest_path.name + ".part")
    name = dest_path.name
    meter = _Meter(name, progress if progress is not None else sys.stderr)
    try:
        dest_path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise FetchError(f"cannot create directory {dest_path.parent}: {exc.strerror}") from None

    failures = 0
    last_error: BaseException | None = None
    while True:
        try:
            _attempt(url, part, timeout_s, meter)
            break
        except _RestartDownload:
            continue
        except urllib.error.HTTPError as exc:
            exc.close()
            if exc.code == 416 and part.exists():
                if _handle_416(exc, part):
                    break
                continue
            if exc.code < 500:
                raise FetchError(f"HTTP {exc.code} {exc.reason}: {url}") from None
            last_error = exc
        except OSError as exc:
            if exc.errno == errno.ENOSPC:
                raise FetchError(f"disk full while writing {dest_path}") from None
            if isinstance(exc, urllib.error.URLError) and isinstance(
                exc.reason, FileNotFoundError
            ):
                raise FetchError(f"not found: {url}") from None
            if isinstance(exc, (PermissionError, IsADirectoryError)):
                raise FetchError(f"cannot write {part}: {exc.strerror}") from None
            last_error = exc
        except http.client.HTTPException as exc:
            last_error = exc
        failures += 1
        if failures > retries:
            raise FetchError(_describe_failure(last_error, url))
        time.sleep(backoff_s * 2 ** (failures - 1))

    if expected_md5 is not None:
        actual_md5 = _md5_of_file(part)
        if actual_md5.lower() != expected_md5.lower():
            _remove_quietly(part)
            raise FetchError(
                f"checksum mismatch for {name}: expected {expected_md5.lower()}, got {actual_md5}"
            )
    if name.endswith(".gz"):
        try:
            _check_gzip_complete(part, name)
        except FetchError:
            _remove_quietly(part)
            raise
    os.replace(part, dest_path)
    meter.finish(dest_path.stat().st_size, expected_md5 is not None)
    return dest_path


def parse_md5_checksums(text: str) -> dict[str, str]:
    """Parses Pfam's ``md5_checksums``: lines of ``<md5>  <filename>``.

    Args:
        text: File contents.

    Returns:
        Mapping of file name to lowercase hex MD5. Lines that do not look like
        a checksum entry are ignored; a leading ``*`` (binary mode marker) is dropped.
    """
    checksums: dict[str, str] = {}
    for line in text.splitlines():
        match = re.match(r"\s*([0-9a-fA-F]{32})\s+\*?(\S.*?)\s*$", line)
        if match:
            checksums[os.path.basename(match.group(2))] = match.group(1).lower()
    return checksums


def _local_name(tag: str) -> str:
    """Strips an ``{namespace}`` prefix from an ElementTree tag."""
    return tag.rsplit("}", 1)[-1]


def parse_metalink(xml_text: str) -> dict[str, str]:
    """Parses UniProt's ``RELEASE.metalink`` into file name -> MD5.

    Accepts metalink 3 (``http://www.metalinker.org/``), metalink 4, or no
    namespace: every ``<file name=...>`` element contributes the first
    descendant ``<hash type="md5">``.

    Args:
        xml_text: File contents.

    Returns:
        Mapping of file name to lowercase hex MD5.

    Raises:
        FetchError: If the text is not well-formed XML.
    """
    try:
        root = ET.fromstring(xml_text)
    except ET.ParseError as exc:
        raise FetchError(f"malformed RELEASE.metalink: {exc}") from None
    checksums: dict[str, str] = {}
    for element in root.iter():
        if _local_name(element.tag) != "file" or not element.get("name"):
            continue
        for child in element.iter():
            if (
                _local_name(child.tag) == "hash"
                and (child.get("type") or "").lower() == "md5"
                and child.text
            ):
                checksums[os.path.basename(element.get("name"))] = child.text.strip().lower()
                break
    return checksums


def parse_pfam_release(relnotes_text: str) -> str:
    """Extracts the Pfam release number (e.g. ``"35.0"``) from ``relnotes.txt``.

    Raises:
        FetchError: If no ``RELEASE <major>.<minor>`` line is present.
    """
    match = re.search(r"RELEASE\s+(\d+\.\d+)", relnotes_text)
    if not match:
        raise FetchError("no Pfam release number (RELEASE NN.N) found in relnotes.txt")
    return match.group(1)


def parse_uniprot_release(reldate_text: str) -> str:
    """Extracts the UniProt release (e.g. ``"2024_01"``) from ``reldate.txt``.

    Raises:
        FetchError: If no ``Release YYYY_MM`` phrase is present.
    """
    match = re.search(r"Release\s+(\d{4}_\d{2})", reldate_text)
    if not match:
        raise FetchError("no UniProt release (Release YYYY_MM) found in reldate.txt")
    return match.group(1)


def _join_url(base_url: str, name: str) -> str:
    return base_url.rstrip("/") + "/" + name


def _read_text(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace")


def _fetch_verified(
    base_url: str,
    outdir: Path,
    names: tuple[str, ...],
    checksums: dict[str, str],
    checksum_source: str,
    options: dict[str, Any],
) -> dict[str, dict[str, Any]]:
    """Downloads each named file unless an identical copy is already present."""
    stream = options.get("progress") or sys.stderr
    files: dict[str, dict[str, Any]] = {}
    for name in names:
        if name not in checksums:
            raise FetchError(f"{name} is not listed in {checksum_source}")
        dest = outdir / name
        expected_md5 = checksums[name]
        if dest.is_file() and _md5_of_file(dest) == expected_md5:
            stream.write(f"{name}: up to date\n")
            stream.flush()
        else:
            download(_join_url(base_url, name), dest, expected_md5=expected_md5, **options)
        files[name] = {"md5": expected_md5, "bytes": dest.stat().st_size}
    return files


def _utc_now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def fetch_pfam(
    base_url: str, outdir: str | os.PathLike[str], **download_options: Any
) -> dict[str, Any]:
    """Fetches Pfam-A.hmm.gz and Pfam-A.hmm.dat.gz, verified against ``md5_checksums``.

    Args:
        base_url: Directory URL of a Pfam release (holds ``md5_checksums``).
        outdir: Local directory for all files.
        **download_options: Passed to :func:`download` (retries, backoff_s,
            timeout_s, progress).

    Returns:
        Provenance record: database, release, base_url, files, fetched_utc.

    Raises:
        FetchError: On any download or verification failure.
    """
    outdir_path = Path(outdir)
    for name in ("md5_checksums", "relnotes.txt"):
        download(_join_url(base_url, name), outdir_path / name, **download_options)
    checksums = parse_md5_checksums(_read_text(outdir_path / "md5_checksums"))
    release = parse_pfam_release(_read_text(outdir_path / "relnotes.txt"))
    files = _fetch_verified(
        base_url, outdir_path, PFAM_FILES, checksums, "md5_checksums", download_options
    )
    return {
        "database": "pfam",
        "release": release,
        "base_url": base_url,
        "files": files,
        "fetched_utc": _utc_now(),
    }


def fetch_uniprot(
    base_url: str, outdir: str | os.PathLike[str], **download_options: Any
) -> dict[str, Any]:
    """Fetches uniprot_sprot.fasta.gz, verified against ``RELEASE.metalink``.

    Args:
        base_url: The UniProtKB ``knowledgebase/complete`` directory URL.
        outdir: Local directory for all files.
        **download_options: Passed to :func:`download`.

    Returns:
        Provenance record: database, release, base_url, files, fetched_utc.

    Raises:
        FetchError: On any download or verification failure.
    """
    outdir_path = Path(outdir)
    for name in ("RELEASE.metalink", "reldate.txt"):
        download(_join_url(base_url, name), outdir_path / name, **download_options)
    checksums = parse_metalink(_read_text(outdir_path / "RELEASE.metalink"))
    release = parse_uniprot_release(_read_text(outdir_path / "reldate.txt"))
    files = _fetch_verified(
        base_url, outdir_path, UNIPROT_FILES, checksums, "RELEASE.metalink", download_options
    )
    return {
        "database": "uniprot",
        "release": release,
        "base_url": base_url,
        "files": files,
        "fetched_utc": _utc_now(),
    }


def write_provenance(path: str | os.PathLike[str], records: dict[str, Any]) -> None:
    """Writes a provenance record as JSON, whole or not at all (:func:`hmmcascade.outfiles.write_text`).

    Raises:
        FetchError: If the file cannot be written.
    """
    from .outfiles import OutputError, output_folder, write_text

    target = Path(path)
    try:
        output_folder(target.parent)
        write_text(target, json.dumps(records, indent=2, sort_keys=True) + "\n")
    except OutputError as exc:
        raise FetchError(str(exc)) from None


_FETCHERS = {
    "pfam": (fetch_pfam, PFAM_BASE_URL),
    "uniprot": (fetch_uniprot, UNIPROT_BASE_URL),
}


def add_fetch_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Adds the ``fetch`` subcommand to an argparse subparsers object.

    Args:
        subparsers: The object returned by ``ArgumentParser.add_subparsers()``.

    Returns:
        The new subparser (its ``func`` default is :func:`run_fetch`).
    """
    parser = subparsers.add_parser(
        "fetch",
        help="download and verify Pfam-A or UniProt Swiss-Prot",
        description="Download a database release, resuming interrupted transfers and "
        "verifying the published MD5 checksums; files already present and intact are kept.",
    )
    parser.add_argument("database", choices=sorted(_FETCHERS), help="which database to fetch")
    parser.add_argument(
        "--base-url",
        default=None,
        help=f"release directory URL (default pfam: {PFAM_BASE_URL}; "
        f"uniprot: {UNIPROT_BASE_URL})",
    )
    parser.add_argument(
        "--outdir", default=None, help="download directory (default: resources/<database>)"
    )
    parser.add_argument(
        "--provenance",
        default=None,
        help="provenance JSON to write (default: results/provenance/<database>.json)",
    )
    parser.set_defaults(func=run_fetch)
    return parser


def run_fetch(args: argparse.Namespace) -> int:
    """Runs ``hmmcascade fetch``; returns the process exit status.

    Args:
        args: Parsed arguments with database, base_url, outdir and provenance.

    Returns:
        0 on success, 1 after printing ``hmmcascade: error: <message>`` to stderr.
    """
    fetcher, default_base_url = _FETCHERS[args.database]
    base_url = args.base_url or default_base_url
    outdir = args.outdir or os.path.join("resources", args.database)
    provenance_path = args.provenance or os.path.join(
        "results", "provenance", f"{args.database}.json"
    )
    try:
        record = fetcher(base_url, outdir)
        write_provenance(provenance_path, record)
    except FetchError as exc:
        print(f"hmmcascade: error: {exc}", file=sys.stderr)
        return 1
    return 0
