"""Per-protein domain annotation from ``hmmsearch`` hits: pfam_scan.pl's table and GFF3.

Pfam's ``pfam_scan.pl`` (``Bio::Pfam::Scan::PfamScan``) runs ``hmmsearch
--cut_ga`` and turns the reported domains into one line per domain and
protein, with the family type and clan from ``Pfam-A.hmm.dat``.  This module
does the same from :class:`~hmmcascade.results.Hit` lists:

* :func:`~hmmcascade.pfam_dat.read_pfam_dat` (:mod:`hmmcascade.pfam_dat`) reads
  ``Pfam-A.hmm.dat`` (``#=GF ID``, ``AC``, ``DE``, ``GA``, ``TP``, ``ML``, ``NE``,
  ``CL`` per family record, ``//`` between records; gzipped or plain).
* :func:`pfam_domains` selects the reported domains of reported hits and,
  when family data are given, resolves clan overlaps as pfam_scan's
  ``_resolve_clan_overlap`` / ``HMMResults::remove_overlaps_by_clan`` does:
  per protein, domains are taken in order of increasing independent E-value
  (as printed by hmmsearch, ``%.2g``); one is dropped when its alignment
  overlaps an already kept domain of a family of the same clan, unless the two
  families are declared nested (``NE``, in either family's record).
  Domains of families without a clan are never dropped.
* :func:`write_pfam_scan` writes pfam_scan's table, in its column order and
  printf formats: proteins sorted by name, domains by alignment start.
* :func:`write_gff3` writes the same domains as GFF3 ``protein_match``
  features on alignment coordinates (as pfam_scan and InterProScan report),
  each the child of its protein's ``polypeptide`` feature (text escaped by
  :mod:`hmmcascade.gff3`).
* :func:`thresholds_note` names the thresholds and Z that made a table, for
  the comment line of the per-protein tables (:class:`AnnotationStream`'s ``note``).

Without family data there is no clan resolution, the type column is ``-`` and
the clan ``No_clan``.  The significance column is pfam_scan's: 1 when the
sequence and domain bit scores, as hmmsearch prints them (``%.1f``), reach the
family's gathering thresholds (``#=GF GA``); for families without GA data, 1
when HMMER includes the domain and its hit (with ``--cut_ga``, inclusion is
GA too).

Reference: Mistry J, et al. (2007) Predicting active site residue annotations
in the Pfam database. BMC Bioinformatics 8:298. doi:10.1186/1471-2105-8-298
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from functools import lru_cache
from operator import attrgetter
from typing import NamedTuple

from . import __version__
from .gff3 import PFAM_ACCESSION, attr_safe, escape, gff3_ids
from .pfam_dat import PfamFamily
from .results import Hit

__all__ = ["DomainAnnotation", "DomainUnit", "padded_pfam_scan_lines", "pfam_domains", "unit_annotations",
           "write_pfam_scan", "write_gff3",
           "thresholds_note", "IPR_COLUMNS", "sequence_md5s", "write_interproscan_tsv", "write_protein_summary", "AnnotationStream",
           "protein_summary_line"]


@dataclass(frozen=True)
class DomainAnnotation:
    """One line of pfam_scan's table: a reported domain of a reported hit."""

    seq_id: str
    seq_length: int
    ali_from: int
    ali_to: int
    env_from: int
    env_to: int
    hmm_acc: str  #: "-" when the model has no accession
    hmm_name: str
    type: str  #: "-" without family data
    hmm_from: int
    hmm_to: int
    hmm_length: int
    bits: float  #: domain bit score
    evalue: float  #: independent E-value
    significant: bool
    clan: str  #: "No_clan" when none


_COLUMNS = ("# <seq id> <alignment start> <alignment end> <envelope start> <envelope end> <hmm acc> <hmm name>"
            " <type> <hmm start> <hmm end> <hmm length> <bit score> <E-value> <significance> <clan>")


