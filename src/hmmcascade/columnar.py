"""Hit files in Apache Parquet: their layout, and their writing.

A search job writes its hits here (``hmmcascade search --hits FILE.parquet``: :func:`write_hit_file`);
the merge (:mod:`hmmcascade.merge`) reads them back a block of models at a time
(:class:`~hmmcascade.hit_file.HitFile`) and writes its merged hits here (:class:`HitFileWriter`,
:func:`thresholded_table`), so no process holds the whole search's hits at once.

Layout (format ``hmmcascade-hits/2``: :func:`schema`):

* one row per hit, the fields of :class:`~hmmcascade.results.Hit`, and a ``domains`` column:
  a list of structs, the fields of :class:`~hmmcascade.results.Domain` and of its
  :class:`~hmmcascade.results.Alignment` (text lines as strings; ``rf_line``/``cs_line`` null
  where the model has none);
* rows sorted by model, then target; row groups of at most :data:`ROW_GROUP_HITS` hits, so
  that the column statistics (min, max of ``model``) say which row groups hold a model;
* the file's key-value metadata ``hmmcascade`` (:data:`META_KEY`): JSON ``{"format": ..., "meta": {...}}``
  (the search's Z, model and target counts).

Floating-point fields are stored as float64, the Python floats of the records, so a hit
read back is equal to the hit written (tested).
"""

from __future__ import annotations

import json
import os
from concurrent.futures import ThreadPoolExecutor
from operator import attrgetter

import numpy as np

from .results import LINE_FIELDS, Alignment, Domain, Hit

__all__ = ["ALI_FIELDS", "DOM_FIELDS", "FORMAT", "HIT_FIELDS", "META_KEY", "ROW_GROUP_HITS", "ArrowLines",
           "HitFileWriter", "pyarrow_modules", "schema", "thresholded_table", "write_hit_file"]

FORMAT = "hmmcascade-hits/2"
#: hits per row group (a merge reads whole row groups; their size bounds what one read holds)
ROW_GROUP_HITS = 8192
#: the key of the file's metadata that holds its format and the search's meta
META_KEY = b"hmmcascade"

#: the columns of a hit file: a hit's fields (and ``domains``), a domain's fields and its alignment's
HIT_FIELDS = [f for f in Hit.__dataclass_fields__ if f != "domains"]
DOM_FIELDS = [f for f in Domain.__dataclass_fields__ if f != "alignment"]
ALI_FIELDS = list(Alignment.__dataclass_fields__)
_HIT_VALUES = attrgetter(*HIT_FIELDS)
_INT = ("model", "target", "model_length", "target_length", "nregions", "nclustered", "noverlaps", "nenvelopes",
        "best_domain", "env_from", "env_to", "hmm_from", "hmm_to", "ali_from", "ali_to", "M", "L")
_BOOL = ("reported", "included")
_STR = ("model_name", "model_acc", "target_name", "target_acc", "target_desc", "model_line", "match_line",
        "target_line", "pp_line", "rf_line", "cs_line")


