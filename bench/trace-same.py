#!/usr/bin/env python3
"""Check that two bench-trace builds give the same figures (a simulator speed-up changes no result).

    bench/trace-same.py run BENCH_TRACE DIR [bench-trace options...]
        runs BENCH_TRACE with the options, -j 1, --summary-json DIR/summary.json and
        --plot DIR/plot (not with NO_PLOT=1 in the environment; plots are then not compared);
        its standard output goes to DIR/out.txt
    bench/trace-same.py compare BEFORE_DIR AFTER_DIR
        exits 0 when the two runs agree on every figure, 1 (listing the differences) otherwise

Compared: the printed output (every configuration's figures, buckets, queues, unfinished jobs,
ratios), the JSON summary and the plot data files (GPUs in use and jobs waiting over time, the
CDFs). Not compared: what measures the replay rather than the schedule (wall and CPU seconds,
cycle times, the "mean cycle time" ratio, PNG/SVG files). Cycles: the cycles run plus those
skipped must be equal (a run that skips cycles skips them at the seconds the other ran them).

Example (the acceptance check of the simulator speed-up: every configuration, the first 5,000
Philly jobs on 64 nodes):

    C="-c kube-batch -c fifo -c kube-batchd -c kube-batchd+reserve -c no-gang -c spread \
       -c preempt-reclaim -n 5000 --nodes 64"
    bench/trace-same.py run OLD/bin/bench-trace /tmp/before $C
    bench/trace-same.py run bin/bench-trace /tmp/after $C
    bench/trace-same.py compare /tmp/before /tmp/after
"""
import json
import os
import re
import subprocess
import sys

SCHED = re.compile(r"^  scheduler\s+(\d+) cycles(?: \(\+(\d+) [a-z ]+: nothing waited\))?,"
                   r".*; (\d+) pods placed$")
TIMING_KEYS = {"cycle_us", "wall_s", "cpu_s", "cycles", "cycles_skipped"}


def run(binary, out_dir, args):
    os.makedirs(out_dir, exist_ok=True)
    plot = ["--plot", os.path.join(out_dir, "plot")] if os.environ.get("NO_PLOT") is None else []
    cmd = [binary, "-j", "1", "--summary-json", os.path.join(out_dir, "summary.json")] + plot + args
    with open(os.path.join(out_dir, "out.txt"), "w") as out:
        return subprocess.call(cmd, stdout=out)


def text_lines(path):
    """The output with the replay's own measurements taken out; cycles as run + skipped."""
    lines = []
    for line in open(path):
        line = line.rstrip("\n")
        m = SCHED.match(line)
        if m:
            total = int(m.group(1)) + int(m.group(2) or 0)
            lines.append("  scheduler %d cycles due; %s pods placed" % (total, m.group(3)))
        elif line.startswith("  replay ") or line.startswith("  mean cycle time"):
            continue
        elif line.startswith("plots "):
            continue
        else:
            lines.append(line)
    while lines and lines[-1] == "":
        lines.pop()
    return lines


def summary(path):
    doc = json.load(open(path))
    for conf in doc.get("configurations", []):
        conf["cycles_due"] = conf.get("cycles", 0) + conf.get("cycles_skipped", 0)
        for k in TIMING_KEYS:
            conf.pop(k, None)
    return doc


def compare(before, after):
    problems = []
    a, b = text_lines(os.path.join(before, "out.txt")), text_lines(os.path.join(after, "out.txt"))
    if a != b:
        for i, (x, y) in enumerate(zip(a, b)):
            if x != y:
                problems.append("out.txt line %d:\n  - %s\n  + %s" % (i + 1, x, y))
                if len(problems) > 20:
                    break
        if len(a) != len(b):
            problems.append("out.txt: %d lines against %d" % (len(a), len(b)))
    sa, sb = summary(os.path.join(before, "summary.json")), summary(os.path.join(after, "summary.json"))
    if sa != sb:
        for ca, cb in zip(sa["configurations"], sb["configurations"]):
            for k in sorted(set(ca) | set(cb)):
                if ca.get(k) != cb.get(k):
                    problems.append("summary.json %s.%s: %r against %r"
                                    % (ca.get("name"), k, ca.get(k), cb.get(k)))
        if len(sa["configurations"]) != len(sb["configurations"]):
            problems.append("summary.json: configurations differ")
    pa, pb = os.path.join(before, "plot"), os.path.join(after, "plot")
    data = []
    if os.path.isdir(pa) != os.path.isdir(pb):
        problems.append("plot: only one run has plots")
    elif os.path.isdir(pa):
        data = sorted(f for f in os.listdir(pa) if f.endswith(".dat"))
        if data != sorted(f for f in os.listdir(pb) if f.endswith(".dat")):
            problems.append("plot: data files differ")
    for f in data:
        if os.path.exists(os.path.join(pb, f)) and \
                open(os.path.join(pa, f)).read() != open(os.path.join(pb, f)).read():
            problems.append("plot/%s differs" % f)
    for p in problems:
        print(p)
    n_conf = len(sa.get("configurations", []))
    print("%s: %d configurations, %d output lines, %d plot data files compared"
          % ("SAME" if not problems else "DIFFERENT", n_conf, len(a), len(data)))
    return 0 if not problems else 1


def main(argv):
    if len(argv) >= 3 and argv[0] == "run":
        return run(argv[1], argv[2], argv[3:])
    if len(argv) == 3 and argv[0] == "compare":
        return compare(argv[1], argv[2])
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