class DomainUnit(NamedTuple):
    """What the per-protein tables read of one reported domain of a reported hit (a merge's step 2 makes
    these straight from its sorted runs' rows, without Hit or Domain objects)."""

    model: int
    model_name: str
    model_acc: str
    model_length: int
    target_name: str
    target_length: int
    score: float  #: the hit's bits
    included: bool  #: the hit's
    env_from: int
    env_to: int
    dom_score: float
    i_evalue: float
    dom_included: bool
    hmm_from: int
    hmm_to: int
    ali_from: int
    ali_to: int


def pfam_domains(hits, families: dict[str, PfamFamily] | None = None, *,
                 resolve_clan_overlap: bool = True) -> list[DomainAnnotation]:
    """The reported domains of reported hits, clan overlaps resolved, in pfam_scan's output order.

    Arguments:
        hits: :class:`~hmmcascade.results.Hit` objects (any models, any targets).
        families: :func:`~hmmcascade.pfam_dat.read_pfam_dat`'s result, or None (no types, clans nor resolution).
        resolve_clan_overlap: False is pfam_scan's ``-clan_overlap`` (keep overlapping clan members).

    Raises:
        TypeError, ValueError: one line naming the bad hit.
    """
    per_seq: dict[str, list[DomainUnit]] = {}
    for i, h in enumerate(hits):
        if not isinstance(h, Hit):
            raise TypeError(f"hits[{i}]: expected a hmmcascade.results.Hit, got {type(h).__name__}")
        if not h.reported:
            continue
        for d in h.domains:
            if d.reported:
                if not 1 <= d.ali_from <= d.ali_to or not 1 <= d.env_from <= d.env_to:
                    raise ValueError(f"hit {h.model_name} x {h.target_name}: domain coordinates ali {d.ali_from}-"
                                     f"{d.ali_to}, env {d.env_from}-{d.env_to} are not 1-based ranges")
                per_seq.setdefault(h.target_name, []).append(DomainUnit(
                    h.model, h.model_name, h.model_acc, h.model_length, h.target_name, h.target_length, h.score,
                    h.included, d.env_from, d.env_to, d.score, d.i_evalue, d.included, d.hmm_from, d.hmm_to,
                    d.ali_from, d.ali_to))
    return unit_annotations(per_seq, families, resolve_clan_overlap=resolve_clan_overlap)


def unit_annotations(per_seq: dict[str, list[DomainUnit]], families: dict[str, PfamFamily] | None = None, *,
                     resolve_clan_overlap: bool = True) -> list[DomainAnnotation]:
    """:func:`pfam_domains` of the proteins' domain units ``per_seq`` (by protein name, each protein's in
    model order or any order: sorted here as hmmsearch's output lists them)."""
    families = families or {}
    out = []
    for seq_id in sorted(per_seq, key=lambda s: s.encode("utf-8", "surrogateescape")):
        units = sorted(per_seq[seq_id], key=attrgetter("model"))  # hmmsearch output order: models, then domains
        if families and resolve_clan_overlap:
            units = _remove_overlaps_by_clan(units, families)
        for u in sorted(units, key=attrgetter("ali_from")):
            out.append(_annotation(u, families.get(u.model_name)))
    return out


def _remove_overlaps_by_clan(units: list[DomainUnit], families) -> list[DomainUnit]:
    """``HMMResults::remove_overlaps_by_clan``: best E-value first, same-clan overlaps dropped unless nested."""
    kept: list[DomainUnit] = []
    for u in sorted(units, key=lambda u: float("%.2g" % u.i_evalue)):
        fam = families.get(u.model_name)
        clash = False
        for k in kept:
            other = families.get(k.model_name)
            if fam and other and fam.clan and fam.clan == other.clan and _overlap(u, k):
                if k.model_name in fam.nested:
                    continue
                clash = True
                break
        if not clash:
            kept.append(u)
    return kept


def _overlap(a: DomainUnit, b: DomainUnit) -> bool:
    """pfam_scan's ``overlap``: the alignments share at least one residue."""
    first, second = sorted((a, b), key=attrgetter("ali_from"))
    return second.ali_from <= first.ali_to


