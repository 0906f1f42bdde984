#!/usr/bin/env python3
"""The cost model of docs/cost-model.md: Pfam-A x UniProtKB on N H100s, from the measured result files.

Reads the rates from ``benchmarks/results/*.json`` (each constant below names its file and key),
checks the model against the measured Pfam-A-sized x Swiss-Prot-sized (x 60) workflow run, then
prints the table for N GPUs.  Standard library only:

    python3 benchmarks/cost_model.py                 # the check and the table (Markdown)
    python3 benchmarks/cost_model.py --json out.json # the same numbers as JSON
    python3 benchmarks/cost_model.py --gpus 1 8 64 512 --residues 85e9 --sequences 250e6
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"

DEV_X10 = "2026-11-25_h100_dev_x10.json"  # H100 (machine H), e228945: the search's per-stage rates
SPROT60 = "2026-11-26_h100_pfamA_sprot60_reference-beside.json"  # H100, run C (89d155b): the x60 workflow
SPROT60_SIZES = "2026-11-26_h100_pfamA_sprot60_workflow.json"  # H100, run B: the x60 outputs' bytes on disk
CUT_GA = "2026-11-21_h200_dev_cut_ga.json"  # 617 Pfam models x 9,366 proteins with --cut_ga: hits a cell

#: Pfam-A-sized models: pfam35_dev x 9 (make_scale.py; the x60 files' "command"): 22,194 models, 3,786,489 nodes
PFAM_A_MODELS, PFAM_A_NODES = 22_194, 3_786_489
#: the x60 targets: proteins_dev x 60 (same files): 561,960 proteins, 180,058,980 residues
X60_SEQUENCES, X60_RESIDUES, X60_MODEL_SHARDS = 561_960, 180_058_980, 5
#: merge of 884,736 hits into all eight outputs, --cpu 16, df752bc (H200 host, 16 cores): 18.26 s
#: (benchmarks/RESULTS.md, "Known limits"; the result file 2026-11-26_h200_pfamA_x_37k_parquet_merge.json
#: holds the same merge at d29877e, 46.6 s)
MERGE_37K_S, MERGE_37K_HITS = 18.26, 884_736

#: the workflow's shard rules (workflow/rules/common.smk): cells a job (AUTO_JOB_CELLS), host bytes a
#: residue of a job's batch over the model shards (SEARCH_BYTES_PER_RESIDUE), 6 x its inputs + 1 GB
AUTO_JOB_CELLS, SEARCH_BYTES_PER_RESIDUE = 5e14, 300
#: a job's host memory allowed here: a 1-GPU H100 machine has 128 GiB and 16 cores (device README);
#: an 8-GPU host 560 GiB and 128 cores, 70 GB a GPU: the lesser, less room for the merges beside it
JOB_HOST_BYTES = 64e9
#: file-system bandwidth for the merge's copies (bytes/s): run C's local disk did 34 GB in 20.2 s
#: (merge_hits_copies_s) = 1.7 GB/s; a shared file system is given as --fs-gbps
FS_BYTES_PER_S_DEFAULT = 1.7e9


def load(name: str) -> dict:
    return json.loads((RESULTS / name).read_text())


def rates() -> dict:
    """Every measured rate the model uses, with the file it came from."""
    d = load(DEV_X10)
    s = d["stats"]
    cells = s["cells"]["msv"]
    r: dict = {"source": {}}
    r["dev_x10_cells"] = cells
    r["gcups_dev_x10"] = cells / d["hmmcascade_s"] / 1e9  # whole search, all stages, host overlap
    r["stage_kernel_s_share"] = {k: v / sum(s["kernel_s"].values()) for k, v in s["kernel_s"].items()}
    r["stage_gcups"] = d["stage_gcups"]
    r["hits_per_cell_e10"] = d["hits"] / cells
    r["source"]["dev_x10"] = DEV_X10
    ga = load(CUT_GA)
    r["hits_per_cell_ga"] = ga["hmmcascade_hits"] / (ga["run"]["nodes"] * ga["run"]["residues"])
    r["source"]["cut_ga"] = CUT_GA
    c = load(SPROT60)["runs"]["C_89d155b"]
    shard_cells = PFAM_A_NODES / X60_MODEL_SHARDS * X60_RESIDUES
    shard_hits = c["hits"] / X60_MODEL_SHARDS
    r["x60"] = c
    r["x60_shard_cells"], r["x60_shard_hits"] = shard_cells, shard_hits
    r["gcups_x60_to_end"] = shard_cells / statistics.mean(c["search_to_end_s"]) / 1e9  # process start to search end
    r["gcups_x60_job"] = shard_cells / statistics.mean(c["search_batch_s"]) / 1e9  # the whole job, writing included
    r["write_s_per_hit"] = statistics.mean(c["search_writing_s"]) / shard_hits
    r["job_other_s"] = statistics.mean(c["search_batch_s"]) - statistics.mean(c["search_to_end_s"]) - statistics.mean(
        c["search_writing_s"])  # (process exit, Snakemake's job start)
    r["merge_shard_s_per_hit"] = statistics.mean(c["merge_shard_s"]) / shard_hits
    r["merge_hits_s_per_hit"] = c["merge_hits_s"] / c["hits"]
    r["merge_copies_s"] = c["merge_hits_copies_s"]
    r["prepare_s_per_residue"] = c["prepare_s"] / X60_RESIDUES
    r["press_s"] = c["press_s"]
    r["source"]["x60"] = SPROT60 + " runs.C_89d155b"
    b = load(SPROT60_SIZES)["pipelined"]["run_B_fresh_machine_three_invocations"]
    out_gb = float(b["disk used max"].split("outputs ")[1].split(" GB")[0])
    r["output_bytes_per_hit"] = out_gb * 1e9 / c["hits"]
    r["source"]["output_bytes"] = SPROT60_SIZES + " pipelined.run_B_fresh_machine_three_invocations['disk used max']"
    r["merge_37k_s_per_hit"] = MERGE_37K_S / MERGE_37K_HITS
    r["source"]["merge_37k"] = "benchmarks/RESULTS.md (Known limits: merge of 884,736 hits, --cpu 16, 18.26 s)"
    return r


def check_x60(r: dict) -> dict:
    """The x60 run (run C) predicted from rates measured elsewhere: the searches from dev-x10's rate
    (a job 10.8 times dev-x10's cells), the merges from the 37k merge's seconds a hit.  The hit files'
    writing, press, prepare, compare and report are taken as measured (no other file has them)."""
    c = r["x60"]
    search_pred = r["x60_shard_cells"] / (r["gcups_dev_x10"] * 1e9)
    search_meas = statistics.mean(c["search_to_end_s"])
    merge_pred = c["hits"] * r["merge_37k_s_per_hit"]
    merge_meas = sum(c["merge_shard_s"]) + c["merge_hits_s"]
    job_rest = statistics.mean(c["search_batch_s"]) - search_meas
    tail_share = (c["merge_shard_s"][-1] + c["merge_hits_s"]) / merge_meas
    fixed = c["press_s"] + c["prepare_s"] + c["compare_s"] + c["report_plots_s"]
    all_pred = fixed + X60_MODEL_SHARDS * (search_pred + job_rest) + merge_pred * tail_share
    return {"search_to_end_s": {"predicted": search_pred, "measured": search_meas,
                                "error": search_pred / search_meas - 1},
            "merge_s": {"predicted": merge_pred, "measured": merge_meas, "error": merge_pred / merge_meas - 1},
            "all_in_s": {"predicted": all_pred, "measured": c["all_in_s"], "error": all_pred / c["all_in_s"] - 1},
            "calibrated_all_in_s": fixed + sum(c["search_batch_s"]) + c["merge_shard_s"][-1] + c["merge_hits_s"]}


def shards(residues: float, nodes: float, gpus: int) -> tuple[int, int]:
    """(sequence batches, model shards): batches so that 6 x a batch (about 1 byte a residue) stays
    within a quarter of JOB_HOST_BYTES; model shards so that a job has at most AUTO_JOB_CELLS cells and
    its hits' bytes (SEARCH_BYTES_PER_RESIDUE) fit the rest, then more so the jobs fill every GPU's waves."""
    batches = max(1, math.ceil(6 * residues / (JOB_HOST_BYTES / 4)))
    per_batch = residues / batches
    models = max(math.ceil(nodes * per_batch / AUTO_JOB_CELLS),
                 math.ceil(SEARCH_BYTES_PER_RESIDUE * per_batch / (JOB_HOST_BYTES * 3 / 4 - 1e9)), 1)
    jobs = batches * models
    if jobs % gpus:  # (whole waves: the last wave as full as the others)
        models = math.ceil(math.ceil(jobs / gpus) * gpus / batches)
    return batches, models


def project(r: dict, gpus: int, residues: float, sequences: float, nodes: float, hits_per_cell: float,
            gcups_job: float, fs_bytes_per_s: float) -> dict:
    """Hours of one run on ``gpus`` GPUs (each with its own ~16 cores for the merges of its shards)."""
    cells = nodes * residues
    hits = cells * hits_per_cell
    batches, models = shards(residues, nodes, gpus)
    jobs = batches * models
    job_cells, job_hits = cells / jobs, hits / jobs
    job_s = job_cells / (gcups_job * 1e9) + job_hits * r["write_s_per_hit"] + r["job_other_s"]
    waves = math.ceil(jobs / gpus)
    search_s = waves * job_s
    prepare_s = residues * r["prepare_s_per_residue"]
    shard_hits = hits / models
    merge_shard_s = shard_hits * r["merge_shard_s_per_hit"]  # (beside the searches, but the last)
    output_bytes = hits * r["output_bytes_per_hit"]
    copies_s = output_bytes / fs_bytes_per_s
    tables_s = hits * r["merge_hits_s_per_hit"] - r["merge_copies_s"] * hits / r["x60"]["hits"]
    tables_s = max(tables_s, 0.0)
    tail_s = merge_shard_s + copies_s + tables_s
    total_s = r["press_s"] + prepare_s + search_s + tail_s
    return {"gpus": gpus, "cells": cells, "hits": hits, "batches": batches, "model_shards": models, "jobs": jobs,
            "job_cells": job_cells, "job_minutes": job_s / 60, "job_host_gb": (6 * residues / batches + 1e9
                                                                               + SEARCH_BYTES_PER_RESIDUE * residues
                                                                               / batches / models) / 1e9,
            "waves": waves, "prepare_h": prepare_s / 3600, "search_h": search_s / 3600,
            "merge_tail_h": tail_s / 3600, "last_merge_shard_h": merge_shard_s / 3600, "copies_h": copies_s / 3600,
            "protein_tables_h": tables_s / 3600, "total_h": total_s / 3600, "gpu_hours_held": gpus * total_s / 3600,
            "gpu_hours_busy": jobs * job_s / 3600, "search_share": search_s / total_s,
            "output_tb": output_bytes / 1e12, "sequences": sequences}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpus", type=int, nargs="+", default=[1, 8, 64, 512])
    ap.add_argument("--residues", type=float, default=85e9, help="UniProtKB residues (default 85e9)")
    ap.add_argument("--sequences", type=float, default=250e6, help="UniProtKB sequences (default 250e6)")
    ap.add_argument("--fs-gbps", type=float, default=FS_BYTES_PER_S_DEFAULT / 1e9,
                    help="bytes/s (GB/s) the merge's file system writes (default: run C's local disk, 1.7)")
    ap.add_argument("--json", help="write every number here too")
    args = ap.parse_args()
    r = rates()
    chk = check_x60(r)
    # hits a UniProtKB run reports: the dev data's measured densities, and Pfam's published coverage
    # (~80% of UniProtKB's sequences have a Pfam-A match: Punta et al. 2012, Finn et al. 2014, NAR
    # database issues) at an assumed 1.5 families a covered sequence
    scenarios = {"E<=10 (dev density)": r["hits_per_cell_e10"],
                 "cut_ga (dev density)": r["hits_per_cell_ga"],
                 "cut_ga (Pfam coverage)": 0.8 * 1.5 * args.sequences / (PFAM_A_NODES * args.residues)}
    rows = []
    for name, density in scenarios.items():
        for rate_name, rate in (("x60 job rate", r["gcups_x60_job"]),):
            for n in args.gpus:
                row = project(r, n, args.residues, args.sequences, PFAM_A_NODES, density, rate,
                              args.fs_gbps * 1e9)
                rows.append({"scenario": name, "rate": rate_name, **row})
    print("## Rates (H100)\n")
    print(f"- dev-x10 search, all stages: {r['gcups_dev_x10']:,.0f} GCUPS ({DEV_X10}); kernel seconds by stage: "
          + ", ".join(f"{k} {v:.0%}" for k, v in r["stage_kernel_s_share"].items()))
    print(f"- x60 job (4,439 models x 561,960 proteins, {r['x60_shard_cells']:.3g} cells): "
          f"{r['gcups_x60_to_end']:,.0f} GCUPS to the search's end, {r['gcups_x60_job']:,.0f} GCUPS the whole job "
          f"({SPROT60}, run C)")
    print(f"- hits a cell: {r['hits_per_cell_e10']:.3g} (E<=10, dev-x10), {r['hits_per_cell_ga']:.3g} (--cut_ga, "
          f"{CUT_GA}); writing hits {r['write_s_per_hit'] * 1e6:.2f} us/hit; merge_shard "
          f"{r['merge_shard_s_per_hit'] * 1e6:.1f} us/hit; merge_hits {r['merge_hits_s_per_hit'] * 1e6:.2f} us/hit; "
          f"outputs {r['output_bytes_per_hit']:,.0f} bytes/hit")
    print("\n## Check: the x60 run predicted\n")
    for key in ("search_to_end_s", "merge_s", "all_in_s"):
        v = chk[key]
        print(f"- {key}: predicted {v['predicted']:.1f}, measured {v['measured']:.1f}, error {v['error']:+.1%}")
    print(f"- with the x60 rates themselves: {chk['calibrated_all_in_s']:.0f} s against {r['x60']['all_in_s']} s")
    print(f"\n## Pfam-A ({PFAM_A_NODES:,} nodes) x UniProtKB ({args.sequences:.3g} sequences, "
          f"{args.residues:.3g} residues), H100s\n")
    print("| scenario | GPUs | hits | jobs (batches x model shards) | job: cells, min, host GB | hours | prepare h | "
          "search h | merge tail h (last shard + copies + tables) | GPU-h held | GPU-h busy | outputs TB |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        print(f"| {row['scenario']} | {row['gpus']} | {row['hits']:.2g} | {row['jobs']} ({row['batches']} x "
              f"{row['model_shards']}) | {row['job_cells']:.2g}, {row['job_minutes']:.1f}, {row['job_host_gb']:.0f} | "
              f"{row['total_h']:.1f} | {row['prepare_h']:.2f} | {row['search_h']:.2f} | {row['merge_tail_h']:.2f} "
              f"({row['last_merge_shard_h']:.2f} + {row['copies_h']:.2f} + {row['protein_tables_h']:.2f}) | "
              f"{row['gpu_hours_held']:,.0f} | "
              f"{row['gpu_hours_busy']:,.0f} | {row['output_tb']:.2f} |")
    if args.json:
        Path(args.json).write_text(json.dumps({"rates": {k: v for k, v in r.items() if k != "x60"},
                                               "check_x60": chk, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
