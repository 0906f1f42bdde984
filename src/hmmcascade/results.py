"""Hit and domain records: what ``hmmsearch`` reports for one (model, target) pair.

Filled by :mod:`hmmcascade.domains` (domain definition on cascade survivors),
written by :mod:`hmmcascade.output` (tblout, domtblout, alignments) and
:mod:`hmmcascade.annotate` (pfam_scan table, GFF3).  Coordinates are 1-based
and inclusive, as in HMMER's tables.  Scores are in bits unless the field
name says nats.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Alignment:
    """One domain's alignment display (HMMER's P7_ALIDISPLAY)."""

    hmm_from: int
    hmm_to: int
    ali_from: int  #: first target residue aligned to a match state
    ali_to: int
    model_line: str  #: model consensus; '.' for insert columns
    match_line: str  #: identical residue, '+' for a positive score, ' ' otherwise
    target_line: str  #: upper case for match, lower case for insert, '-' for delete
    pp_line: str  #: posterior probability per column: '0'-'9', '*' (>= 0.95), '.' for delete
    M: int  #: model length
    L: int  #: target length
    rf_line: str | None = None  #: model reference annotation, when the model has one
    cs_line: str | None = None  #: model consensus structure, when the model has one


@dataclass
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


@dataclass
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
    domains: list[Domain] = field(default_factory=list)

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
    """Write hits (with domains) as gzipped JSON, atomically."""
    import gzip
    import json
    import os
    from pathlib import Path

    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    with gzip.open(tmp, "wt") as fh:
        json.dump({"format": "hmmcascade-hits/1", "meta": meta or {}, "hits": [hit_to_dict(h) for h in hits]}, fh)
    os.replace(tmp, path)


def load_hits(path) -> tuple[list[Hit], dict]:
    """Read a file written by :func:`save_hits`; returns (hits, meta)."""
    import gzip
    import json

    try:
        with gzip.open(path, "rt") as fh:
            data = json.load(fh)
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: not an hmmcascade hits file ({exc})") from None
    if not isinstance(data, dict) or data.get("format") != "hmmcascade-hits/1":
        raise ValueError(f"{path}: not an hmmcascade hits file")
    return [hit_from_dict(h) for h in data["hits"]], data.get("meta", {})