def _annotation(u: DomainUnit, fam: PfamFamily | None) -> DomainAnnotation:
    if fam is not None and fam.ga_seq_bits is not None:
        significant = float("%.1f" % u.score) >= fam.ga_seq_bits and float("%.1f" % u.dom_score) >= fam.ga_dom_bits
    else:
        significant = u.included and u.dom_included
    return DomainAnnotation(
        seq_id=u.target_name, seq_length=u.target_length, ali_from=u.ali_from, ali_to=u.ali_to,
        env_from=u.env_from, env_to=u.env_to, hmm_acc=u.model_acc or (fam.accession if fam else "") or "-",
        hmm_name=u.model_name, type=(fam.type if fam else "") or "-", hmm_from=u.hmm_from, hmm_to=u.hmm_to,
        hmm_length=u.model_length, bits=u.dom_score, evalue=u.i_evalue, significant=significant,
        clan=(fam.clan if fam else "") or "No_clan")


def write_pfam_scan(path, hits, families: dict[str, PfamFamily] | None = None, *, resolve_clan_overlap: bool = True,
                    significant_only: bool = False, name_width: int | None = None) -> None:
    """pfam_scan.pl's per-protein domain table (``write_ascii_out``), one line per domain.

    Columns and formats are pfam_scan's (``%-Ns %6d %6d %6d %6d %-11s %-16s %7s %5d %5d %5d %8s %9s %3d
    %-8s``, with its trailing space), bit score and E-value as hmmsearch prints them (``%.1f``, ``%.2g``).

    Arguments:
        significant_only: keep only significance-1 lines, as pfam_scan does in its default GA mode.
        name_width: the sequence-id column width; pfam_scan uses the longest id of the whole FASTA
            file, the default here is the longest id written.
        Others as :func:`pfam_domains`.
    """
    _write_annotations(path, "pfamscan", hits, families, resolve_clan_overlap, significant_only=significant_only,
                       name_width=name_width)


def _pfam_scan_head(resolved: bool, note: str | None = None, significant_only: bool = False) -> list[str]:
    made_by = [f"#               thresholds: {note}",
               f"#                  domains: {'significant only' if significant_only else 'all reported'}"] if note else []
    return [
        f"# hmmcascade {__version__}: pfam_scan.pl-style domain table",
        "#",
        f"#    resolve clan overlaps: {'on' if resolved else 'off'}",
        "#     predict active sites: off",
        *made_by,
        "# = = = = = = = = = = = = = = = = = = = = = = = = = = = = = = = = = = = = = = = =",
        "#",
        _COLUMNS,
        "",
    ]


def _pfam_scan_rest(a: DomainAnnotation) -> str:
    """A pfam_scan line after its sequence-id column."""
    return " %6d %6d %6d %6d %-11s %-16s %7s %5d %5d %5d %8s %9s %3d %-8s " % (
        a.ali_from, a.ali_to, a.env_from, a.env_to, a.hmm_acc, a.hmm_name, a.type,
        a.hmm_from, a.hmm_to, a.hmm_length, "%.1f" % a.bits, "%.2g" % a.evalue, int(a.significant), a.clan)


def write_gff3(path, hits, families: dict[str, PfamFamily] | None = None, *, resolve_clan_overlap: bool = True,
               significant_only: bool = False) -> None:
    """The domains of :func:`write_pfam_scan` as GFF3 (``##gff-version 3``).

    Each protein with domains gets a ``##sequence-region`` line and one ``polypeptide`` (SO:0000104)
    feature spanning it (1 to its length; ``ID=protein:<seqid>``, ``Name=<seqid>``), and each domain
    one ``protein_match`` (SO:0000349) feature, its child (``Parent``): seqid the target name, source
    ``hmmcascade``, start/end the alignment coordinates (1-based, inclusive, as pfam_scan and
    InterProScan report), score the domain bit score, strand and phase ``.``.  A domain's
    attributes: ``ID=domain:<seqid>:<k>`` (k: 1, 2, ... along the protein; IDs are unique in the
    file, since a protein's rows all come together and k ends each domain's ID), ``Parent``,
    ``Name`` (model name), ``Target=<model name> <hmm start> <hmm end>`` (the GFF3 specification's
    alignment target), ``Dbxref=Pfam:PFnnnnn`` (for Pfam accessions, version dropped),
    ``accession``, ``evalue`` (independent), ``hmm_start``/``hmm_end``/``hmm_length``,
    ``env_start``/``env_end``, ``significant``, and ``type``/``clan`` when family data are given.
    Text is escaped as the GFF3 specification asks.
    """
    _write_annotations(path, "gff3", hits, families, resolve_clan_overlap, significant_only=significant_only)


