"""Hit and domain records: what ``hmmsearch`` reports for one (model, target) pair.

Filled by :mod:`hmmcascade.domaindef` (domain definition on cascade survivors),
written by :mod:`hmmcascade.output` (tblout, domtblout, alignments) and
:mod:`hmmcascade.annotate` (pfam_scan table, GFF3).  Coordinates are 1-based
and inclusive, as in HMMER's tables.  Scores are in bits unless the field
name says nats.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import compress
from operator import attrgetter


@contextmanager
def gc_paused(freeze: bool = False):
    """Cyclic garbage collection off while many records are made at once.

    Each automatic collection would walk every live object (a search holds millions); the
    records form no reference cycles, so nothing is lost by collecting after the burst.

    ``freeze``: on leaving, every object alive is moved to the collector's permanent generation
    (``gc.freeze``) before collection is turned back on.  Otherwise the first automatic full
    collection after a search walks all its records (0.3 s for dev-x10's 244,210 hits), and
    every later one again.  Frozen objects are still freed by reference counting; only reference
    cycles among them would never be collected, and the records have none.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if freeze:
            gc.freeze()
        if enabled:
            gc.enable()


class _Line:
    """An :class:`Alignment` text line: a descriptor-typed dataclass field, decoded on first access.

    The value lives in the slot ``_<name>``.  An alignment made by :meth:`Alignment.from_lines`
    starts without it and decodes it from its batch's :class:`AlignmentLines` when first read,
    then keeps it; assigning sets it as usual.  ``optional`` lines (RF, CS) default to None.
    """

    def __init__(self, optional: bool = False):
        self.optional = optional

    def __set_name__(self, owner, name):
        self.name, self.key = name, "_" + name

    def __get__(self, obj, owner=None):
        if obj is None:  # class access: the field's default, or no default (AttributeError)
            if self.optional:
                return None
            raise AttributeError(self.name)
        try:
            return getattr(obj, self.key)
        except AttributeError:
            value = obj._lines.text(obj._index, self.name)
            setattr(obj, self.key, value)
            return value

    def __set__(self, obj, value):
        setattr(obj, self.key, value)


#: the text lines of an :class:`Alignment`, in field order
LINE_FIELDS = ("model_line", "match_line", "target_line", "pp_line", "rf_line", "cs_line")


@dataclass
class Alignment:
    """One domain's alignment display (HMMER's P7_ALIDISPLAY).

    The lines are ordinary attributes (read, assign, compare, pickle).  Alignments made in
    bulk by domain definition (:meth:`from_lines`) decode them from their batch's
    :class:`AlignmentLines` only when they are first read.
    """

    __slots__ = ("hmm_from", "hmm_to", "ali_from", "ali_to", "M", "L", "_lines", "_index") + tuple(
        "_" + name for name in LINE_FIELDS)

    hmm_from: int
    hmm_to: int
    ali_from: int  #: first target residue aligned to a match state
    ali_to: int
    model_line: str = _Line()  #: model consensus; '.' for insert columns
    match_line: str = _Line()  #: identical residue, '+' for a positive score, ' ' otherwise
    target_line: str = _Line()  #: upper case for match, lower case for insert, '-' for delete
    pp_line: str = _Line()  #: posterior probability per column: '0'-'9', '*' (>= 0.95), '.' for delete
    M: int  #: model length
    L: int  #: target length
    rf_line: str | None = _Line(optional=True)  #: model reference annotation, when the model has one
    cs_line: str | None = _Line(optional=True)  #: model consensus structure, when the model has one

    @classmethod
    def from_lines(cls, lines: "AlignmentLines", index: int, hmm_from: int, hmm_to: int, ali_from: int,
                   ali_to: int, M: int, L: int) -> "Alignment":
        """Alignment number ``index`` of ``lines``; its text is decoded when first read."""
        a = object.__new__(cls)
        a.hmm_from, a.hmm_to, a.ali_from, a.ali_to, a.M, a.L, a._lines, a._index = (
            hmm_from, hmm_to, ali_from, ali_to, M, L, lines, index)
        return a

    def __getstate__(self) -> dict:
        """Pickled and copied with its text decoded, without the batch's line arrays."""
        return {name: getattr(self, name) for name in self.__dataclass_fields__}

    def __setstate__(self, state: dict) -> None:
        for name, value in state.items():
            setattr(self, name, value)


class AlignmentLines:
    """The text lines of many alignments, as one byte string per kind of line.

    ``model``, ``match``, ``target``, ``pp``: ASCII bytes, alignment ``n`` at columns
    ``start[n]:end[n]``.  ``rf`` and ``cs``: the same columns (or None when no alignment has
    the line), with ``has_rf[n]`` / ``has_cs[n]`` saying whose model has one.

    :meth:`deferred` makes the lines only when one is first read: ``build()`` returns this
    constructor's keyword arguments (what it needs, such as traces, is released then).
    """

    __slots__ = ("model", "match", "target", "pp", "rf", "cs", "start", "end", "has_rf", "has_cs", "_build", "_arrow")

    def __init__(self, model: bytes, match: bytes, target: bytes, pp: bytes, start, end,
                 rf: bytes | None = None, cs: bytes | None = None, has_rf=None, has_cs=None):
        self._build, self._arrow = None, None
        self.model, self.match, self.target, self.pp = model, match, target, pp
        self.start, self.end = _int_list(start), _int_list(end)
        self.rf, self.cs = rf, cs
        self.has_rf = [bool(x) for x in _int_list(has_rf)] if rf is not None else None
        self.has_cs = [bool(x) for x in _int_list(has_cs)] if cs is not None else None

    @classmethod
    def deferred(cls, build) -> "AlignmentLines":
        """Lines made by ``build()`` (keyword arguments of the constructor) when first read."""
        lines = object.__new__(cls)
        lines._build = build
        return lines

    def built(self) -> "AlignmentLines":
        """These lines, made now if they were deferred."""
        if self._build is not None:
            build = self._build
            self.__init__(**build())
        return self

    def text(self, n: int, name: str) -> str | None:
        """Line ``name`` (an :data:`LINE_FIELDS` name) of alignment ``n``."""
        self.built()
        kind = name[:-5]
        if kind in ("rf", "cs"):
            data = self.rf if kind == "rf" else self.cs
            if data is None or not (self.has_rf if kind == "rf" else self.has_cs)[n]:
                return None
        else:
            data = getattr(self, kind)
        return data[self.start[n]: self.end[n]].decode("ascii")


def _int_list(values) -> list:
    """A list of Python ints (or bools) from a sequence or a numpy array."""
    return values.tolist() if hasattr(values, "tolist") else [int(x) for x in values]


@dataclass(slots=True)
class Domain:
    """One domain of a hit (HMMER's P7_DOMAIN), scored with null2 correction."""

    env_from: int
    env_to: int
    score: float  #: domain bit score
    bias: float  #: null2 correction of the domain, bits
    lnP: float  #: natural log of the domain P-value
    c_evalue: float  #: conditional E-value: P * domZ
    i_evalue: float  #: independent E-value: P * Z
    acc: float  #: mean posterior probability of the aligned residues, oasc / (1 + |env_to - env_from|)
    alignment: Alignment
    env_nats: float = 0.0  #: envelope Forward score (nats), unihit mode
    correction_nats: float = 0.0  #: sum of null2 log-odds over the envelope (nats)
    reported: bool = False
    included: bool = False

    @property
    def ali_from(self) -> int:
        return self.alignment.ali_from

    @property
    def ali_to(self) -> int:
        return self.alignment.ali_to

    @property
    def hmm_from(self) -> int:
        return self.alignment.hmm_from

    @property
    def hmm_to(self) -> int:
        return self.alignment.hmm_to


def reported_counts(hits) -> tuple[int, int]:
    """(reported hits, reported domains of reported hits) of a search's records, counted from
    their batches' flag arrays where the domains are a batch's (:class:`DomainList`), so that
    counting makes no Domain objects; domains of a hit not reported are never reported."""
    hits = hits if isinstance(hits, list) else list(hits)
    reported = list(compress(hits, map(attrgetter("reported"), hits)))
    lists = list(map(attrgetter("domains"), reported))
    if set(map(type, lists)) <= {DomainList}:  # (the usual case, in C-level loops: 0.06-0.1 s less on 222,867 hits)
        n_domains = reported_domains(set(map(attrgetter("_source"), lists)))
        if n_domains is not None:
            return len(reported), n_domains
    n_hits, n_domains, sources = 0, 0, {}
    for h in reported:
        n_hits += 1
        src = getattr(h.domains, "_source", None)
        if src is not None and hasattr(src, "reported"):
            sources[id(src)] = src
        else:
            n_domains += sum(d.reported for d in h.domains)
    return n_hits, n_domains + sum(int(src.reported.sum()) for src in sources.values())


def reported_domains(sources) -> int | None:
    """The reported domains of batches' domain sources, from their flag arrays (None where a source has none)."""
    sources = list(sources)
    if not all(hasattr(src, "reported") for src in sources):
        return None
    return sum(int(src.reported.sum()) for src in sources)


def make_domains_of(hits) -> None:
    """The Domain records of these hits made now, in bulk per batch and only theirs
    (:meth:`~hmmcascade.domaindef.records.DomainSource.make_some`), where none of their batch's are made
    yet: for a process that reads a run of queries' hits (a forked text worker), each of which would
    otherwise make every record of each batch it touches."""
    groups: dict[int, tuple] = {}
    for h in hits:
        d = getattr(h, "domains", None)
        if isinstance(d, DomainList) and hasattr(d._source, "make_some"):
            groups.setdefault(id(d._source), (d._source, []))[1].append(d._k)
    for source, ks in groups.values():
        source.make_some(ks)


#: what :func:`table_domains` gives of each domain, in order
TABLE_DOMAIN_FIELDS = ("reported", "included", "lnP", "score", "bias", "env_from", "env_to", "acc", "hmm_from",
                       "hmm_to", "ali_from", "ali_to", "M", "L")


def table_domains(hits) -> list[list[tuple]]:
    """Per hit, its domains' values that HMMER's tables print, a tuple each (:data:`TABLE_DOMAIN_FIELDS`;
    ``M`` and ``L`` are its alignment's): read from the batch's arrays where its Domain records are not
    made (``source.table_values``: a domain table of 335,889 rows needs none of their 2 x 335,889
    objects), else from the records."""
    out: list = [None] * len(hits)
    groups: dict[int, tuple] = {}
    for i, h in enumerate(hits):
        d = h.domains
        if isinstance(d, DomainList) and hasattr(d._source, "table_values"):
            g = groups.setdefault(id(d._source), (d._source, [], []))
            g[1].append(i)
            g[2].append(d._k)
        else:
            out[i] = [_table_values(x) for x in d]
    for source, at, ks in groups.values():
        values = source.table_values(ks)
        if values is None:  # (the batch's records are made: read them)
            values = [[_table_values(x) for x in hits[i].domains] for i in at]
        for i, v in zip(at, values):
            out[i] = v
    return out


def _table_values(d: Domain) -> tuple:
    a = d.alignment
    return (d.reported, d.included, d.lnP, d.score, d.bias, d.env_from, d.env_to, d.acc, a.hmm_from, a.hmm_to,
            a.ali_from, a.ali_to, a.M, a.L)


class DomainList(Sequence):
    """A hit's domains as a read-only sequence, made from its batch's arrays when first read.

    A search's records hold these instead of lists: the batch's Domain and Alignment objects
    (several per hit) are made all at once the first time any of its hits' domains is read
    (``source.hit(k)``, else ``source.lists()``: one list per hit of the batch), so a search that is
    only counted or sorted never makes them.  Equal to a list of the same domains; pickles and copies as a list."""

    __slots__ = ("_source", "_k", "_n")

    def __init__(self, source, k: int, n: int):
        self._source, self._k, self._n = source, k, n

    def _items(self) -> list:
        hit = getattr(self._source, "hit", None)
        return hit(self._k) if hit is not None else self._source.lists()[self._k]

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, i):
        return self._items()[i]

    def __iter__(self):
        return iter(self._items())

    def __eq__(self, other) -> bool:
        if isinstance(other, (list, DomainList)):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None

    def __repr__(self) -> str:
        return repr(self._items())

    def __reduce__(self):
        return list, (list(self),)