def pyarrow_modules():
    """The modules ``pyarrow`` and ``pyarrow.parquet``, imported when first needed."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    return pa, pq


def _type(pa, name: str):
    if name in _INT:
        return pa.int64()
    if name in _BOOL:
        return pa.bool_()
    if name in _STR:
        return pa.string()
    return pa.float64()


def schema(meta: dict | None = None):
    """The Arrow schema of a hit file, with ``meta`` in its metadata."""
    pa, _ = pyarrow_modules()
    dom = pa.struct([pa.field(n, _type(pa, n), nullable=n in ("rf_line", "cs_line"))
                     for n in DOM_FIELDS + ALI_FIELDS])
    fields = [pa.field(n, _type(pa, n), nullable=False) for n in HIT_FIELDS]
    fields.append(pa.field("domains", pa.list_(pa.field("item", dom, nullable=False)), nullable=False))
    return pa.schema(fields, metadata={META_KEY: json.dumps({"format": FORMAT, "meta": meta or {}})})


def _table(hits: list[Hit], sch, rows: "_BatchRows | None" = None, at=None):
    """The rows of ``hits`` as an Arrow table of schema ``sch``.  ``rows``: a :class:`_BatchRows`
    of a list of hits that ``hits`` are ``at`` (positions in it), for their domains."""
    pa, _ = pyarrow_modules()
    values = zip(*map(_HIT_VALUES, hits)) if hits else [[] for _ in HIT_FIELDS]
    cols = [pa.array(v, type=sch.field(n).type) for n, v in zip(HIT_FIELDS, values)]
    struct_type = sch.field("domains").type.value_type
    if rows is None:
        rows = _BatchRows.of(hits)
        at = np.arange(len(hits))
    if rows is not None:
        offsets, struct = rows.column(struct_type, np.asarray(at, dtype=np.int64))
        cols.append(pa.ListArray.from_arrays(pa.array(offsets), struct, type=sch.field("domains").type))
        return pa.Table.from_arrays(cols, schema=sch)
    dom_lists = [h.domains for h in hits]
    offsets = np.zeros(len(hits) + 1, dtype=np.int32)
    np.cumsum([len(d) for d in dom_lists], out=offsets[1:])
    doms = [d for ds in dom_lists for d in ds]
    alis = [d.alignment for d in doms]
    children = [pa.array([getattr(d, n) for d in doms], type=struct_type.field(n).type) for n in DOM_FIELDS]
    lines = _arrow_lines(alis)
    children += [lines[n] if lines is not None and n in lines else
                 pa.array([getattr(a, n) for a in alis], type=struct_type.field(n).type) for n in ALI_FIELDS]
    struct = pa.StructArray.from_arrays(children, fields=list(struct_type))
    cols.append(pa.ListArray.from_arrays(pa.array(offsets), struct, type=sch.field("domains").type))
    return pa.Table.from_arrays(cols, schema=sch)


#: the domain-definition arrays (``PairDomainsBatch.dom``) that hold these fields of Domain and Alignment
_SOURCE_FIELDS = ("env_from", "env_to", "score", "bias", "lnP", "acc", "env_nats", "correction_nats", "hmm_from",
                  "hmm_to", "ali_from", "ali_to", "M", "L")
_FLAG_FIELDS = ("c_evalue", "i_evalue", "reported", "included")


class _BatchRows:
    """The domains of a list of a search's hits, taken straight from the arrays of the search's
    batches (:class:`~hmmcascade.domaindef.records.DomainSource`: scores, coordinates, flags,
    alignment text as bytes) without making Domain, Alignment or str objects: every batch's
    domains gathered once into arrays over all of them (``values``, ``text``), and each hit's
    first row there (``first``) and count (``nd``).  Any subset of the hits, in any order, is
    then one fancy index (:meth:`column`).  The values are those the records would hold
    (tested equal)."""

    def __init__(self, values: dict, text: dict, first: np.ndarray, nd: np.ndarray):
        self.values, self.text, self.first, self.nd = values, text, first, nd

    @classmethod
    def of(cls, hits: list[Hit]) -> "_BatchRows | None":
        """None when some hit's domains are not a search batch's (then the records are read)."""
        pa, _ = pyarrow_modules()
        index: dict[int, int] = {}
        sources = []
        lists = list(map(attrgetter("domains"), hits))
        try:
            srcs = list(map(attrgetter("_source"), lists))
            k = np.fromiter(map(attrgetter("_k"), lists), dtype=np.int64, count=len(hits))
        except AttributeError:  # (domains not a search batch's DomainList)
            return None
        sid = np.empty(len(hits), dtype=np.int64)
        for i, src in enumerate(srcs):
            j = index.get(id(src))
            if j is None:
                if src is None or not hasattr(src, "pds"):
                    return None
                j = index[id(src)] = len(sources)
                sources.append(src)
            sid[i] = j
        if not sources or any(src.pds.lines is None or any(n not in src.pds.dom for n in _SOURCE_FIELDS)
                              for src in sources):
            return None
        from .domaindef.segments import segment_ranges, segment_starts

        values: dict[str, list] = {n: [] for n in (*_SOURCE_FIELDS, *_FLAG_FIELDS)}
        text: dict[str, list] = {n: [] for n in LINE_FIELDS}
        first = np.empty(len(hits), dtype=np.int64)
        nd = np.empty(len(hits), dtype=np.int64)
        order = np.argsort(sid, kind="stable")
        groups = np.split(order, segment_starts(np.bincount(sid, minlength=len(sources)))[1:])
        base = 0
        for src, mine in zip(sources, groups):  # a batch's domains in its order (those of all its hits)
            first[mine] = base + src.first[k[mine]]
            nd[mine] = src.nd[k[mine]]
            idx = segment_ranges(src.pds.dom_start[src.P], src.nd)
            for n in _SOURCE_FIELDS:
                values[n].append(src.pds.dom[n][idx])
            for n in _FLAG_FIELDS:
                values[n].append(getattr(src, n))
            full = _line_arrays(pa, src.pds.lines)
            take = pa.array(idx)
            for n in LINE_FIELDS:
                text[n].append(full[n].take(take))
            base += len(idx)
        return cls({n: np.concatenate(v) for n, v in values.items()},
                   {n: pa.concat_arrays(v) for n, v in text.items()}, first, nd)

    def column(self, struct_type, at: np.ndarray) -> tuple:
        """The ``domains`` column (list offsets, struct array) of hits ``at`` (positions in the list)."""
        pa, _ = pyarrow_modules()
        from .domaindef.segments import segment_ranges

        nd = self.nd[at]
        rows = segment_ranges(self.first[at], nd)
        take = pa.array(rows)
        children = []
        for f in struct_type:
            if f.name in self.text:
                children.append(self.text[f.name].take(take).cast(f.type))
            else:
                kind = (np.bool_ if pa.types.is_boolean(f.type) else
                        np.int64 if pa.types.is_integer(f.type) else np.float64)
                children.append(pa.array(self.values[f.name][rows].astype(kind), type=f.type))
        offsets = np.zeros(len(at) + 1, dtype=np.int32)
        np.cumsum(nd, out=offsets[1:])
        return offsets, pa.StructArray.from_arrays(children, fields=list(struct_type))


def _line_arrays(pa, lines) -> dict:
    """A batch's alignment lines (:class:`~hmmcascade.results.AlignmentLines`) as one Arrow string
    array per line (null where a model has no RF or CS line), made once and kept with them."""
    from .domaindef.segments import segment_ranges

    cached = getattr(lines, "_arrow", None)
    if cached is not None:
        return cached
    lines.built()
    start, end = np.asarray(lines.start, dtype=np.int64), np.asarray(lines.end, dtype=np.int64)
    n = len(start)
    out = {}
    for name in LINE_FIELDS:
        kind = name[:-5]
        data, valid = getattr(lines, kind), None
        if kind in ("rf", "cs"):
            valid = (np.asarray(lines.has_rf if kind == "rf" else lines.has_cs, dtype=bool) if data is not None
                     else np.zeros(n, dtype=bool))
        data = data or b""
        lengths = end - start if valid is None else np.where(valid, end - start, 0)
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        if n and np.array_equal(np.where(lengths > 0, start, offsets[:-1]), offsets[:-1]):
            buf = pa.py_buffer(data)  # (laid out one after another from 0: the bytes as they are)
        else:
            buf = pa.py_buffer(np.frombuffer(data, dtype=np.uint8)[segment_ranges(start, lengths)])
        bitmap, nulls = None, 0
        if valid is not None and not valid.all():
            bitmap, nulls = pa.py_buffer(np.packbits(valid, bitorder="little")), int(n - valid.sum())
        out[name] = pa.LargeStringArray.from_buffers(n, pa.py_buffer(offsets), buf, bitmap, nulls)
    lines._arrow = out
    return out


class ArrowLines:
    """The alignment lines of a hit file table's domains, kept as Arrow strings until one is first read
    (then all are made Python strings at once), for :meth:`Alignment.from_lines`: those of the hits
    read back (:func:`~hmmcascade.hit_file.hits_from_table`), which :func:`_arrow_lines` writes
    again from the Arrow strings."""

    __slots__ = ("arrays", "_cols")

    def __init__(self, struct):
        self.arrays = [struct.field(n) for n in LINE_FIELDS]  #: in :data:`LINE_FIELDS` order
        self._cols = None

    def text(self, n: int, name: str):
        if self._cols is None:
            self._cols = dict(zip(LINE_FIELDS, (a.to_pylist() for a in self.arrays)))
        return self._cols[name][n]


def _arrow_lines(alis) -> dict | None:
    """The text lines of alignments read from hit files (:class:`ArrowLines`), taken from their Arrow
    arrays without making Python strings; None when any alignment was made otherwise."""
    pa, _ = pyarrow_modules()
    runs: list[tuple[ArrowLines, list[int]]] = []
    for a in alis:
        src = getattr(a, "_lines", None)
        if not isinstance(src, ArrowLines):
            return None
        if runs and runs[-1][0] is src:
            runs[-1][1].append(a._index)
        else:
            runs.append((src, [a._index]))
    if not runs:
        return None
    return {n: pa.concat_arrays([src.arrays[j].take(pa.array(ix, type=pa.int64())) for src, ix in runs])
            for j, n in enumerate(LINE_FIELDS)}


class HitFileWriter:
    """Writes hits to a Parquet hit file in row groups as they are added.

    ``fh``: a binary file object (from :func:`~hmmcascade.outfiles.open_output`) or a path.
    Hits must come in (model, target) order over all calls to :meth:`add` (checked), as the
    merge's reads by model rely on it.
    """

    def __init__(self, fh, meta: dict | None = None):
        _, pq = pyarrow_modules()
        self.schema = schema(meta)
        # (no dictionaries: the alignment text would only fill and drop them; statistics of the sort keys
        # alone, which the merge's reads by model use)
        self._writer = pq.ParquetWriter(fh, self.schema, compression="zstd", use_dictionary=False,
                                        write_statistics=["model", "target"])
        self._last = (-1, -1)
        self.rows = 0

    def add(self, hits: list[Hit]) -> None:
        if not hits:
            return
        self._check_order(np.array([h.model for h in hits], dtype=np.int64),
                          np.array([h.target for h in hits], dtype=np.int64))
        for s in range(0, len(hits), ROW_GROUP_HITS):
            self._writer.write_table(_table(hits[s: s + ROW_GROUP_HITS], self.schema), row_group_size=ROW_GROUP_HITS)
        self.rows += len(hits)

    def _check_order(self, model: np.ndarray, target: np.ndarray) -> None:
        """Rows must come in (model, target) order; a target number may repeat within a model, as the
        targets of different batches are numbered from 0 in each."""
        ordered = np.all((model[1:] > model[:-1]) | ((model[1:] == model[:-1]) & (target[1:] >= target[:-1])))
        if not ordered or (int(model[0]), int(target[0])) < self._last:
            raise ValueError("hit file rows must come in (model, target) order")
        self._last = (int(model[-1]), int(target[-1]))

    def add_table(self, table) -> None:
        """Rows already in a hit file's layout (:func:`thresholded_table`), in (model, target) order."""
        if not table.num_rows:
            return
        self._check_order(table.column("model").to_numpy(), table.column("target").to_numpy())
        if not table.schema.equals(self.schema, check_metadata=False):
            table = table.cast(self.schema)
        self._writer.write_table(table, row_group_size=ROW_GROUP_HITS)
        self.rows += table.num_rows

    def close(self) -> None:
        """Write the file's footer (once; later calls do nothing)."""
        if self._writer is not None:
            writer, self._writer = self._writer, None
            writer.close()

    def abandon(self) -> None:
        """Forget the file without writing more to it (its content is being dropped after an error)."""
        if self._writer is not None:
            writer, self._writer = self._writer, None
            try:
                writer.close()
            except (OSError, ValueError):
                pass


