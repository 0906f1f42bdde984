"""Parquet hit files and the streaming merge: rows equal to the in-memory writers', memory bounded.

The hits are the embedded default search's (real models, real proteins, PoCL or the GPU); the
million-row merge uses renamed copies of them, as ``make_scale.py`` makes Swiss-Prot-sized inputs.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from hmmcascade.annotate import (sequence_md5s, write_gff3, write_interproscan_tsv, write_pfam_scan,
                                 write_protein_summary)
from hmmcascade.cascade import Thresholds
from hmmcascade.columnar import ROW_GROUP_HITS, write_hit_file
from hmmcascade.hit_file import HitFile
from hmmcascade.merge import merge_hit_files, open_hit_source
from hmmcascade.output import query_infos, write_alignments, write_domtblout, write_tblout
from hmmcascade.pfam_dat import PfamFamily

REPO = Path(__file__).resolve().parents[1]
Z = 2000.0  # the default_search fixture's -Z


def _key(h):
    return h.model, h.target


def _families(db):
    """Pfam-A.hmm.dat-like records for the default models: four clans (so overlaps are resolved), GA set."""
    return {name: PfamFamily(id=name, accession=acc, type="Domain", clan=f"CL{i % 4:04d}", ga_seq_bits=25.0,
                             ga_dom_bits=20.0) for i, (name, acc) in enumerate(zip(db.names, db.accessions))}


def test_hit_file_round_trip_and_reads_by_model(tmp_path, default_search):
    hits = default_search.records
    path = tmp_path / "h.parquet"
    write_hit_file(path, hits, {"Z": Z})
    f = HitFile(path)
    assert f.meta == {"Z": Z} and f.rows == len(hits) > 100
    expected = sorted(hits, key=_key)
    back = f.read_all()
    assert back == expected  # every field of every hit, domain and alignment line
    assert f.read_models(3, 9) == [h for h in expected if 3 <= h.model < 9]
    assert open_hit_source(path).read_all() == expected
    counts = f.model_counts(f.last_model + 1)
    assert counts.sum() == len(hits) and counts[expected[0].model] > 0


def test_hit_rows_from_the_batch_arrays_equal_those_from_the_records(default_search):
    """A search's domains are written from its batches' arrays; the same hits with their domains
    as lists of records (each field read from the objects) give the same Arrow rows."""
    from hmmcascade.columnar import _BatchRows, _table, schema

    hits = sorted(default_search.records, key=_key)
    sch = schema()
    struct_type = sch.field("domains").type.value_type
    assert _BatchRows.of(hits) is not None  # (the search's records take the fast path)
    as_lists = [copy.copy(h) for h in hits]
    for h in as_lists:
        h.domains = list(h.domains)
    assert _BatchRows.of(as_lists) is None
    fast, slow = _table(hits, sch), _table(as_lists, sch)
    assert fast.num_rows == len(hits) and fast.equals(slow)
    shuffled = hits[1::2] + hits[::2]  # runs of a batch's hits out of order
    assert _table(shuffled, sch).equals(_table([as_lists[i] for i in [*range(1, len(hits), 2),
                                                                        *range(0, len(hits), 2)]], sch))
    struct = fast.column("domains").combine_chunks().flatten()
    assert struct.field("model_line").null_count == 0 and len(struct) == sum(len(h.domains) for h in hits)


def test_hit_file_parts_and_fast_rows_equal_one_file_of_the_records(tmp_path, default_search, monkeypatch):
    """write_hit_file gathers a search's hits a field at a time and, with parts, writes a folder of
    files in forked processes: the rows equal those written from the records one by one, in the same
    row groups; the folder replaces an older one whole, and a file in its place is an error."""
    import pyarrow.parquet as pq

    from hmmcascade import columnar
    from hmmcascade.outfiles import OutputError

    monkeypatch.setattr(columnar, "ROW_GROUP_HITS", 16)  # (several row groups, cut between the parts)
    hits = default_search.records
    as_lists = [copy.copy(h) for h in hits]
    for h in as_lists:
        h.domains = list(h.domains)
    write_hit_file(tmp_path / "slow.parquet", as_lists, {"Z": Z})
    write_hit_file(tmp_path / "fast.parquet", hits, {"Z": Z})
    slow = pq.read_table(tmp_path / "slow.parquet")
    assert slow.num_rows == len(hits) > 100 and pq.read_table(tmp_path / "fast.parquet").equals(slow)
    folder = tmp_path / "parts.parquet"
    for parts in (5, 3):
        write_hit_file(folder, hits, {"Z": Z}, parts=parts)
        assert sorted(os.listdir(folder)) == [f"part{i:03d}.parquet" for i in range(parts)]
        assert not (tmp_path / "parts.parquet.partial").exists()
        groups = [pq.ParquetFile(folder / name).metadata.num_row_groups for name in sorted(os.listdir(folder))]
        assert sum(groups) == pq.ParquetFile(tmp_path / "slow.parquet").metadata.num_row_groups and min(groups) > 0
        joined = pa.concat_tables([pq.read_table(folder / name) for name in sorted(os.listdir(folder))])
        assert joined.equals(slow)
        f = HitFile(folder)
        assert f.meta == {"Z": Z} and f.read_models(3, 9) == HitFile(tmp_path / "slow.parquet").read_models(3, 9)
    write_hit_file(tmp_path / "none.parquet", [], {"Z": Z}, parts=3)  # (a search without hits)
    assert HitFile(tmp_path / "none.parquet").rows == 0 and len(os.listdir(tmp_path / "none.parquet")) == 3
    (tmp_path / "file.parquet").write_text("x")
    with pytest.raises(OutputError, match="not a folder"):
        write_hit_file(tmp_path / "file.parquet", hits, {"Z": Z}, parts=2)
    assert (tmp_path / "file.parquet").read_text() == "x"


def test_broken_hit_files_are_one_line_errors(tmp_path, default_search):
    good = tmp_path / "h.parquet"
    write_hit_file(good, default_search.records)
    cut = tmp_path / "cut.parquet"
    cut.write_bytes(good.read_bytes()[:-100])
    foreign = tmp_path / "foreign.parquet"
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"x": [1, 2]}), foreign)
    for path, message in ((cut, "not an hmmcascade hits file"), (foreign, "no hmmcascade metadata"),
                          (tmp_path / "none.parquet", "not found")):
        with pytest.raises(ValueError) as err:
            HitFile(path)
        assert str(path) in str(err.value) and message in str(err.value) and "\n" not in str(err.value)


def _in_memory(tmp_path, hits, db, seqs, families):
    """The outputs as the in-memory writers make them from all hits at once."""
    queries = query_infos(db)
    out = {}
    common = dict(Z=Z, queries=queries, command="x")
    for name, write, extra in (("tblout", write_tblout, common), ("domtblout", write_domtblout, common),
                               ("alignments", write_alignments, dict(Z=Z, queries=queries))):
        write(tmp_path / name, hits, **extra)
    reported = [h for h in hits if h.reported]
    write_pfam_scan(tmp_path / "pfamscan", reported, families)
    write_gff3(tmp_path / "gff3", reported, families)
    write_interproscan_tsv(tmp_path / "ipr_tsv", reported, families, md5s=sequence_md5s(seqs),
                           descriptions={q.name: q.description for q in queries})
    write_protein_summary(tmp_path / "protein_summary", reported, families)
    for name in ("tblout", "domtblout", "alignments", "pfamscan", "gff3", "ipr_tsv", "protein_summary"):
        out[name] = _text(tmp_path / name)
    return out


def _text(path) -> list[str]:
    """A file's lines, but for the tail's date and folder (which differ by when and where it was written)."""
    return [line for line in Path(path).read_text().splitlines()
            if not line.startswith(("# Date:", "# Current dir:"))]


@pytest.mark.parametrize("block_hits, part_rows, workers", [(7, 5, 1), (10**9, 10**9, 1), (7, 5, 2)])
def test_streaming_merge_equals_the_in_memory_writers(tmp_path, default_search, default_db, default_seqs,
                                                      block_hits, part_rows, workers):
    """Three batches of targets x two model shards, merged in many blocks of models and batches of proteins (or one of each):
    every output equal, line for line, to the in-memory writers' on all hits."""
    hits = default_search.records
    families = _families(default_db)
    paths, renumbered = [], []
    for b in range(3):
        batch = [copy.deepcopy(h) for h in hits if h.target % 3 == b]
        for h in batch:  # (each batch numbers its targets from 0, as the workflow's batches do)
            h.target //= 3
        renumbered += batch
        for half in (0, 1):
            part = [h for h in batch if (h.model < len(default_db) // 2) == (half == 0)]
            paths.append(tmp_path / f"batch{b}.m{half}.parquet")
            write_hit_file(paths[-1], part, {"Z": Z})
    (tmp_path / "ref").mkdir()
    ref = _in_memory(tmp_path / "ref", hits, default_db, default_seqs, families)
    queries = query_infos(default_db)
    out = tmp_path / "merged"
    out.mkdir()
    names = ("tblout", "domtblout", "alignments", "pfamscan", "gff3", "ipr_tsv", "protein_summary")
    outputs = {name: out / name for name in names}
    outputs["merged_hits"] = out / "hits.parquet"
    summary = merge_hit_files(paths, Thresholds(Z=Z), Z, queries=queries, outputs=outputs, families=families,
                              md5s=sequence_md5s(default_seqs), descriptions={q.name: q.description for q in queries},
                              command="x", block_hits=block_hits, part_rows=part_rows, workers=workers)
    if block_hits < 100:
        assert summary.blocks > 5 and summary.runs == summary.blocks
    assert summary.parts == (2 * workers if workers > 1 else 1)  # (proteins cut by name into parts, made apart)
    for name in names:
        assert _text(out / name) == ref[name], name
    assert sum(not line.startswith("#") for line in ref["tblout"]) > 100
    assert sum(not line.startswith("#") for line in ref["gff3"]) > 100
    merged = HitFile(out / "hits.parquet").read_all()
    assert [(h.model, h.target, h.target_name) for h in merged] == \
        sorted((h.model, h.target, h.target_name) for h in renumbered)  # (one target number, several batches)
    assert sorted(merged, key=lambda h: (h.model, h.target_name)) == sorted(renumbered, key=lambda h: (h.model, h.target_name))
    assert summary.reported == sum(h.reported for h in hits)


@pytest.mark.parametrize("workers", [1, 2])
def test_merge_of_model_shards_into_parts_equals_one_merge(tmp_path, default_search, default_db, default_seqs,
                                                           workers):
    """The workflow's pipelined merge: each shard of the models (3) over every batch of the targets (2) merged
    into a folder of its own (merge --to-parts, while the next shard searches), then the outputs from the
    folders (merge --from-parts): every output equal, line for line, to the in-memory writers' on all hits;
    parts out of order or missing are one-line errors."""
    from hmmcascade.merge import merge_parts

    hits = default_search.records
    families = _families(default_db)
    queries = query_infos(default_db)
    folders = []
    for k in (1, 2, 3):
        first, stop = default_db.shard(k, 3)
        paths = []
        for b in range(2):
            batch = [copy.deepcopy(h) for h in hits if h.target % 2 == b and first <= h.model < stop]
            for h in batch:
                h.target //= 2
            paths.append(tmp_path / f"batch{b}.m{k}.parquet")
            write_hit_file(paths[-1], batch, {"Z": Z})
        folders.append(str(tmp_path / f"part{k}"))
        summary = merge_hit_files(paths, Thresholds(Z=Z), Z, queries=queries, outputs={}, command="x", block_hits=7,
                                  workers=workers, model_range=(first, stop), parts_dir=folders[-1],
                                  names=default_seqs.names)
        assert summary.reported == sum(h.reported for h in hits if first <= h.model < stop)
        assert not os.path.exists(folders[-1] + ".partial")
    (tmp_path / "ref").mkdir()
    ref = _in_memory(tmp_path / "ref", hits, default_db, default_seqs, families)
    out = tmp_path / "merged"
    out.mkdir()
    names = ("tblout", "domtblout", "alignments", "pfamscan", "gff3", "ipr_tsv", "protein_summary")
    outputs = {name: out / name for name in names}
    outputs["merged_hits"] = out / "hits.parquet"
    kw = dict(families=families, md5s=sequence_md5s(default_seqs), command="x", part_rows=5, workers=workers,
              descriptions={q.name: q.description for q in queries}, n_models=len(queries))
    with pytest.raises(ValueError, match="part2: models .*give every shard"):
        merge_parts(folders[1:], Z, outputs={"tblout": tmp_path / "x"}, **kw)
    with pytest.raises(ValueError, match="part2: the parts end at model .*models file has 48"):
        merge_parts(folders[:2], Z, outputs={"tblout": tmp_path / "x"}, **kw)
    with pytest.raises(ValueError, match="not a merge part"):
        merge_parts([str(tmp_path)], Z, outputs={"tblout": tmp_path / "x"}, **kw)
    remove = workers > 1  # (the workflow's merge: each part's file removed once used)
    summary = merge_parts(folders, Z, outputs=outputs, remove=remove, **kw)
    for name in names:
        assert _text(out / name) == ref[name], name
    assert summary.reported == sum(h.reported for h in hits) and summary.runs > 3
    # (the merged hits: the parts' hit files in a folder, read as one)
    assert sorted(os.listdir(out / "hits.parquet")) == [f"part{i:04d}.parquet" for i in range(3)]
    merged = HitFile(out / "hits.parquet").read_all()
    assert [h.model for h in merged] == sorted(h.model for h in merged)
    assert sorted((h.model, h.target_name, h.score, h.reported) for h in merged) == \
        sorted((h.model, h.target_name, h.score, h.reported) for h in hits)
    left = sorted(p.name for f in folders for p in Path(f).rglob("*") if p.is_file())
    assert left == (["manifest.json"] * 3 if remove else sorted(left)) and len(left) > (3 if not remove else 0)
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="empty: no hit files"):
        HitFile(tmp_path / "empty")
    if remove:
        with pytest.raises(ValueError, match=r"part\d: incomplete merge part \(no (runs/run|\w+.txt)"):
            merge_parts(folders, Z, outputs={"tblout": tmp_path / "x"}, **kw)


@pytest.mark.parametrize("names", [("tblout",), ("pfamscan",), ("merged_hits",)])
def test_merge_of_one_output_in_many_blocks(tmp_path, default_search, default_db, default_seqs, names):
    """Any one output alone (the others not asked for), in many blocks: the same as with all outputs."""
    hits = default_search.records
    paths = [tmp_path / f"batch{b}.parquet" for b in range(2)]
    for b, path in enumerate(paths):
        write_hit_file(path, [h for h in hits if h.target % 2 == b], {"Z": Z})
    families = _families(default_db)
    (tmp_path / "ref").mkdir()
    ref = _in_memory(tmp_path / "ref", hits, default_db, default_seqs, families)
    outputs = {name: tmp_path / name for name in names}
    summary = merge_hit_files(paths, Thresholds(Z=Z), Z, queries=query_infos(default_db), outputs=outputs,
                              families=families, command="x", block_hits=5, part_rows=3)
    assert summary.blocks > 5
    for name in names:
        if name == "merged_hits":
            assert HitFile(outputs[name]).read_all() == sorted(hits, key=_key)
        else:
            assert _text(outputs[name]) == ref[name]


# --- a million hit rows ------------------------------------------------------------------------------------

def _copies(base, model_copies: int, target_copies: int, models: int, targets: int, files: int,
            folder: Path) -> list[Path]:
    """``files`` hit files holding the hits in ``base`` (a hit file) for renamed copies of its models and
    targets, as ``make_scale.py`` makes Pfam-A- and Swiss-Prot-sized inputs: model copy j is numbered
    ``model + j * models`` and named ``<name>_m<j>``, target copy k ``target + k * targets`` and
    ``<name>_c<k>``; target copies are dealt round-robin to the files, as batches deal proteins."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    table = pq.read_table(base)

    def renumbered(t, number, name, step, suffix):
        t = t.set_column(t.schema.get_field_index(number), t.schema.field(number), pc.add(t.column(number), step))
        return t.set_column(t.schema.get_field_index(name), t.schema.field(name),
                            pc.binary_join_element_wise(t.column(name), pa.scalar(suffix), ""))

    paths = []
    for f in range(files):
        parts = [renumbered(renumbered(table, "model", "model_name", j * models, f"_m{j}"),
                            "target", "target_name", k * targets, f"_c{k}")
                 for j in range(model_copies) for k in range(f, target_copies, files)]
        merged = pa.concat_tables(parts).sort_by([("model", "ascending"), ("target", "ascending")])
        paths.append(folder / f"batch{f:03d}.hits.parquet")
        pq.write_table(merged, paths[-1], row_group_size=ROW_GROUP_HITS, compression="zstd")
    return paths


def _merge_peak(paths: list[Path], out: Path, Z: float) -> tuple[int, dict]:
    """``hmmcascade merge`` of ``paths`` in a process of its own: (peak resident memory in bytes, its outputs)."""
    # VmHWM: the process's own peak (ru_maxrss would count the parent's memory at fork, kept across exec)
    code = ("import runpy, sys; sys.argv = ['hmmcascade'] + sys.argv[1:]\n"
            "try:\n    runpy.run_module('hmmcascade', run_name='__main__')\n"
            "finally:\n    print('PEAK', [l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM')][0],"
            " file=sys.stderr)")
    out.mkdir()
    outputs = {"--tblout": out / "o.tbl", "--domtblout": out / "o.domtbl", "--pfamscan": out / "o.pfam.tsv",
               "--gff3": out / "o.gff3", "--protein-summary": out / "o.proteins.tsv",
               "--merged-hits": out / "merged.parquet"}
    run = subprocess.run([sys.executable, "-c", code, "merge", *map(str, paths), "-Z", str(Z),
                          *[str(a) for kv in outputs.items() for a in kv]],
                         capture_output=True, text=True, timeout=1800,
                         env={**os.environ, "PYTHONPATH": str(REPO / "src")})
    assert run.returncode == 0, run.stderr[-3000:]
    peak = int(run.stderr.rsplit("PEAK", 1)[1].split()[0]) * 1024  # (kB)
    return peak, outputs


def test_merge_of_a_million_hit_rows_keeps_memory_bounded(tmp_path, default_search, default_db):
    """The merge's peak memory over 1,000,000+ hit rows (8 copies of the models x 622 of the proteins) is
    under 1 GiB and no more than 100 MB above its peak over a quarter of them (2 copies of the models):
    it does not grow with the number of hits, only with the hits of the largest model (here ~26,000),
    as the merge's docs state.  The in-memory merge it replaces took ~10 KB a hit, 10 GB here."""
    hits = list(default_search.records)
    base = tmp_path / "base.parquet"
    write_hit_file(base, hits)
    target_copies = 622
    peaks, rows = {}, {}
    for model_copies in (2, 8):
        folder = tmp_path / f"m{model_copies}"
        folder.mkdir()
        paths = _copies(base, model_copies, target_copies, len(default_db), 2000, 4, folder)
        rows[model_copies] = sum(HitFile(p).rows for p in paths)
        assert rows[model_copies] == model_copies * target_copies * len(hits)
        peaks[model_copies], outputs = _merge_peak(paths, folder / "out", 2000.0)  # (the original Z)
        assert HitFile(outputs["--merged-hits"]).rows == rows[model_copies]
        tbl = [line for line in outputs["--tblout"].read_text().splitlines() if not line.startswith("#")]
        assert len(tbl) == model_copies * target_copies * sum(h.reported for h in hits)
        assert all("_c" in line.split()[0] and "_m" in line.split()[2] for line in tbl[:50])
        gff = outputs["--gff3"].read_text().splitlines()
        assert gff[0] == "##gff-version 3" and sum(line.startswith("##sequence-region") for line in gff) > 10000
    print(json.dumps({"rows": rows, "peak_bytes": peaks}))
    assert rows[8] >= 1_000_000
    assert peaks[8] < 2**30, peaks
    assert peaks[8] < peaks[2] + 100e6, peaks