def _gff3_lines(a: DomainAnnotation, k: int) -> list[str]:
    """Domain ``k`` (1, 2, ...) of its protein; the protein's region and polypeptide first when ``k`` is 1.
    (Only text is escaped: the numbers' characters are all safe.  The protein's and the model's escaped
    text is made once each: :func:`_gff3_protein`, :func:`_gff3_model`.)"""
    seqid, attr_id = _gff3_protein(a.seq_id)
    out = []
    if k == 1:
        out.append(f"##sequence-region {seqid} 1 {a.seq_length}")
        out.append("\t".join([seqid, "hmmcascade", "polypeptide", "1", str(a.seq_length), ".", ".", ".",
                              f"ID=protein:{attr_id};Name={attr_id}"]))
    target, refs, tail = _gff3_model(a.hmm_name, a.hmm_acc, a.type, a.clan)
    out.append(f"{seqid}\thmmcascade\tprotein_match\t{a.ali_from}\t{a.ali_to}\t{'%.1f' % a.bits}\t.\t.\t"
               f"ID=domain:{attr_id}:{k};Parent=protein:{attr_id};{target} {a.hmm_from} {a.hmm_to}{refs};"
               f"evalue={a.evalue:.2g};hmm_start={a.hmm_from};hmm_end={a.hmm_to};hmm_length={a.hmm_length};"
               f"env_start={a.env_from};env_end={a.env_to};significant={int(a.significant)}{tail}")
    return out


@lru_cache(maxsize=4096)
def _gff3_protein(seq_id: str) -> tuple[str, str]:
    """:func:`~hmmcascade.gff3.gff3_ids` of a protein (its domains' lines come together)."""
    return gff3_ids(seq_id)


@lru_cache(maxsize=1 << 16)
def _gff3_model(hmm_name: str, hmm_acc: str, type_: str, clan: str) -> tuple[str, str, str]:
    """A model's attributes of its domains' lines, escaped: ``Name=<name>;Target=<name>`` (the Target's hmm
    coordinates follow it), ``;Dbxref=...;accession=...`` and ``;type=...;clan=...`` (each part empty where
    the model has none)."""
    name = escape(hmm_name, attr_safe)
    # (Target's value is "<id> <start> <end>": spaces in the id escaped too)
    target = f"Name={name};Target={name.replace(' ', '%20')}"
    pfam = PFAM_ACCESSION.match(hmm_acc)
    refs = (f";Dbxref=Pfam:{pfam.group(0)}" if pfam else "") + \
        (f";accession={escape(hmm_acc, attr_safe)}" if hmm_acc != "-" else "")
    tail = (f";type={escape(type_, attr_safe)}" if type_ != "-" else "") + \
        (f";clan={escape(clan, attr_safe)}" if clan != "No_clan" else "")
    return target, refs, tail


_CUT_NAMES = {"ga": "gathering", "tc": "trusted", "nc": "noise"}


def thresholds_note(th, Z: float) -> str:
    """The reporting thresholds and search space of a search, as hmmsearch's options, for a table's
    comment: e.g. ``--cut_ga (each model's gathering cutoffs); Z = 2000`` or ``-E 10 --domE 10 --incE
    0.01 --incdomE 0.01; Z = 300``.  ``th``: a :class:`~hmmcascade.reporting.Thresholds`."""
    if th.cut:
        text = f"--cut_{th.cut} (each model's {_CUT_NAMES[th.cut]} cutoffs)"
    else:
        parts = [f"-T {th.T:g}" if th.T is not None else f"-E {th.E:g}"]
        for e_name, t_name in (("domE", "domT"), ("incE", "incT"), ("incdomE", "incdomT")):
            t = getattr(th, t_name)
            parts.append(f"--{t_name} {t:g}" if t is not None else f"--{e_name} {getattr(th, e_name):g}")
        text = " ".join(parts)
    if th.domZ:
        text += f"; domZ = {th.domZ:g}"
    return f"{text}; Z = {Z:g}"