@dataclass(slots=True)
class Hit:
    """One (model, target) pair that met the reporting threshold (HMMER's P7_HIT)."""

    model: int  #: index into the ProfileDB
    target: int  #: index into the searched SequenceSet
    model_name: str
    model_acc: str  #: "" when the model has none
    model_length: int
    target_name: str
    target_acc: str  #: "" when absent
    target_desc: str  #: "" when absent
    target_length: int
    score: float  #: full-sequence bit score after null2 (HMMER's ``score``)
    pre_score: float  #: before null2 (``pre_score``)
    bias: float  #: pre_score - score
    lnP: float
    evalue: float  #: exp(lnP) * Z
    nexpected: float = 0.0  #: posterior expected number of domains
    nregions: int = 0
    nclustered: int = 0
    noverlaps: int = 0
    nenvelopes: int = 0
    best_domain: int = 0  #: index into ``domains`` of the best-scoring domain
    reported: bool = False
    included: bool = False
    domains: list[Domain] = field(default_factory=list)  #: a list, or (a search's records) a DomainList

    @property
    def ndom(self) -> int:
        return len(self.domains)

    @property
    def nreported(self) -> int:
        return sum(d.reported for d in self.domains)

    @property
    def nincluded(self) -> int:
        return sum(d.included for d in self.domains)


