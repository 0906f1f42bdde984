"""Index arithmetic over segments: many variable-length runs laid end to end in one flat array.

Segment n of a batch starts at ``segment_starts(lengths)[n]``; the element indices of several
segments together are :func:`segment_ranges`; :func:`segment_blocks` cuts a long list of segments
into consecutive groups, so that per-element temporaries stay small.  Every function takes and
gives int64 numpy arrays and has no float arithmetic (the stages' float sums are
:mod:`hmmcascade.domaindef.numerics`).
"""

from __future__ import annotations

import numpy as np

__all__ = ["segment_blocks", "segment_ranges", "segment_starts"]


def segment_starts(lengths: np.ndarray) -> np.ndarray:
    """Start offsets of consecutive segments of the given lengths."""
    out = np.zeros(len(lengths), dtype=np.int64)
    if len(lengths) > 1:
        np.cumsum(lengths[:-1], out=out[1:])
    return out


def segment_blocks(lengths: np.ndarray, size: int = 1 << 18):
    """Consecutive segment ranges (a, b) of about ``size`` elements in all (at least one segment each),
    so that per-element temporaries stay small."""
    end = np.cumsum(lengths)
    a = 0
    while a < len(lengths):
        b = max(a + 1, int(np.searchsorted(end, end[a] - lengths[a] + size, side="right")))
        yield a, b
        a = b


def segment_ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Concatenated ``arange(starts[n], starts[n] + lengths[n])`` over n."""
    lengths = np.asarray(lengths, dtype=np.int64)
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    offset = np.asarray(starts, dtype=np.int64) - segment_starts(lengths)
    return np.repeat(offset, lengths) + np.arange(total, dtype=np.int64)