def padded_pfam_scan_lines(lines, width: int):
    """pfam_scan's lines as an :class:`AnnotationStream` spools them (``id NUL rest``), their ids padded to
    ``width``."""
    for line in lines:
        seq_id, _, rest = line.partition("\0")
        yield "%-*s" % (width, seq_id) + rest


class AnnotationStream:
    """One per-protein output written as its proteins come, in :func:`pfam_domains` order.

    ``kind``: ``pfamscan``, ``gff3``, ``ipr_tsv`` or ``protein_summary`` (the writers above and
    below, with their options as keywords).  :meth:`start` takes the text file, :meth:`add` the
    next :class:`DomainAnnotation` rows (all of a protein's rows in one call, or in consecutive
    calls), :meth:`close` finishes.  pfam_scan's id column is as wide as the longest id written,
    known only at the end: its lines wait in a temporary file until :meth:`close` (a line at a
    time, so memory stays small), unless ``name_width`` is given.

    ``part``: this stream writes one part of the output (whole proteins, :meth:`add_part` of the
    stream of the whole): no header, and pfam_scan's lines as ``id NUL rest`` with :attr:`width`
    the widest id, for the whole's stream to pad.

    ``note``: the thresholds and Z that made the table (:func:`thresholds_note`), written as a
    comment in the header of pfam_scan's table, GFF3 (after ``##gff-version``) and the protein
    summary (a ``#`` line before the column names); InterProScan's TSV has no header, so no note.
    """

    def __init__(self, kind: str, families: dict[str, PfamFamily] | None = None, *, resolve_clan_overlap: bool = True,
                 significant_only: bool | None = None, name_width: int | None = None, md5s=None,
                 descriptions: dict[str, str] | None = None, date: str | None = None, part: bool = False,
                 note: str | None = None):
        import time as _time

        if kind not in ("pfamscan", "gff3", "ipr_tsv", "protein_summary"):
            raise ValueError(f"AnnotationStream: unknown kind {kind!r}")
        self.kind, self.families = kind, families or {}
        self.resolved = bool(families) and resolve_clan_overlap
        self.significant_only = (kind == "ipr_tsv") if significant_only is None else significant_only
        self.name_width, self.md5s, self.descriptions = name_width, md5s or {}, descriptions or {}
        self.date = date or _time.strftime("%d-%m-%Y")
        self.fh = None
        self._spool = None
        self._width = 1
        self.part = part
        self.note = note
        self._last_seq = None
        self._domain_k = 0  #: GFF3: the number of the last domain written of protein _last_seq
        self._protein: list[DomainAnnotation] = []

    @property
    def width(self) -> int:
        """pfam_scan: the widest id so far."""
        return self._width

    def start(self, fh) -> None:
        self.fh = fh
        if self.part:
            if self.kind == "pfamscan":
                self._spool = fh  # (the part's lines, ids unpadded)
            return
        if self.kind == "pfamscan":
            self._write(_pfam_scan_head(self.resolved, self.note, self.significant_only))
            if self.name_width is None:
                import tempfile

                self._spool = tempfile.TemporaryFile("w+", encoding="utf-8", errors="surrogateescape", newline="")
        elif self.kind == "gff3":
            self._write(["##gff-version 3"] + self._note_lines())
        elif self.kind == "protein_summary":
            self._write(self._note_lines() + ["protein\tlength\tdomains\tarchitecture\taccessions\tclans"])

    def add(self, rows) -> None:
        rows = [a for a in rows if a.significant or not self.significant_only]
        lines: list[str] = []
        if self.kind == "pfamscan":
            if self._spool is not None:
                for a in rows:
                    self._width = max(self._width, len(a.seq_id))
                    self._spool.write(a.seq_id + "\0" + _pfam_scan_rest(a) + "\n")
                return
            lines = ["%-*s" % (self.name_width, a.seq_id) + _pfam_scan_rest(a) for a in rows]
        elif self.kind == "gff3":
            for a in rows:
                self._domain_k = self._domain_k + 1 if a.seq_id == self._last_seq else 1
                self._last_seq = a.seq_id
                lines += _gff3_lines(a, self._domain_k)
        elif self.kind == "ipr_tsv":
            lines = [self._ipr_line(a) for a in rows]
        else:
            for a in rows:
                if self._protein and a.seq_id != self._protein[0].seq_id:
                    lines.append(protein_summary_line(self._protein))
                    self._protein = []
                self._protein.append(a)
        self._write(lines)

    def add_part(self, path: str, width: int = 1) -> None:
        """Append a part written by a ``part`` stream of the same kind (text file ``path``; ``width``:
        its :attr:`width`), whose proteins all follow those written so far."""
        with open(path, encoding="utf-8", errors="surrogateescape", newline="") as part:
            if self.kind == "pfamscan" and self._spool is not None:
                self._width = max(self._width, width)
                shutil.copyfileobj(part, self._spool, 1 << 20)
            elif self.kind == "pfamscan":  # (a known width: the part's ids padded here)
                self.fh.writelines(padded_pfam_scan_lines(part, self.name_width))
            else:
                self._protein_done()
                shutil.copyfileobj(part, self.fh, 1 << 20)

    @property
    def pads_at_close(self) -> bool:
        """pfam_scan's table of unknown id width: its lines wait until :meth:`close` pads them
        (:meth:`add_padded_parts` takes parts padded elsewhere)."""
        return self.kind == "pfamscan" and not self.part and self._spool is not None

    def add_padded_parts(self, paths: list[str], width: int) -> None:
        """The last parts (whole proteins, in order) as finished lines, their ids padded to ``width``,
        the widest of all (at least :attr:`width`); the files are removed.  The table is complete:
        the lines waiting (those of :meth:`add`) are written first, padded to ``width``."""
        self._width = max(self._width, width)
        self._write_spool()
        for path in paths:
            with open(path, encoding="utf-8", errors="surrogateescape", newline="") as part:
                shutil.copyfileobj(part, self.fh, 1 << 20)
            os.unlink(path)

    def _note_lines(self) -> list[str]:
        if not self.note:
            return []
        listed = "significant domains" if self.significant_only else "all reported domains"
        return [f"# hmmcascade {__version__}: {listed}; thresholds: {self.note}"]

    def _protein_done(self) -> None:
        if self._protein:
            self._write([protein_summary_line(self._protein)])
            self._protein = []

    def close(self) -> None:
        if self.part:
            self._spool = None
            self._protein_done()
            return
        self._write_spool()
        self._protein_done()

    def _write_spool(self) -> None:
        """pfam_scan's waiting lines (:meth:`add`, :meth:`add_part`), their ids padded to :attr:`width`."""
        if self._spool is not None:
            self._spool.seek(0)
            self.fh.writelines(padded_pfam_scan_lines(self._spool, self._width))
            self._spool.close()
            self._spool = None

    def _ipr_line(self, a: DomainAnnotation) -> str:
        fam = self.families.get(a.hmm_name)
        desc = (fam.description if fam else "") or self.descriptions.get(a.hmm_name) or a.hmm_name
        cols = [a.seq_id, self.md5s.get(a.seq_id, "-"), a.seq_length, "Pfam", a.hmm_acc.split(".")[0], desc,
                a.env_from, a.env_to, _java_e(a.evalue), "T", self.date, "-", "-"]
        return "\t".join(" ".join(str(c).split()) for c in cols)

    def _write(self, lines: list[str]) -> None:
        if lines:
            self.fh.write("\n".join(lines) + "\n")


