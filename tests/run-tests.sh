#!/bin/sh
# Runs each test binary given as an argument (GTest with --tap, or a fuzz replay), JOBS at a time,
# and ends with the failing binaries, each with its first failure, and the summary line
# "N passed, N failed". A binary that crashes or exits non-zero
# without reporting a failing case counts as one failure, so nothing fails silently.
# KB_TEST_WRAPPER (e.g. valgrind) is put in front of every binary.
set -u
JOBS=${JOBS:-2}
TIMEOUT=${KB_TEST_TIMEOUT:-300}
logdir=$(mktemp -d "${TMPDIR:-/tmp}/kb-tests.XXXXXX")
trap 'rm -rf "$logdir"' EXIT

run_one() {
    t=$1
    n=$(basename "$t")
    # shellcheck disable=SC2086
    timeout -k 10 "$TIMEOUT" ${KB_TEST_WRAPPER:-} "$t" --tap >"$logdir/$n.log" 2>&1
    echo $? >"$logdir/$n.rc"
}

running=0
for t in "$@"; do
    run_one "$t" &
    running=$((running + 1))
    if [ "$running" -ge "$JOBS" ]; then
        wait -n 2>/dev/null || wait
        running=$((running - 1))
    fi
done
wait

pass=0
fail=0
failed=""
for t in "$@"; do
    n=$(basename "$t")
    ok=$(grep -c '^ok ' "$logdir/$n.log")
    bad=$(grep -c '^not ok ' "$logdir/$n.log")
    rc=$(cat "$logdir/$n.rc")
    if [ "$rc" -ne 0 ] && [ "$bad" -eq 0 ]; then
        bad=1
    fi
    pass=$((pass + ok))
    fail=$((fail + bad))
    if [ "$bad" -ne 0 ]; then
        echo "---- $n: FAILED (exit $rc)"
        tail -n 60 "$logdir/$n.log"
        failed="$failed $n"
    else
        echo "---- $n: $ok passed"
        # What a test wants seen even when it passes (e.g. which API servers it ran against).
        grep '^# report: ' "$logdir/$n.log" | sed 's/^# report: /     /'
    fi
done
# The failures again at the very end, so that a log cut to its last lines still names them.
for n in $failed; do
    rc=$(cat "$logdir/$n.rc")
    if [ "$rc" -eq 124 ]; then
        echo "FAILED $n (killed after ${TIMEOUT} s), its last lines:"
        tail -n 3 "$logdir/$n.log"
    elif grep -q '^not ok ' "$logdir/$n.log"; then
        echo "FAILED $n (exit $rc):"
        grep -E '^not ok |ERROR' "$logdir/$n.log" | head -n 5
    else
        echo "FAILED $n (exit $rc, no failing case reported), its last lines:"
        tail -n 3 "$logdir/$n.log"
    fi | sed '2,$s/^/    /'
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
