"""Issue 26 on the GPU: the multi-domain regions' Forward matrices by region_forward_warp<C> ("warp"),
region_forward_lanes ("lanes": four work-items a region, HMMER's order), region_forward_wide ("wide": a
work-group a region, the cells in parallel, the chains in HMMER's order) and envelope's mode 0 ("serial",
HMMER's order, the default since 2026-11-26); the other kernels the GPU's defaults.

  python3 benchmarks/region_forward_rows.py [MODELS PROTEINS [VARIANT ...]]
      (default .devdata/pfam35_dev.hmm.gz .devdata/proteins_dev.faa.gz; variants: the first gives the
      rows, all are timed; default wide wide64 lanes warp serial; lanesN: lanes with N regions a work-group;
      wideN: region_forward_wide with N work-items a region)

Prints: the dev search's rows (every model x every protein, Z = 9,366) with the first variant against
pyhmmer.hmmsearch on 16 CPUs (hits missing or extra, pairs whose reported domains' env/ali/hmm
coordinates differ, the largest sequence score difference); the CbiA x efae|YP_005353338.1 pair at
Z = 561,960 (the Pfam-A x Swiss-Prot-sized run's lost hit) with each variant; then dev-x10 (10 renamed
copies of the proteins) searched with the variants in turn, 3 timed searches each after one untimed,
in one process. With PFAMA=pfamA_like.hmm also pfamA_like (the models x 9) x the proteins with the first variant;
with DEVX10=1 also dev-x10's rows with the first variant against pyhmmer on the same proteins (about 2 min).
"""
import json, os, statistics, sys, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run_benchmark as rb
import pyhmmer
from hmmcascade import cascade, device
from hmmcascade.press import press
from hmmcascade.domaindef import multidomain
from hmmcascade.options import SearchOptions
M, S = sys.argv[1:3] if len(sys.argv) > 2 else (".devdata/pfam35_dev.hmm.gz", ".devdata/proteins_dev.faa.gz")
names = sys.argv[3:] or ["wide", "wide64", "lanes", "warp", "serial"]
V = {n: SearchOptions.parse(f"region_forward={n.rstrip('0123456789')}") for n in names}
PER_GROUP = {n: int(n[5:]) if n.startswith("lanes") and n[5:] else multidomain.LANES_REGIONS for n in names}
WIDE = {n: int(n[4:]) if n.startswith("wide") and n[4:] else multidomain.WIDE_LOCAL for n in names}


def use(n):
    multidomain.LANES_REGIONS = PER_GROUP[n]
    multidomain.WIDE_LOCAL = WIDE[n]
    return V[n]



dev = device.open_device(None, V[names[0]])
for p in rb.PROGRAMS:
    dev.program(p)
print(dev.name, flush=True)
hmms, seqs = rb.read_workload(M, S, 1)
db = press(hmms)
with pyhmmer.plan7.HMMFile(M) as f:
    H = list(f)
with pyhmmer.easel.SequenceFile(S, digital=True) as f:
    SQ = f.read_block()


def s(x):
    return x.decode() if isinstance(x, bytes) else x


def coords(ds):
    return [tuple(int(v) for v in d) for d in ds]


def pyhmmer_rows(seqs, **kw):
    """{(model, target): (score, reported domains' coordinates)} of pyhmmer.hmmsearch on 16 CPUs."""
    rows = {}
    for hits in pyhmmer.hmmsearch(H, seqs, cpus=16, **kw):
        for h in hits.reported:
            rows[(s(hits.query.name), s(h.name))] = (h.score, coords(
                (d.env_from, d.env_to, d.alignment.target_from, d.alignment.target_to, d.alignment.hmm_from,
                 d.alignment.hmm_to) for d in h.domains.reported))
    return rows


t = time.perf_counter()
ref = pyhmmer_rows(SQ, Z=9366)
print(f"pyhmmer dev x1 Z=9366: {len(ref)} hits, {sum(len(v[1]) for v in ref.values())} domains, "
      f"{time.perf_counter() - t:.1f} s", flush=True)


def our_rows(db, sq, Z, o, res=None):
    """Our rows as pyhmmer_rows gives them, of ``res`` or of a search at Z with the options o."""
    res = res or cascade.search(db, sq, dev, cascade.Thresholds(Z=Z), options=o)
    return {(h.model_name, h.target_name): (h.score, coords(
        (d.env_from, d.env_to, d.ali_from, d.ali_to, d.hmm_from, d.hmm_to) for d in h.domains if d.reported))
            for h in res.records if h.reported}