def protein_summary_line(doms: list[DomainAnnotation]) -> str:
    """The protein summary's line of one protein's domains (all its rows, in :func:`pfam_domains` order)."""
    clans = sorted({a.clan for a in doms if a.clan != "No_clan"})
    return "\t".join([doms[0].seq_id, str(doms[0].seq_length), str(len(doms)), " ".join(a.hmm_name for a in doms),
                      " ".join(a.hmm_acc for a in doms), " ".join(clans) or "-"])


def _write_annotations(path, kind, hits, families, resolve_clan_overlap, **kw) -> None:
    from .outfiles import open_output

    stream = AnnotationStream(kind, families, resolve_clan_overlap=resolve_clan_overlap, **kw)
    rows = pfam_domains(hits, families, resolve_clan_overlap=resolve_clan_overlap)
    with open_output(path) as fh:
        stream.start(fh)
        stream.add(rows)
        stream.close()


#: InterProScan 5's TSV columns (its documentation, docs/OutputFormats.rst: "Tab-separated values
#: format"), 1-13; the optional GO and pathway columns (14, 15) are not written
IPR_COLUMNS = ("protein_accession", "sequence_md5", "sequence_length", "analysis", "signature_accession",
               "signature_description", "start", "stop", "score", "status", "date", "interpro_accession",
               "interpro_description")
