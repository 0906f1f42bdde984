"""Hit files read back: a Parquet hit file (or a folder or list of them) read a range of models at a time.

:class:`HitFile` opens the files :mod:`hmmcascade.columnar` writes (their layout is described there),
checks their format and columns, and reads the row groups whose ``model`` statistics overlap a range
of models, as Arrow tables or as :class:`~hmmcascade.results.Hit` records (:func:`hits_from_table`, the
alignments' text kept as Arrow strings until first read).  :func:`is_hit_file` tells a hit file from
a JSON hits file.
"""

from __future__ import annotations

import json
import os

import numpy as np

from .columnar import ALI_FIELDS, DOM_FIELDS, FORMAT, HIT_FIELDS, META_KEY, ArrowLines, pyarrow_modules, schema
from .results import LINE_FIELDS, Alignment, Domain, Hit

__all__ = ["HitFile", "hits_from_table", "is_hit_file"]


def is_hit_file(path) -> bool:
    """Whether ``path`` starts as a Parquet file does (``PAR1``), or is a folder (of hit files:
    :class:`HitFile` says so if not)."""
    if os.path.isdir(path):
        return True
    try:
        with open(path, "rb") as fh:
            return fh.read(4) == b"PAR1"
    except OSError:
        return False


class HitFile:
    """A Parquet hit file, read a range of models at a time; or a folder of them (the workflow's
    merged hits: one file per shard of the models, in model order by name), read as one; or a list
    of files and folders, read as one in the list's order (``path`` then names them all, space-separated).

    Raises:
        ValueError: one line naming the file when it is missing, cut short or not a hit file.
    """

    def __init__(self, path):
        given = [os.fspath(p) for p in path] if isinstance(path, (list, tuple)) else [os.fspath(path)]
        if not given:
            raise ValueError("no hit files given")
        self.path = " ".join(given)
        paths = []
        for p in given:
            if os.path.isdir(p):
                files = sorted(os.path.join(p, n) for n in os.listdir(p) if n.endswith(".parquet"))
                if not files:
                    raise ValueError(f"{p}: no hit files (*.parquet) in the folder")
                paths += files
            else:
                paths.append(p)
        self._paths, self._files, self._groups = paths, [], []  # (per row group: (file, its row group))
        self._ranges = []  # per row group: (first model, last model, rows)
        self.meta = None
        for path in paths:
            pf, meta = self._open(path)
            self.meta = meta if self.meta is None else self.meta
            md = pf.metadata
            col = pf.schema_arrow.get_field_index("model")
            for g in range(md.num_row_groups):
                rg = md.row_group(g)
                st = rg.column(col).statistics
                if rg.num_rows and (st is None or not st.has_min_max):
                    raise ValueError(f"{path}: not a complete hmmcascade hits file (row group {g} has no statistics)")
                self._ranges.append((st.min, st.max, rg.num_rows) if rg.num_rows else (0, -1, 0))
                self._groups.append((len(self._files), g))
            self._files.append(pf)

    @staticmethod
    def _open(path: str):
        pa, pq = pyarrow_modules()
        try:
            pf = pq.ParquetFile(path)
        except FileNotFoundError:
            raise ValueError(f"{path}: hits file not found") from None
        except (OSError, pa.ArrowException) as exc:
            raise ValueError(f"{path}: not an hmmcascade hits file ({' '.join(str(exc).split())})") from None
        md = pf.schema_arrow.metadata or {}
        try:
            head = json.loads(md[META_KEY])
        except (KeyError, ValueError):
            raise ValueError(f"{path}: not an hmmcascade hits file (no hmmcascade metadata)") from None
        if head.get("format") != FORMAT:
            raise ValueError(f"{path}: not an hmmcascade hits file (format {head.get('format')!r}, "
                             f"expected {FORMAT})")
        if not pf.schema_arrow.equals(schema(), check_metadata=False):
            raise ValueError(f"{path}: not a complete hmmcascade hits file (its columns differ from {FORMAT})")
        return pf, head.get("meta", {})

    @property
    def rows(self) -> int:
        return sum(r for _, _, r in self._ranges)

    @property
    def last_model(self) -> int:
        """The highest model number with a hit, -1 when the file has none."""
        return max([hi for _, hi, n in self._ranges if n] + [-1])

    def model_counts(self, n_models: int) -> np.ndarray:
        """Hits per model (length ``n_models``), read a row group at a time (the model column only)."""
        counts = np.zeros(n_models, dtype=np.int64)
        for g, (_, _, n) in enumerate(self._ranges):
            if n:
                model = self._read(g, ["model"]).column(0).to_numpy()
                counts += np.bincount(model, minlength=n_models)[:n_models]
        return counts

    def sample_column(self, name: str, groups: int = 16) -> list:
        """The values of column ``name`` in up to ``groups`` row groups spread over the file."""
        n = len(self._ranges)
        picks = sorted({g * n // groups for g in range(groups)}) if n > groups else range(n)
        return [v for g in picks if self._ranges[g][2] for v in self._read(g, [name]).column(0).to_pylist()]

    @property
    def row_groups(self) -> int:
        """Row groups of all files, in file order (numbered from 0 for :meth:`read_row_group`)."""
        return len(self._ranges)

    def read_row_group(self, g: int, columns=None):
        """Row group ``g`` as an Arrow table, of ``columns`` only where given (a domain's field:
        ``domains.list.element.<field>``)."""
        return self._read(g, columns)

    def _read(self, g: int, columns=None):
        pa, _ = pyarrow_modules()
        f, group = self._groups[g]
        try:
            return self._files[f].read_row_group(group, columns=columns)
        except (OSError, pa.ArrowException) as exc:
            raise ValueError(f"{self._paths[f]}: not a complete hmmcascade hits file "
                             f"({' '.join(str(exc).split())})") from None

    def read_tables(self, lo: int, hi: int) -> list:
        """The rows of models ``lo <= model < hi`` as Arrow tables (one per row group read), in file order."""
        import pyarrow.compute as pc

        out = []
        for g, (a, b, n) in enumerate(self._ranges):
            if n and a < hi and b >= lo:
                table = self._read(g)
                if a < lo or b >= hi:
                    m = table.column("model")
                    table = table.filter(pc.and_(pc.greater_equal(m, lo), pc.less(m, hi)))
                out.append(table)
        return out

    def read_models(self, lo: int, hi: int) -> list[Hit]:
        """The hits of models ``lo <= model < hi``, in file order."""
        return [h for table in self.read_tables(lo, hi) for h in hits_from_table(table)]

    def read_all(self) -> list[Hit]:
        return self.read_models(0, self.last_model + 1)


_ALI_NUMBERS = [n for n in ALI_FIELDS if n not in LINE_FIELDS]


def hits_from_table(table) -> list[Hit]:
    """:class:`Hit` objects (with domains and alignments) from rows of a hit file's table; the
    alignments' text lines are made when first read."""
    if table.num_rows == 0:
        return []
    cols = [table.column(n).to_pylist() for n in HIT_FIELDS]
    lists = table.column("domains").combine_chunks()
    lengths = lists.value_lengths().to_numpy(zero_copy_only=False)
    struct = lists.flatten()
    lines = ArrowLines(struct)
    dcols = [struct.field(n).to_pylist() for n in DOM_FIELDS]
    acols = [struct.field(n).to_pylist() for n in _ALI_NUMBERS]  # hmm_from, hmm_to, ali_from, ali_to, M, L
    from_lines = Alignment.from_lines
    doms = [Domain(a, b, c, d, e, f, g, h, from_lines(lines, i, *ali), *rest)
            for i, ((a, b, c, d, e, f, g, h, *rest), ali) in enumerate(zip(zip(*dcols), zip(*acols)))]
    hits = []
    k = 0
    for values, nd in zip(zip(*cols), lengths.tolist()):
        h = Hit(*values)
        h.domains = doms[k: k + nd]
        k += nd
        hits.append(h)
    return hits
