"""Issue 26 on the GPU: the region Forward matrices by region_forward_warp<C> ("warp") against envelope's
mode 0 in HMMER's striped order ("rf_serial"; the default since 2026-11-26), the other kernels the GPU's.

  python3 benchmarks/region_forward_rows.py [MODELS PROTEINS]   (default .devdata/pfam35_dev.hmm.gz,
                                                                .devdata/proteins_dev.faa.gz)

Prints, for each: the dev search's rows (every model x every protein, Z = 9,366) against
pyhmmer.hmmsearch on 16 CPUs (hits missing or extra, pairs whose reported domains' env/ali/hmm
coordinates differ, the largest sequence score difference); the CbiA x efae|YP_005353338.1 pair at
Z = 561,960 (the Pfam-A x Swiss-Prot-sized run's lost hit); then dev-x10 (10 renamed copies of the
proteins) searched alternately, 3 timed searches each after one untimed, in one process."""
import json, os, statistics, sys, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run_benchmark as rb
import pyhmmer
from hmmcascade import cascade, device, profiles
from hmmcascade.options import SearchOptions
M, S = sys.argv[1:3] if len(sys.argv) > 2 else (".devdata/pfam35_dev.hmm.gz", ".devdata/proteins_dev.faa.gz")
V = {"warp": SearchOptions.parse("region_forward=warp"), "rf_serial": SearchOptions.parse("region_forward=serial")}
dev = device.open_device(None, V["warp"])
for p in rb.PROGRAMS:
    dev.program(p)
print(dev.name, flush=True)
hmms, seqs = rb.read_workload(M, S, 1)
db = profiles.press(hmms)
with pyhmmer.plan7.HMMFile(M) as f: H = list(f)
with pyhmmer.easel.SequenceFile(S, digital=True) as f: SQ = f.read_block()
def s(x): return x.decode() if isinstance(x, bytes) else x
def ref_rows(Z, hs=H):
    out = {}
    t = time.perf_counter()
    for hits in pyhmmer.hmmsearch(hs, SQ, cpus=16, Z=Z):
        for h in hits.reported:
            out[(s(hits.query.name), s(h.name))] = (h.score, [(d.env_from, d.env_to, d.alignment.target_from, d.alignment.target_to, d.alignment.hmm_from, d.alignment.hmm_to) for d in h.domains.reported])
    return out, time.perf_counter() - t
def our_rows(db, sq, Z, o):
    res = cascade.search(db, sq, dev, cascade.Thresholds(Z=Z), options=o)
    return {(h.model_name, h.target_name): (h.score, [(d.env_from, d.env_to, d.ali_from, d.ali_to, d.hmm_from, d.hmm_to) for d in h.domains if d.reported]) for h in res.records if h.reported}
ref, t = ref_rows(9366)
print(f"pyhmmer dev x1 Z=9366: {len(ref)} hits, {sum(len(v[1]) for v in ref.values())} domains, {t:.1f} s", flush=True)
for name, o in V.items():
    ours = our_rows(db, seqs, 9366, o)
    miss = [k for k in ref if k not in ours]; extra = [k for k in ours if k not in ref]
    diff = [k for k in ref if k in ours and ref[k][1] != ours[k][1]]
    mx = max(abs(ref[k][0] - ours[k][0]) for k in ref if k in ours)
    nd = sum(sum(a != b for a, b in zip(ref[k][1], ours[k][1])) + abs(len(ref[k][1]) - len(ours[k][1])) for k in diff)
    print(json.dumps({"variant": name, "hits": len(ours), "missing": len(miss), "extra": len(extra), "pairs_with_domain_rows_differing": len(diff),
                      "domain_rows_differing": nd, "max_seq_score_diff_bits": round(mx, 5), "examples": [[k, ref[k][1], ours[k][1]] for k in diff[:6]], "miss": miss[:5], "extra_ex": extra[:5]}), flush=True)
cb = [h for h in hmms if h.name == "CbiA"]
cdb = profiles.press(cb); one = seqs.subset([i for i, n in enumerate(seqs.names) if n == "efae|YP_005353338.1"])
for name, o in V.items():
    print(name, "CbiA x efae|YP_005353338.1 at Z=561960:", our_rows(cdb, one, 561960, o), flush=True)
h10, s10 = rb.read_workload(M, S, 10)
db10 = profiles.press(h10)
for o in V.values():
    cascade.search(db10, s10, dev, options=o)
T = {k: [] for k in V}
for i in range(3):
    for name, o in V.items():
        t = time.perf_counter(); r = cascade.search(db10, s10, dev, options=o); T[name].append(round(time.perf_counter() - t, 4))
print(json.dumps({"dev_x10_times": T, "medians": {k: statistics.median(v) for k, v in T.items()},
                  "ratio_serial_over_warp": round(statistics.median(T["rf_serial"]) / statistics.median(T["warp"]), 4)}), flush=True)