#: Easel's amino alphabet: a digital residue code's letter (hmmcascade.io.SequenceSet holds codes)
_AMINO = "ACDEFGHIKLMNPQRSTVWY-BJZOUX*~"


def sequence_md5s(seqs) -> dict[str, str]:
    """Each sequence's MD5 (hex) of its upper-case residues, as InterProScan's column 2, by name;
    ``seqs``: :class:`~hmmcascade.io.SequenceSet` objects (or one)."""
    import hashlib

    import numpy as np

    table = np.frombuffer(_AMINO.encode(), dtype=np.uint8)
    out = {}
    for s in [seqs] if hasattr(seqs, "residues") else seqs:
        letters = table[np.minimum(s.residues, len(_AMINO) - 1)].tobytes()
        for name, o, n in zip(s.names, s.offsets.tolist(), s.lengths.tolist()):
            out[str(name)] = hashlib.md5(letters[o: o + n]).hexdigest()
    return out


def _java_e(x: float) -> str:
    """An E-value as InterProScan's TSV prints it: one decimal, exponent unpadded (7.9E-43, 0.0)."""
    if x == 0:
        return "0.0"
    mantissa, _, exponent = f"{x:.1E}".partition("E")
    return f"{mantissa}E{int(exponent)}"


def write_interproscan_tsv(path, hits, families: dict[str, PfamFamily] | None = None, *, md5s=None,
                           descriptions: dict[str, str] | None = None, date: str | None = None,
                           resolve_clan_overlap: bool = True, significant_only: bool = True) -> None:
    """The domains of :func:`pfam_domains` in InterProScan 5's TSV layout (:data:`IPR_COLUMNS`), as
    its Pfam analysis reports them: analysis ``Pfam``, the accession without version, start and
    stop the envelope (InterProScan's Pfam locations), score the domain's independent E-value,
    status ``T``, the date of the run (DD-MM-YYYY), ``-`` for the InterPro columns (no InterPro
    data here) and where an MD5 is not known (``md5s``: :func:`sequence_md5s`).  By default only
    significant domains (gathering thresholds, as InterProScan's Pfam filter).  No header line, as
    InterProScan writes none."""
    _write_annotations(path, "ipr_tsv", hits, families, resolve_clan_overlap, significant_only=significant_only,
                       md5s=md5s, descriptions=descriptions, date=date)


def write_protein_summary(path, hits, families: dict[str, PfamFamily] | None = None, *,
                          resolve_clan_overlap: bool = True, significant_only: bool = False) -> None:
    """One line per protein with domains (:func:`pfam_domains`): its length, number of domains, the
    domain architecture (model names in order of alignment start, space-separated), their
    accessions in that order, and its clans (sorted, ``-`` for none); proteins sorted by name.
    A header line names the columns."""
    _write_annotations(path, "protein_summary", hits, families, resolve_clan_overlap,
                       significant_only=significant_only)
