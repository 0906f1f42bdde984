"""``Pfam-A.hmm.dat``: Pfam's family data (type, clan, nesting, gathering thresholds) by model name.

pfam_scan.pl reads the family type and clan of each model from ``Pfam-A.hmm.dat``, the
Stockholm-style file that comes with ``Pfam-A.hmm``.  :func:`read_pfam_dat` reads it
(``#=GF ID``, ``AC``, ``DE``, ``GA``, ``TP``, ``ML``, ``NE``, ``CL`` per family record, ``//``
between records; gzipped or plain) into :class:`PfamFamily` records, by ID (model name); ``NE``
(nested families) holds in both directions.  A fault in the file is one
:class:`~hmmcascade.io.InputError` line naming the file and, where there is one, the line.  The
per-protein tables (:mod:`hmmcascade.annotate`) take their types, clans, clan-overlap rule and
significance from these records.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from .io import InputError, check_input_file, open_input

__all__ = ["PfamFamily", "read_pfam_dat"]


@dataclass(frozen=True)
class PfamFamily:
    """One ``Pfam-A.hmm.dat`` record."""

    id: str  #: ``#=GF ID``, the model name
    accession: str = ""  #: ``#=GF AC``, e.g. PF02826.20
    description: str = ""  #: ``#=GF DE``
    type: str = ""  #: ``#=GF TP``: Domain, Family, Repeat, Motif, Coiled-coil, Disordered
    model_length: int = 0  #: ``#=GF ML``
    clan: str = ""  #: ``#=GF CL``, e.g. CL0063; "" when the family is in no clan
    nested: frozenset[str] = frozenset()  #: IDs of families allowed to overlap it (``NE``, both directions)
    ga_seq_bits: float | None = None  #: ``#=GF GA`` sequence gathering threshold
    ga_dom_bits: float | None = None  #: ``#=GF GA`` domain gathering threshold


_GA = re.compile(r"(\S+);\s+(\S+);")


def read_pfam_dat(path) -> dict[str, PfamFamily]:
    """Families of a ``Pfam-A.hmm.dat`` file, by ID (model name).

    Raises:
        InputError: (a ValueError) one line naming the file and the line number of the fault.
    """
    path = Path(path)
    check_input_file(path, "Pfam-A.hmm.dat")
    with open_input(path) as fh:
        text = fh.read().decode("utf-8", errors="replace")
    records: list[dict] = []
    current: dict | None = None
    for n, line in enumerate(text.splitlines(), 1):
        line = line.rstrip()
        if not line or line.startswith("# STOCKHOLM"):
            continue
        if line == "//":
            if current is None or "ID" not in current:
                raise InputError(f"{path}: line {n}: record ends without a #=GF ID line")
            records.append(current)
            current = None
            continue
        fields = line.split(None, 2)
        if len(fields) < 3 or fields[0] != "#=GF":
            raise InputError(f"{path}: line {n}: not a Pfam-A.hmm.dat line: {line[:60]!r}")
        tag, value = fields[1], fields[2]
        if tag == "ID":
            if current is not None:
                raise InputError(f"{path}: line {n}: #=GF ID {value} before the previous record's //")
            current = {"ID": value.split()[0], "NE": set(), "line": n}
        elif current is None:
            raise InputError(f"{path}: line {n}: #=GF {tag} outside a record (no #=GF ID before it)")
        else:
            _read_tag(path, n, current, tag, value)
    if current is not None:
        raise InputError(f"{path}: truncated: the record of {current['ID']} has no closing //")
    if not records:
        raise InputError(f"{path}: no Pfam family records")
    nested: dict[str, set[str]] = {}
    for r in records:
        for other in r["NE"]:
            nested.setdefault(r["ID"], set()).add(other)
            nested.setdefault(other, set()).add(r["ID"])
    families: dict[str, PfamFamily] = {}
    for r in records:
        if r["ID"] in families:
            raise InputError(f"{path}: line {r['line']}: family {r['ID']} appears twice")
        families[r["ID"]] = PfamFamily(r["ID"], r.get("AC", ""), r.get("DE", ""), r.get("TP", ""), r.get("ML", 0),
                                       r.get("CL", ""), frozenset(nested.get(r["ID"], ())), *r.get("GA", (None, None)))
    return families


def _read_tag(path: Path, n: int, record: dict, tag: str, value: str) -> None:
    if tag in ("AC", "TP", "CL"):
        record[tag] = value.split()[0]
    elif tag == "DE":
        record[tag] = value
    elif tag == "NE":
        record["NE"].add(value.split()[0].rstrip(";"))
    elif tag == "ML":
        if not value.isdigit():
            raise InputError(f"{path}: line {n}: #=GF ML must be a model length, got {value!r}")
        record[tag] = int(value)
    elif tag == "GA":
        m = _GA.match(value)
        try:
            record[tag] = (float(m.group(1)), float(m.group(2)))
        except (AttributeError, ValueError):
            raise InputError(f"{path}: line {n}: #=GF GA must read '<seq bits>; <dom bits>;', got {value!r}") from None
