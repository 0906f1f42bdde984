"""GFF3 text: percent-encoding of seqids and attribute values, and Pfam's accession pattern.

The GFF3 specification keeps ``[a-zA-Z0-9.:^*$@!+_?-|]`` unescaped in column 1
(seqid) and asks column 9's values to escape ``; = & ,``, ``%`` itself, tabs, newlines and control
characters; escaped characters are written as ``%XX`` of their UTF-8 bytes (upper-case hex,
RFC 3986 style), a name's bytes that are not UTF-8 (read as surrogates) as the bytes themselves.
:func:`gff3_seqid` and :func:`gff3_attribute` escape a text for those places, :func:`gff3_ids` a
protein's name for both (cached: once per protein), :func:`escape` by any ``safe`` rule;
text with nothing to escape comes back as it is.  :data:`PFAM_ACCESSION` is a Pfam family
accession (GFF3's ``Dbxref=Pfam:PFnnnnn``).  The GFF3 writers are
:mod:`hmmcascade.annotate`'s (``protein_match`` features) and :mod:`hmmcascade.genome_split`'s.
"""

from __future__ import annotations

import functools
import re

__all__ = ["PFAM_ACCESSION", "gff3_seqid", "gff3_attribute", "gff3_ids", "attr_safe", "escape"]


#: a Pfam family accession (GFF3's Dbxref=Pfam:PFnnnnn)
PFAM_ACCESSION = re.compile(r"PF\d{5}")


def gff3_seqid(text: str) -> str:
    """``text`` percent-encoded for GFF3's column 1 (seqid)."""
    return escape(text, _seqid_safe)


def gff3_attribute(text: str) -> str:
    """``text`` percent-encoded for a GFF3 attribute's value."""
    return escape(text, attr_safe)


@functools.lru_cache(maxsize=4096)
def gff3_ids(seq_id: str) -> tuple[str, str]:
    """A protein's name escaped for GFF3's column 1 and for an attribute value (once per protein)."""
    return escape(seq_id, _seqid_safe), escape(seq_id, attr_safe)


def _seqid_safe(ch: str) -> bool:
    """GFF3 column 1 keeps [a-zA-Z0-9.:^*$@!+_?-|] unescaped."""
    return ch.isascii() and (ch.isalnum() or ch in ".:^*$@!+_?-|")


def attr_safe(ch: str) -> bool:
    """GFF3 column 9 values escape ; = & , (reserved), % itself, tab, newline and control characters, and a
    name's bytes that are not UTF-8 (read as surrogates: the IDs hold the protein names)."""
    return ch not in ";=&,%\t\n\r" and ord(ch) >= 0x20 and ch != "\x7f" and not "\udc80" <= ch <= "\udcff"


#: the characters each ``safe`` rule rejects, as one regular expression (a string with none is kept as is)
_UNSAFE = {}


def _unsafe_pattern(safe):
    if safe not in _UNSAFE:
        if safe is _seqid_safe:
            _UNSAFE[safe] = re.compile(r"[^a-zA-Z0-9.:^*$@!+_?\-|]")
        elif safe is attr_safe:
            _UNSAFE[safe] = re.compile("[;=&,%\t\n\r\x00-\x1f\x7f\udc80-\udcff]")
        else:
            _UNSAFE[safe] = None
    return _UNSAFE[safe]


def _percent(ch: str) -> str:
    return "".join(f"%{b:02X}" for b in ch.encode("utf-8", "surrogateescape"))


def escape(text: str, safe) -> str:
    """GFF3 percent-encoding (RFC 3986 style, upper-case hex) of every character ``safe`` rejects."""
    pattern = _unsafe_pattern(safe)
    if pattern is not None:
        if pattern.search(text) is None:  # (most text: kept as it is)
            return text
        return pattern.sub(lambda m: _percent(m.group()), text)
    return "".join(ch if safe(ch) else _percent(ch) for ch in text)