ours = our_rows(db, seqs, 9366, use(names[0]))
diff = [k for k in ref if k in ours and ref[k][1] != ours[k][1]]
print(json.dumps({"variant": names[0], "hits": len(ours), "missing": sum(k not in ours for k in ref),
                  "extra": sum(k not in ref for k in ours), "pairs_with_domain_rows_differing": len(diff),
                  "max_seq_score_diff_bits": round(max(abs(ref[k][0] - ours[k][0]) for k in ref if k in ours), 5),
                  "examples": [[k, ref[k][1], ours[k][1]] for k in diff[:6]]}), flush=True)
if os.environ.get("PFAMA"):  # pfamA_like.hmm (make_scale.py: the models x 9, copy c named <name>_c<c>) x the same
    # proteins at Z = 9,366: a copy scores exactly like its original, so each row is checked against pyhmmer's
    # row of the original model (pyhmmer is not run again on the copies)
    import re
    pa = press(rb.read_workload(os.environ["PFAMA"], S, 1)[0])
    t = time.perf_counter()
    big = our_rows(pa, seqs, 9366, use(names[0]))
    t = time.perf_counter() - t
    key = {k: (re.sub(r"_c\d+$", "", k[0]), k[1]) for k in big}
    want = {(f"{m}_c{c}", q) for (m, q) in ref for c in range(9)}
    diff = [k for k in big if key[k] in ref and ref[key[k]][1] != big[k][1]]
    print(json.dumps({"pfamA_like_x_dev": names[0], "models": len(pa.names) if hasattr(pa, "names") else None,
                      "search_s": round(t, 2), "hits": len(big), "missing": len(want - set(big)),
                      "extra": len(set(big) - want), "pairs_with_domain_rows_differing": len(diff),
                      "max_seq_score_diff_bits": round(max(abs(ref[key[k]][0] - big[k][0]) for k in big if key[k] in ref), 5),
                      "examples": [[k, ref[key[k]][1], big[k][1]] for k in diff[:6]]}), flush=True)
    del pa, big
cdb = press([h for h in hmms if h.name == "CbiA"])
one = seqs.subset([i for i, n in enumerate(seqs.names) if n == "efae|YP_005353338.1"])
for n in V:
    print(n, "CbiA x efae|YP_005353338.1 at Z=561960:", our_rows(cdb, one, 561960, use(n)), flush=True)
h10, s10 = rb.read_workload(M, S, 10)
db10 = press(h10)
first = None
for n in V:  # untimed; the first variant's result kept for its rows (DEVX10)
    res = cascade.search(db10, s10, dev, options=use(n))
    first = res if n == names[0] else first
del res
T = {n: [] for n in V}
for i in range(3):
    for n in V:
        o = use(n)
        t = time.perf_counter()
        cascade.search(db10, s10, dev, options=o)
        T[n].append(round(time.perf_counter() - t, 4))
med = {n: statistics.median(v) for n, v in T.items()}
print(json.dumps({"dev_x10_times": T, "medians": med,
                  "ratios_to_warp": {n: round(m / med["warp"], 4) for n, m in med.items()} if "warp" in med else {}}),
      flush=True)
if os.environ.get("DEVX10"):  # dev-x10's rows with the first variant against pyhmmer on the same 93,660 proteins
    block = pyhmmer.easel.DigitalSequenceBlock(SQ.alphabet)
    for c in range(10):
        for q in SQ:
            r = q.copy()
            r.name = f"{s(q.name)}/copy{c}".encode()
            block.append(r)
    t = time.perf_counter()
    ref10 = pyhmmer_rows(block)
    t = time.perf_counter() - t
    o10 = our_rows(db10, s10, len(s10), use(names[0]), first)  # (Z: the number of targets, as pyhmmer's)
    diff = [k for k in ref10 if k in o10 and ref10[k][1] != o10[k][1]]
    print(json.dumps({"dev_x10_rows": names[0], "pyhmmer_s": round(t, 1), "hits": len(o10), "pyhmmer_hits": len(ref10),
                      "domains": sum(len(v[1]) for v in o10.values()),
                      "missing": sum(k not in o10 for k in ref10), "extra": sum(k not in ref10 for k in o10),
                      "pairs_with_domain_rows_differing": len(diff),
                      "max_seq_score_diff_bits": round(max(abs(ref10[k][0] - o10[k][0]) for k in ref10 if k in o10), 5),
                      "examples": [[k, ref10[k][1], o10[k][1]] for k in diff[:6]]}), flush=True)
