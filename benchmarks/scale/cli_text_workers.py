"""Where the CLI case's text phase goes: one search in this process, then its tblout and domtblout text
made by the forked text workers (``hmmcascade.text_workers.query_texts``) as the CLI makes them, each run's
start and end in its worker logged, printed per worker count: when the first text came back, when each
worker took its first run and ended its last, the runs' summed busy seconds.

    python3 benchmarks/scale/cli_text_workers.py M.hmmc S.faa.gz [WORKERS ...]   (default: 16 16 8)

Needs the prelude of ../shared/DEVICE.md on the GPU machine (the inputs as benchmarks/scale/cli_alternate.sh
makes them: /tmp/cli/m.hmmc, .devdata/proteins_dev.faa.gz).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time


def main(argv: list[str]) -> int:
    from hmmcascade import cascade, cli, device
    from hmmcascade import text_workers as tw
    from hmmcascade.cli_common import load_models, load_seqs, thresholds
    from hmmcascade.output import per_query_hits, query_infos

    models, seqs_path, counts = argv[0], argv[1], [int(w) for w in argv[2:]] or [16, 16, 8]
    args = cli.build_parser().parse_args(["search", models, seqs_path, "-o", os.devnull, "--model-parts", "1"])
    th = thresholds(args)
    options = cli._search_options(args)
    dev = device.open_device(args.device, options)
    db, seqs = load_models(models), load_seqs(seqs_path)
    res = cascade.search(db, seqs, dev, th, options=options)
    per_query = per_query_hits(res.records, query_infos(db), True, 0, ordered=True)
    streams = [cli._table_stream(args, kind, th, res.Z) for kind in ("tblout", "domtblout")]
    real = tw._run_text
    log = os.path.join(tempfile.mkdtemp(), "runs.txt")

    def logged(k):  # (in a worker: the run's start and end, appended whole)
        a = time.time()
        out = real(k)
        with open(log, "a") as fh:
            fh.write(f"{os.getpid()} {k} {a:.4f} {time.time():.4f}\n")
        return out

    tw._run_text = logged
    for w in counts:
        if os.path.exists(log):
            os.remove(log)
        t0, first, size = time.time(), None, 0
        for texts in tw.query_texts(streams, per_query, workers=w, min_rows=0):
            first = time.time() - t0 if first is None else first
            size += sum(map(len, texts))
        total = time.time() - t0
        tw.reap()
        runs: dict[str, list] = {}
        for pid, _, a, b in (line.split() for line in open(log)):
            runs.setdefault(pid, []).append((float(a) - t0, float(b) - t0))
        starts = sorted(min(a for a, _ in v) for v in runs.values())
        ends = sorted(max(b for _, b in v) for v in runs.values())
        busy = sum(b - a for v in runs.values() for a, b in v)
        print(f"workers={w}: {total:.3f} s, {size:,} characters, first text back at {first:.3f} s; busy {busy:.2f} s "
              f"in {sum(map(len, runs.values()))} runs")
        print(f"   first runs taken at {' '.join(f'{x:.3f}' for x in starts)}")
        print(f"   last runs ended at  {' '.join(f'{x:.3f}' for x in ends)}")
    return 0


if __name__ == "__main__":  # (the kernel builds' spawned processes import this file)
    sys.exit(main(sys.argv[1:]))