def hit_to_dict(hit: Hit) -> dict:
    """A JSON-ready dict of a hit with its domains and alignments."""
    d = {k: getattr(hit, k) for k in Hit.__dataclass_fields__ if k != "domains"}
    d["domains"] = []
    for dom in hit.domains:
        dd = {k: getattr(dom, k) for k in Domain.__dataclass_fields__ if k != "alignment"}
        dd["alignment"] = {k: getattr(dom.alignment, k) for k in Alignment.__dataclass_fields__}
        d["domains"].append(dd)
    return d


def hit_from_dict(d: dict) -> Hit:
    d = dict(d)
    doms = []
    for dd in d.pop("domains"):
        dd = dict(dd)
        ali = Alignment(**dd.pop("alignment"))
        doms.append(Domain(alignment=ali, **dd))
    return Hit(domains=doms, **d)


def save_hits(path, hits: list[Hit], meta: dict | None = None) -> None:
    """Write hits (with domains) as gzipped JSON (through :func:`~hmmcascade.outfiles.open_output`);
    :func:`hmmcascade.columnar.write_hit_file` writes them as a Parquet hit file."""
    import gzip
    import io
    import json

    from .outfiles import open_output

    with open_output(path, "wb") as raw:
        with gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz, \
                io.TextIOWrapper(gz, encoding="utf-8") as fh:
            json.dump({"format": "hmmcascade-hits/1", "meta": meta or {}, "hits": [hit_to_dict(h) for h in hits]}, fh)


def load_hits(path) -> tuple[list[Hit], dict]:
    """Read a file written by :func:`save_hits`; returns (hits, meta).  (Either format, told by its
    content: :func:`hmmcascade.merge.open_hit_source`.)

    Raises:
        ValueError: one line naming the file when it is missing, truncated, or not a hits file.
    """
    import gzip
    import json

    try:
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            data = json.load(fh)
    except FileNotFoundError:
        raise ValueError(f"{path}: hits file not found") from None
    except (OSError, EOFError, ValueError) as exc:  # not gzip, cut short, or not JSON
        raise ValueError(f"{path}: not an hmmcascade hits file ({' '.join(str(exc).split())})") from None
    if not isinstance(data, dict) or data.get("format") != "hmmcascade-hits/1":
        raise ValueError(f"{path}: not an hmmcascade hits file")
    try:
        return [hit_from_dict(h) for h in data["hits"]], data.get("meta", {})
    except (KeyError, TypeError, AttributeError) as exc:
        what = f"a hit record has no {exc} field" if isinstance(exc, KeyError) else " ".join(str(exc).split())
        raise ValueError(f"{path}: not a complete hmmcascade hits file ({what})") from None
