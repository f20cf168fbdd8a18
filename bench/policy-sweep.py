#!/usr/bin/env python3
"""Count, slice by slice, where configurations beat kube-batch on all four of issue 26's figures.

    bench/policy-sweep.py [-j N] [--sets tune,held,new] [--out DIR] BENCH_TRACE CONF... [-- OPTIONS]

CONF is a bench-trace built-in name (kube-batchd, kube-batchd-noreclaim, ...) or a scheduler
configuration file ending in .yaml. OPTIONS after "--" go to every bench-trace run (for example
--restart-cost none). Every slice is one bench-trace run: kube-batch first, then the CONFs, one
thread each (-j 1), so that the runs of a slice are alike; N slices run at once (default 2).

A configuration wins a slice when its mean JCT, p95 wait, p99 wait and p99 wait of jobs of 17 or
more GPUs (when the slice has any) are each at most kube-batch's. Per slice it prints those four
figures and the GPU utilization while jobs arrive; then per configuration and set, won / lost.

The sets (docs/benchmarks.md, "Policy quality"): "tune", the slices the policies were tuned on
(four Philly slices, four synthetic loads); "held", the held-out slices of rounds 4 and 5;
"new", the 5,000-job offsets first run in round 6. With --out, each slice's JSON summary is kept
in DIR and reused when the script runs again (delete DIR after a rebuild).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

SIZES7 = "sizes=1:60/2:10/4:8/8:8/16:6/32:5/64:3"
TUNE = [("n5000", "-n 5000 --nodes 64"), ("s5000", "--skip 5000 --nodes 64"),
        ("s10000", "--skip 10000 --nodes 32"), ("s50000", "--skip 50000 --nodes 64"),
        ("n2000", "-n 2000 --nodes 32"),
        ("syn7", f"--synthetic jobs=3000,rate=90,{SIZES7},seed=7 --nodes 64"),
        ("syn11", f"--synthetic jobs=3000,rate=70,{SIZES7},seed=11 --nodes 64"),
        ("syn3-45", "--synthetic jobs=3000,rate=45,seed=3 --nodes 32"),
        ("syn3-80", "--synthetic jobs=3000,rate=80,seed=3 --nodes 32")]
HELD = [(f"s{skip}", f"--skip {skip} --nodes {nodes}") for skip, nodes in [
    (12500, 64), (45000, 64), (47500, 64), (52500, 64), (60000, 32), (62500, 32), (67500, 32),
    (70000, 32), (72500, 64), (15000, 64), (25000, 32), (35000, 64), (46250, 64), (57500, 64),
    (61250, 32), (63750, 32), (68750, 32), (71250, 32), (73750, 64)]] + [
    ("syn13", "--synthetic jobs=3000,rate=60,seed=13 --nodes 32"),
    ("syn21", f"--synthetic jobs=3000,rate=80,{SIZES7},seed=21 --nodes 64")]
NEW = [(f"s{skip}", f"--skip {skip} --nodes 64")
       for skip in (2500, 7500, 17500, 22500, 27500, 32500, 37500, 42500, 77500)]
SETS = {"tune": TUNE, "held": HELD, "new": NEW}


def run_slice(args, out_dir, set_name, name, slice_args):
    path = os.path.join(out_dir, f"{set_name}-{name}.json")
    if not os.path.exists(path):
        cmd = [args.bench_trace] + slice_args.split() + [
            "-c", "kube-batch", "-j", "1", "--no-queues", "--summary-json", path]
        for conf in args.confs:
            cmd += ["-f", conf] if conf.endswith(".yaml") else ["-c", conf]
        cmd += args.options
        done = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if done.returncode != 0:
            sys.exit(f"policy-sweep: {' '.join(cmd)} failed:\n{done.stderr}")
    with open(path) as f:
        return json.load(f)


def four(conf):
    """mean JCT, p95 wait, p99 wait, 17+ GPU p99 wait (None without such jobs), in seconds."""
    big = [b for b in conf["buckets"] if b["gpus"] == "17+"]
    p99_big = big[0]["wait"]["p99"] if big and big[0]["jobs"] > 0 else None
    return conf["jct"]["mean"], conf["wait"]["p95"], conf["wait"]["p99"], p99_big


def wins(mine, base):
    return all(m <= b for m, b in zip(mine[:3], base[:3])) and (
        mine[3] is None or base[3] is None or mine[3] <= base[3])


def duration(secs):
    if secs is None:
        return "-"
    return f"{secs / 3600:.2f}h" if secs >= 3600 else f"{secs / 60:.1f}m"


def main():
    argv = sys.argv[1:]
    options = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[:argv.index("--")] if "--" in argv else argv
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("-j", type=int, default=2, help="slices run at once (2)")
    p.add_argument("--sets", default="tune,held,new", help="sets to run (tune,held,new)")
    p.add_argument("--out", help="keep each slice's JSON summary here, and reuse it")
    p.add_argument("bench_trace")
    p.add_argument("confs", nargs="+")
    args = p.parse_args(argv)
    args.options = options
    for s in args.sets.split(","):
        if s not in SETS:
            p.error(f"--sets: unknown set \"{s}\" (known: {', '.join(SETS)})")
    work = [(s, name, a) for s in args.sets.split(",") for name, a in SETS[s]]
    with tempfile.TemporaryDirectory() as tmp:
        out_dir = args.out or tmp
        os.makedirs(out_dir, exist_ok=True)
        with ThreadPoolExecutor(max(args.j, 1)) as ex:
            docs = list(ex.map(lambda w: run_slice(args, out_dir, *w), work))
    counts = {}
    for (set_name, name, _), doc in zip(work, docs):
        confs = doc["configurations"]
        base = four(confs[0])
        cells = [f"{set_name:4} {name:8} kube-batch " + "/".join(map(duration, base)) +
                 f" u{confs[0]['util_busy_arrivals'] * 100:.1f}"]
        for conf in confs[1:]:
            mine = four(conf)
            won = wins(mine, base)
            counts.setdefault((conf["name"], set_name), [0, 0])[0 if won else 1] += 1
            cells.append(("W " if won else "l ") + "/".join(map(duration, mine)) +
                         f" u{conf['util_busy_arrivals'] * 100:.1f}")
        print(" | ".join(cells))
    print("\nall four won / lost against kube-batch (mean JCT, p95, p99, 17+ GPU p99 wait):")
    for (conf, set_name), (won, lost) in counts.items():
        print(f"  {conf:40} {set_name:5} {won} / {lost}")


if __name__ == "__main__":
    main()