def thresholded_table(table, hits: list[Hit]):
    """A hit file's rows (``table``) with the flags and E-values that thresholding set on ``hits``
    (the same rows, read from it, in its order), sorted by (model, target): a merge's output rows
    without making the alignments' text Python strings."""
    pa, _ = pyarrow_modules()
    if table.num_rows != len(hits):
        raise ValueError(f"thresholded_table: {table.num_rows} rows but {len(hits)} hits")
    sch = table.schema
    for name in ("reported", "included", "evalue"):
        table = table.set_column(sch.get_field_index(name), sch.field(name),
                                 pa.array([getattr(h, name) for h in hits], type=sch.field(name).type))
    lists = table.column("domains").combine_chunks()
    struct = lists.flatten()
    doms = [d for h in hits for d in h.domains]
    if len(doms) != len(struct):
        raise ValueError(f"thresholded_table: {len(struct)} domain rows but {len(doms)} domains")
    fields = list(struct.type)
    children = [struct.field(f.name) for f in fields]
    for name in ("reported", "included", "c_evalue", "i_evalue"):
        j = struct.type.get_field_index(name)
        children[j] = pa.array([getattr(d, name) for d in doms], type=fields[j].type)
    offsets = lists.offsets.to_numpy()
    new = pa.ListArray.from_arrays(pa.array(offsets - offsets[0], type=pa.int32()),
                                   pa.StructArray.from_arrays(children, fields=fields), type=lists.type)
    table = table.set_column(sch.get_field_index("domains"), sch.field("domains"), new)
    order = np.lexsort((table.column("target").to_numpy(), table.column("model").to_numpy()))
    return table.take(pa.array(order))


def _hit_columns(hits: list[Hit], sch) -> dict:
    """Every hit field of ``hits`` as one array (numpy for numbers and flags, Arrow for strings), read a
    field at a time over all hits: no tuple per hit, no Python list of floats."""
    pa, _ = pyarrow_modules()
    n = len(hits)
    cols = {}
    for name in HIT_FIELDS:
        values = map(attrgetter(name), hits)
        if name in _STR:
            cols[name] = pa.array(list(values), type=sch.field(name).type)
        else:
            kind = np.bool_ if name in _BOOL else np.int64 if name in _INT else np.float64
            cols[name] = np.fromiter(values, dtype=kind, count=n)
    return cols


def _rows_table(cols: dict, at: np.ndarray, sch, rows: "_BatchRows"):
    """Rows ``at`` of the hit columns ``cols`` (:func:`_hit_columns`) and their domains (``rows``) as a
    table of schema ``sch``."""
    pa, _ = pyarrow_modules()
    take = pa.array(at)
    arrays = [cols[n].take(take) if isinstance(cols[n], pa.Array) else pa.array(cols[n][at], type=sch.field(n).type)
              for n in HIT_FIELDS]
    offsets, struct = rows.column(sch.field("domains").type.value_type, at)
    arrays.append(pa.ListArray.from_arrays(pa.array(offsets), struct, type=sch.field("domains").type))
    return pa.Table.from_arrays(arrays, schema=sch)


def write_hit_file(path, hits: list[Hit], meta: dict | None = None, parts: int = 1) -> None:
    """All of ``hits`` (any order) as a Parquet hit file at ``path`` (atomically, through
    :func:`~hmmcascade.outfiles.open_output`).  A search's hits (their domains in its batches' arrays)
    are gathered once a field at a time into arrays, and the row groups made from those arrays and
    encoded by Arrow in threads.

    ``parts`` > 1: ``path`` is made a folder of that many hit files (``part000.parquet``, ...; consecutive
    runs of the sorted rows, cut between row groups, read as one by :class:`~hmmcascade.hit_file.HitFile`),
    encoded side by side in as many threads; the folder is put in place whole, or not at all."""
    from .outfiles import open_output

    rows = _BatchRows.of(hits)  # (a search's hits: their domains from its batches' arrays)
    if rows is None:  # (hits read back or made otherwise: a row group at a time from the records)
        if parts > 1 and not hits:  # (a search without hits: a folder of empty hit files)
            _write_folder(os.fspath(path), [np.empty(0, dtype=np.int64)] * parts, {}, None, meta)
            return
        if parts > 1:
            raise ValueError("write_hit_file: parts need a search's hits")
        with open_output(path, "wb") as fh:
            writer = HitFileWriter(fh, meta)
            model = np.fromiter(map(attrgetter("model"), hits), dtype=np.int64, count=len(hits))
            target = np.fromiter(map(attrgetter("target"), hits), dtype=np.int64, count=len(hits))
            order = np.lexsort((target, model))
            for s in range(0, len(hits), ROW_GROUP_HITS):
                writer.add([hits[i] for i in order[s: s + ROW_GROUP_HITS].tolist()])
            writer.close()
        return
    sch = schema(meta)
    cols = _hit_columns(hits, sch)
    order = np.lexsort((cols["target"], cols["model"]))
    if parts <= 1:
        with open_output(path, "wb") as fh:
            _write_rows(fh, cols, rows, order, meta)
        return
    groups = -(-len(order) // ROW_GROUP_HITS)  # (parts cut between row groups: the same row groups as one file's)
    cuts = [min(len(order), ROW_GROUP_HITS * (groups * k // parts)) for k in range(parts + 1)]
    _write_folder(os.fspath(path), [order[cuts[k]: cuts[k + 1]] for k in range(parts)], cols, rows, meta)


def _write_rows(fh, cols: dict, rows: "_BatchRows", order: np.ndarray, meta: dict | None) -> int:
    """The hits ``order`` (positions in the arrays ``cols`` and ``rows``) as a hit file in ``fh``, a row
    group at a time; returns the rows written."""
    writer = HitFileWriter(fh, meta)
    with ThreadPoolExecutor(1) as encoder:
        pending = None  # (a row group encoded and written by Arrow in a thread while the next is made)
        for s in range(0, len(order), ROW_GROUP_HITS):
            table = _rows_table(cols, order[s: s + ROW_GROUP_HITS], writer.schema, rows)
            if pending is not None:
                pending.result()
            pending = encoder.submit(writer.add_table, table)
        if pending is not None:
            pending.result()
    writer.close()
    return writer.rows


def _write_folder(path: str, runs: list[np.ndarray], cols: dict, rows: "_BatchRows", meta: dict | None) -> None:
    """A folder of hit files at ``path``, file k of the hits ``runs[k]``, made by threads side by side
    (Arrow's takes and encoding let go of Python's lock); put in place whole."""
    import shutil

    from .outfiles import OutputError

    def part(k: int, folder: str) -> int:
        with open(os.path.join(folder, f"part{k:03d}.parquet"), "wb") as fh:
            n = _write_rows(fh, cols, rows, runs[k], meta)
            fh.flush()
            os.fsync(fh.fileno())
        return n

    if os.path.exists(path) and not os.path.isdir(path):
        raise OutputError(f"{path}: not a folder (a folder of hit files is written here)")
    partial = path.rstrip("/") + ".partial"
    shutil.rmtree(partial, ignore_errors=True)
    try:
        os.makedirs(partial)
        with ThreadPoolExecutor(len(runs)) as pool:
            written = sum(pool.map(part, range(len(runs)), [partial] * len(runs)))
        if written != sum(map(len, runs)):
            raise OutputError(f"{path}: {written} of {sum(map(len, runs))} hits written")
        if os.path.isdir(path):
            shutil.rmtree(path)
        os.replace(partial, path)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
