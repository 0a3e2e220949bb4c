#!/bin/sh
# agent/test.sh: prove rtscope-agent (docs/agent.md) works. Exit 0 only if
# every step passed; a step whose tool is missing (a cross compiler, qemu)
# is skipped with a message, never failed. Steps:
#   1. warning-free with gcc and clang (-std=c99 -Wall -Wextra -pedantic -Werror)
#   2. native: timer, periodic, sem, pipe, mq, signal, switch, preempt, pi plans -> results that parse and
#      hold (check_output.py: CRC, native bucket geometry, samples+overruns =
#      periods, tails, per-second counts)
#   3. stop mid-run keeps what was measured; a malformed line is answered
#      with an error and the agent keeps serving; TCP (--listen) on 127.0.0.1
#   4. no allocation after start-up (make test-alloc: allocs=0 in every done)
#   5. static cross-builds for aarch64 and armhf run under qemu-user (their
#      latencies mean nothing there; the results must come back and parse)
#   6. the generic POSIX port (port_posix.c) builds and measures
#   7. hostile input: 3000 random/mutated/truncated/oversized lines per seed
#   8. build options: TCP left out (RTSCOPE_TCP=0), a user's build whose
#      system headers warn (no -Werror there), the main path's stack
#   9. the agent's own threads below every measuring thread (chrt -f 50)
#  10. a measuring thread that stops counting is reported as stalled
#  11. a plan's waits (a 60 s interval) end at stop, its end, EOF
#  12. a variant refused at run time is refused alone (a forcing test build)
#  13. a late start is counted apart, not as a sample (a forcing test build)
#  14. a protocol refused at start-up is not announced; pi measures the rest
# Usage: agent/test.sh [--quick]   (--quick: shorter plans)
set -u
cd "$(dirname "$0")" || exit 2
HERE=$(pwd)
TMP=$(mktemp -d "${TMPDIR:-/tmp}/rtscope-agent-test.XXXXXX") || exit 2
trap 'rm -rf "$TMP"' EXIT INT TERM
FAILS=0
D=${AGENT_TEST_DURATION_NS:-400000000}

pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }
skip() { echo "SKIP: $*"; }

command -v python3 >/dev/null 2>&1 || { echo "agent/test.sh: python3 is needed for the output checker"; exit 2; }

# session AGENT_CMD OUT WAIT_S LINE... : feed signed lines one by one, each
# after the previous plan's done line (bounded wait), then bye.
session() {
    cmd=$1; out=$2; wait_s=$3; shift 3
    (
        k=0
        for l in "$@"; do
            ./rtscope-agent --sign "$l"
            k=$((k + 1))
            i=0
            while [ $i -lt $((wait_s * 10)) ]; do
                n=$(grep -c '^RTS1 done ' "$out" 2>/dev/null || true)
                [ "${n:-0}" -ge $k ] && break
                sleep 0.1; i=$((i + 1))
            done
        done
        ./rtscope-agent --sign bye
    ) | $cmd > "$out" 2>"$out.err"
}

PLAN_COMMON="priority=80 policy=fifo worst=5 warmup_ns=50000000"
CPUS=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1)
if [ "$CPUS" -ge 2 ]; then CPULIST=0,1; else CPULIST=0; fi
plans() {
    echo "plan id=1 probe=timer interval_ns=200000 duration_ns=$D cpus=$CPULIST threads=$(echo $CPULIST | tr ',' '\n' | wc -l) $PLAN_COMMON"
    echo "plan id=2 probe=sem interval_ns=1000000 duration_ns=$((D * 3)) cpus=$CPULIST threads=1 $PLAN_COMMON"
    echo "plan id=3 probe=mq interval_ns=1000000 duration_ns=$D cpus=$CPULIST threads=1 $PLAN_COMMON"
    echo "plan id=4 probe=pipe interval_ns=1000000 duration_ns=$D cpus=$CPULIST threads=1 $PLAN_COMMON"
    echo "plan id=5 probe=periodic periods_ns=10000000,20000000 duration_ns=$D cpus=0 threads=1 $PLAN_COMMON"
    echo "plan id=6 probe=signal interval_ns=1000000 duration_ns=$D cpus=$CPULIST threads=1 $PLAN_COMMON"
    echo "plan id=7 probe=switch interval_ns=1000000 duration_ns=$((D / 2)) cpus=0 threads=1 $PLAN_COMMON"
    echo "plan id=8 probe=preempt interval_ns=1000000 duration_ns=$D cpus=0 threads=1 $PLAN_COMMON"
    echo "plan id=9 probe=pi interval_ns=1000000 duration_ns=$((D * 2)) cpus=0 threads=1 pi_burst_ns=200000 $PLAN_COMMON"
}

run_plans() { # AGENT_CMD LABEL EXTRA_CHECK_ARGS WAIT_S
    cmd=$1; label=$2; extra=$3; wait_s=$4
    i=0
    plans > "$TMP/plans"
    while IFS= read -r p; do
        i=$((i + 1))
        probe=$(echo "$p" | sed 's/.*probe=\([a-z]*\).*/\1/')
        session "$cmd" "$TMP/$label.$i" "$wait_s" "$p"
        if python3 "$HERE/check_output.py" "$TMP/$label.$i" --expect-status complete $extra > "$TMP/$label.$i.check" 2>&1; then
            pass "$label $probe ($(grep -c '^ok' "$TMP/$label.$i.check") results)"
        else
            fail "$label $probe"; sed 's/^/    /' "$TMP/$label.$i.check" | tail -3
        fi
    done < "$TMP/plans"
}

# 1. compilers
for cc in gcc clang; do
    if command -v $cc >/dev/null 2>&1; then
        if make -s CC=$cc WERROR=-Werror OUT="$TMP/agent.$cc" >"$TMP/cc.$cc" 2>&1; then pass "builds warning-free with $cc"
        else fail "build with $cc"; tail -5 "$TMP/cc.$cc"; fi
    else
        skip "$cc not installed"
    fi
done
make -s rtscope-agent || { fail "native build"; exit 1; }

# 2. native plans
run_plans ./rtscope-agent native "" 30

# 3a. stop mid-run: results of the running variant come back, marked stopped
(
    ./rtscope-agent --sign "plan id=9 probe=timer interval_ns=1000000 duration_ns=30000000000 cpus=0 threads=1 $PLAN_COMMON"
    i=0; until grep -q '^RTS1 progress ' "$TMP/stop" 2>/dev/null || [ $i -ge 100 ]; do sleep 0.1; i=$((i + 1)); done
    ./rtscope-agent --sign "stop id=9"
    i=0; until grep -q '^RTS1 done ' "$TMP/stop" 2>/dev/null || [ $i -ge 100 ]; do sleep 0.1; i=$((i + 1)); done
    ./rtscope-agent --sign bye
) | ./rtscope-agent > "$TMP/stop"
if python3 check_output.py "$TMP/stop" --expect-status stopped >/dev/null 2>"$TMP/stop.check" &&
   grep -q '^RTS1 result .* stopped=1' "$TMP/stop" && ! grep -q '^RTS1 result .* samples=0 ' "$TMP/stop"; then
    pass "stop mid-run keeps the samples ($(sed -n 's/^RTS1 result .* samples=\([0-9]*\) .*/\1/p' "$TMP/stop") of a 30 s run)"
else
    fail "stop mid-run"; cat "$TMP/stop.check"
fi

# 3b. malformed lines: error naming the line, then the agent still answers
( echo "RTS1 plan id=1 probe=timer *00000000"; echo "noise from a console"; ./rtscope-agent --sign "hi"; ./rtscope-agent --sign bye ) |
    ./rtscope-agent > "$TMP/bad"
if grep -q '^RTS1 error id=- code=bad-line line=1 msg=checksum%20mismatch' "$TMP/bad" &&
   [ "$(grep -c '^RTS1 hello ' "$TMP/bad")" = 2 ] && grep -q '^RTS1 bye ' "$TMP/bad"; then
    pass "bad checksum -> error code=bad-line line=1; noise ignored; session goes on"
else
    fail "malformed line handling"; cat "$TMP/bad"
fi
long=$(head -c 1100 /dev/zero | tr '\0' 'x')
( echo "RTS1 plan $long"; ./rtscope-agent --sign bye ) | ./rtscope-agent > "$TMP/long"
if grep -q '^RTS1 error id=- code=too-long line=1' "$TMP/long" && grep -q '^RTS1 bye ' "$TMP/long"; then
    pass "line over 1024 bytes -> error code=too-long, skipped"
else
    fail "overlong line"; cat "$TMP/long"
fi
( ./rtscope-agent --sign "plan id=3 probe=timer interval_ns=1000000 duration_ns=1000000 priority=80 policy=fifo cpus=0 threads=999 worst=5"; ./rtscope-agent --sign bye ) |
    ./rtscope-agent > "$TMP/badplan"
if grep -q '^RTS1 error id=3 code=plan line=1 msg=threads' "$TMP/badplan"; then
    pass "invalid plan -> error code=plan naming the key"
else
    fail "invalid plan"; cat "$TMP/badplan"
fi

# 3c. TCP listen mode on loopback
PORT=$((20000 + $$ % 20000))
./rtscope-agent --listen $PORT --once 2>"$TMP/listen.err" &
APID=$!
python3 - "$PORT" "$TMP/tcp" <<'PY'
import socket, sys, time, zlib
port, out = int(sys.argv[1]), sys.argv[2]
def sign(b): return f"RTS1 {b} *{zlib.crc32(('RTS1 ' + b).encode()):08x}\n".encode()
for _ in range(100):
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=30); break
    except OSError: time.sleep(0.1)
s.sendall(sign("plan id=1 probe=timer interval_ns=1000000 duration_ns=300000000 priority=80 policy=fifo cpus=0 threads=1 worst=5"))
buf = b""
while b"RTS1 done " not in buf:
    d = s.recv(65536)
    if not d: break
    buf += d
s.sendall(sign("bye"))
while not buf.rstrip().split(b"\n")[-1].startswith(b"RTS1 bye"):
    d = s.recv(65536)
    if not d: break
    buf += d
open(out, "wb").write(buf)
PY
wait $APID; arc=$?
if [ $arc = 0 ] && python3 check_output.py "$TMP/tcp" --expect-status complete >/dev/null 2>"$TMP/tcp.check"; then
    pass "TCP --listen on 127.0.0.1:$PORT (one session, --once)"
else
    fail "TCP listen (agent exit $arc)"; cat "$TMP/tcp.check" "$TMP/listen.err"
fi

# 4. no allocation after start-up
if [ "$(uname -s)" = Linux ] && make -s test-alloc >"$TMP/alloc.build" 2>&1; then
    run_plans ./rtscope-agent-alloc alloc "--allocs-zero" 30
else
    skip "test-alloc (needs Linux/glibc)"; cat "$TMP/alloc.build" 2>/dev/null
fi

# 5. static cross-builds under qemu-user
for pair in aarch64-linux-gnu-gcc:qemu-aarch64-static arm-linux-gnueabihf-gcc:qemu-arm-static; do
    cc=${pair%%:*}; qemu=${pair#*:}
    if ! command -v "$cc" >/dev/null 2>&1; then skip "$cc not installed"; continue; fi
    if ! make -s CC="$cc" LDFLAGS=-static OUT="$TMP/agent.$cc" >"$TMP/cross.$cc" 2>&1; then
        fail "static build with $cc"; tail -5 "$TMP/cross.$cc"; continue
    fi
    pass "static build with $cc ($(wc -c < "$TMP/agent.$cc") bytes)"
    if ! command -v "$qemu" >/dev/null 2>&1; then skip "$qemu not installed"; continue; fi
    run_plans "$qemu $TMP/agent.$cc" "qemu-${cc%%-*}" "" 60
done

# 6. the generic POSIX port (port_posix.c): built here by hiding __linux__,
#    it must compile warning-free, offer no Linux-only variant, and measure.
if make -s PORT=posix WERROR=-Werror CFLAGS="-O2 -U__linux__" OUT="$TMP/agent.posix" >"$TMP/posix.build" 2>&1; then
    session "$TMP/agent.posix" "$TMP/posix" 30 \
        "plan id=1 probe=timer interval_ns=1000000 duration_ns=$D cpus=0 threads=1 $PLAN_COMMON" \
        "plan id=2 probe=sem variants=posix/same-cpu,mutex/cross-cpu interval_ns=1000000 duration_ns=$D cpus=$CPULIST threads=1 $PLAN_COMMON" \
        "plan id=3 probe=periodic periods_ns=10000000 duration_ns=$D cpus=0 threads=1 $PLAN_COMMON"
    if python3 check_output.py "$TMP/posix" --expect-status complete --min-results 2 >/dev/null 2>"$TMP/posix.check" &&
       ! grep -q '^RTS1 probe name=preempt' "$TMP/posix" && { [ "$CPULIST" = 0 ] || ! grep -q '^RTS1 probe name=switch' "$TMP/posix"; } && grep -q '^RTS1 probe name=signal variants=pthread_kill ' "$TMP/posix" &&
       grep -q 'step=affinity\[thread%200\] outcome=skipped detail=not%20pinned:%20this%20system%20has%20no%20CPU%20affinity%20call' "$TMP/posix" &&
       grep -q 'step=main%20thread%20placement outcome=skipped detail=no%20CPU%20affinity' "$TMP/posix" &&
       ! grep -q '^RTS1 result .* cpu=[0-9]' "$TMP/posix" && [ "$(grep -c '^RTS1 result .* cpu=- ' "$TMP/posix")" = "$(grep -c '^RTS1 result ' "$TMP/posix")" ] &&
       { [ "$CPULIST" = 0 ] || grep -q '^RTS1 note id=2 n=1 text=cross-CPU%20not%20placed' "$TMP/posix"; }; then
        pass "generic POSIX port: no futex/sigqueue variants, no switch on several CPUs without affinity, pinning (not pinned: no CPU affinity call) and placement reported as skipped, unpinned threads cpu=- (periodic's period-error blocks too), an unplaced cross-cpu variant says so, results parse"
    else
        fail "generic POSIX port"; cat "$TMP/posix.check"; grep '^RTS1 \(result\|note\|probe\)' "$TMP/posix" | cut -c1-160
    fi
else
    fail "generic POSIX port build"; tail -5 "$TMP/posix.build"
fi

# 12. a variant the system refuses at run time (-DRTSCOPE_TEST_REFUSE_PROTECT:
#     pthread_mutexattr_setprotocol ENOTSUP for pi:protect) is refused alone:
#     the step refused[pi:protect] names the call, the others are measured.
if make -s WERROR=-Werror CFLAGS="-O2 -DRTSCOPE_TEST_REFUSE_PROTECT" OUT="$TMP/agent.refuse" >"$TMP/refuse.build" 2>&1; then
    session "$TMP/agent.refuse" "$TMP/refuse" 30 \
        "plan id=1 probe=pi interval_ns=1000000 duration_ns=$((D * 2)) cpus=0 threads=1 pi_burst_ns=200000 $PLAN_COMMON"
    if python3 check_output.py "$TMP/refuse" --expect-status complete --min-results 3 >/dev/null 2>"$TMP/refuse.check" &&
       grep -q '^RTS1 setup id=1 n=- step=refused\[pi:protect\] outcome=failed detail=pi%20protect:%20pthread_mutexattr_setprotocol:%20ENOTSUP' "$TMP/refuse" &&
       [ "$(grep -c '^RTS1 result ' "$TMP/refuse")" = 3 ] && ! grep -q '^RTS1 result .* variant=protect ' "$TMP/refuse"; then
        pass "a variant refused at run time (pi:protect, ENOTSUP) is named; none, inherit, deadlock-break measured"
    else
        fail "refused variant"; cat "$TMP/refuse.check"; grep '^RTS1 \(setup id=1 n=-\|result\|done\|error\)' "$TMP/refuse" | cut -c1-160
    fi
else
    fail "refusing test build"; tail -5 "$TMP/refuse.build"
fi

# 13. a late start (the period already due as the loop is about to sleep) is
#     counted apart, not as a sample: -DRTSCOPE_TEST_LATE_START=10 makes
#     every 10th period start late (200 periods: 19, or 18 if stop came).
if make -s WERROR=-Werror CFLAGS="-O2 -DRTSCOPE_TEST_LATE_START=10" OUT="$TMP/agent.late" >"$TMP/late.build" 2>&1; then
    session "$TMP/agent.late" "$TMP/late" 30 \
        "plan id=1 probe=timer interval_ns=1000000 duration_ns=200000000 cpus=0 threads=1 $PLAN_COMMON"
    late=$(sed -n 's/^RTS1 result .* late_starts=\([0-9]*\) .*/\1/p' "$TMP/late")
    if python3 check_output.py "$TMP/late" --expect-status complete >/dev/null 2>"$TMP/late.check" && [ "${late:-0}" -ge 10 ]; then
        pass "forced late starts counted apart: late_starts=$late, samples + overruns = periods"
    else
        fail "late starts"; cat "$TMP/late.check"; grep '^RTS1 result' "$TMP/late" | cut -c1-200
    fi
else
    fail "late-start test build"; tail -5 "$TMP/late.build"
fi

# 14. a mutex protocol the system refuses at start-up is left out of the
#     probe line (-DRTSCOPE_TEST_NO_PROTECT: pthread_mutexattr_setprotocol
#     ENOTSUP for PTHREAD_PRIO_PROTECT): pi announces none, inherit and
#     deadlock-break, a plan of all its variants measures those three, and a
#     plan naming protect is refused as a variant the agent does not have.
if make -s WERROR=-Werror CFLAGS="-O2 -DRTSCOPE_TEST_NO_PROTECT" OUT="$TMP/agent.noprot" >"$TMP/noprot.build" 2>&1; then
    session "$TMP/agent.noprot" "$TMP/noprot" 30 \
        "plan id=1 probe=pi interval_ns=1000000 duration_ns=$((D * 2)) cpus=0 threads=1 pi_burst_ns=200000 $PLAN_COMMON"
    session "$TMP/agent.noprot" "$TMP/noprot2" 2 \
        "plan id=2 probe=pi variants=protect interval_ns=1000000 duration_ns=$D cpus=0 threads=1 $PLAN_COMMON"
    if python3 check_output.py "$TMP/noprot" --expect-status complete --min-results 3 >/dev/null 2>"$TMP/noprot.check" &&
       grep -q '^RTS1 probe name=pi variants=none,inherit,deadlock-break ' "$TMP/noprot" &&
       [ "$(grep -c '^RTS1 result ' "$TMP/noprot")" = 3 ] &&
       grep -q '^RTS1 result .* variant=none ' "$TMP/noprot" && grep -q '^RTS1 result .* variant=inherit ' "$TMP/noprot" &&
       ! grep -q 'protect' "$TMP/noprot" &&
       grep -q '^RTS1 error id=2 code=unsupported ' "$TMP/noprot2" && ! grep -q '^RTS1 result ' "$TMP/noprot2"; then
        pass "a protocol refused at start-up (protect, ENOTSUP) is left out of pi's probe line; none, inherit, deadlock-break measured; a plan naming protect is unsupported"
    else
        fail "protocol refused at start-up"; cat "$TMP/noprot.check"; grep '^RTS1 \(probe name=pi\|result\|done\|error\)' "$TMP/noprot" "$TMP/noprot2" | cut -c1-160
    fi
else
    fail "no-protect test build"; tail -5 "$TMP/noprot.build"
fi

# 8. build options and what a small RTOS needs (issue 48: items 2, 3, 9)
#    TCP left out (RTSCOPE_TCP=0): no socket call linked, --listen says so.
if make -s RTSCOPE_TCP=0 WERROR=-Werror OUT="$TMP/agent.notcp" >"$TMP/notcp.build" 2>&1; then
    "$TMP/agent.notcp" --listen 0 >/dev/null 2>"$TMP/notcp.err"; nrc=$?
    if [ $nrc = 2 ] && grep -q 'built without TCP (RTSCOPE_TCP=0)' "$TMP/notcp.err" &&
       ! nm -u "$TMP/agent.notcp" | grep -qw 'socket\|socket@.*\|accept\|bind'; then
        pass "RTSCOPE_TCP=0: no socket/bind/accept linked; --listen is exit 2 saying TCP was left out"
    else
        fail "RTSCOPE_TCP=0 (exit $nrc)"; cat "$TMP/notcp.err"; nm -u "$TMP/agent.notcp" | grep -w 'socket\|bind\|accept'
    fi
else
    fail "build with RTSCOPE_TCP=0"; tail -5 "$TMP/notcp.build"
fi
#    A user's build with system headers that are not warning-free (NuttX's
#    PTHREAD_MUTEX_INITIALIZER leaves a field out): warnings, not errors.
printf 'struct rtos_mutex { int a, b; };\nstatic inline int rtos_init(void) { struct rtos_mutex m = {1}; return m.a; }\n' > "$TMP/rtos.h"
if make -s CFLAGS="-O2 -include $TMP/rtos.h" OUT="$TMP/agent.userbuild" >"$TMP/userbuild.out" 2>&1 &&
   grep -q 'missing-field-initializers' "$TMP/userbuild.out"; then
    pass "a user's build: a header's -Wmissing-field-initializers is a warning, not an error (-Werror only in check builds)"
else
    fail "a user's build with a warning in a system header"; tail -5 "$TMP/userbuild.out"
fi
#    Stack: the session's deepest chain from main, gcc's own frame sizes.
if gcc -fcallgraph-info=su -x c -c /dev/null -o /dev/null 2>/dev/null; then
    mkdir -p "$TMP/su"
    for f in $(make -s PORT=posix sources); do
        gcc -std=c99 -O2 -U__linux__ -fstack-usage -fcallgraph-info=su -c "$f" -o "$TMP/su/${f%.c}.o" 2>>"$TMP/su.err"
    done
    if python3 stack_usage.py "$TMP/su" main --max 3072 \
        --indirect session=on_hi,on_bye,on_stop,on_plan,on_own --indirect dispatch=on_hi,on_bye,on_stop,on_plan,on_own \
        --indirect run_submit=announce_plan > "$TMP/su.out" 2>&1; then
        pass "stack: main's deepest chain $(tail -1 "$TMP/su.out" | awk '{print $1}') bytes + libc (limit 3072; docs/porting.md)"
    else
        fail "stack of the main path"; cat "$TMP/su.out" "$TMP/su.err" | tail -12
    fi
else
    skip "stack check (gcc without -fcallgraph-info)"
fi

# 9. the agent's own threads run below every measuring thread (issue 48,
#    item 4): started at SCHED_FIFO 50 (as an RTOS starts its first task),
#    a timer plan at priority 40 must find no thread of the agent above it.
#    Linux port: its threads at SCHED_OTHER; generic port: at the lowest
#    FIFO priority, and a plan that cannot be above them is refused.
own_prio_check() { # AGENT PRIO -> "policy rt_priority" of every thread while measuring, then hello/error
    a=$1; o="$TMP/prio.$$"; : > "$o"
    ( "$a" --sign "plan id=1 probe=timer interval_ns=1000000 duration_ns=1000000000 priority=$2 policy=fifo cpus=0 threads=1 worst=5"
      i=0; until grep -q '^RTS1 \(progress\|error\) ' "$o" || [ $i -ge 50 ]; do sleep 0.1; i=$((i + 1)); done
      pid=$(cat "$o.pid" 2>/dev/null)
      for t in /proc/$pid/task/*; do sed 's/.*) //' "$t/stat" | awk '{print "thread", $39, $38}'; done > "$o.threads"
      i=0; until grep -q '^RTS1 \(done\|error\) ' "$o" || [ $i -ge 50 ]; do sleep 0.1; i=$((i + 1)); done
      "$a" --sign bye ) | chrt -f 50 sh -c 'echo $$ > "$1.pid"; exec "$2"' sh "$o" "$a" > "$o"
    cat "$o.threads"; grep '^RTS1 \(hello\|error\)' "$o"; rm -f "$o" "$o.pid" "$o.threads"
}
if chrt -f 50 true 2>/dev/null; then
    own_prio_check ./rtscope-agent 40 > "$TMP/prio.linux"
    own_prio_check "$TMP/agent.posix" 40 > "$TMP/prio.posix"
    own_prio_check "$TMP/agent.posix" 1 > "$TMP/prio.posix1"
    if [ "$(grep -c '^thread 1 40$' "$TMP/prio.linux")" = 1 ] && [ "$(grep -c '^thread 0 0$' "$TMP/prio.linux")" -ge 4 ] &&
       ! grep '^thread' "$TMP/prio.linux" | grep -v '^thread 0 0$' | grep -qv '^thread 1 40$' &&
       grep -q ' own_prio=0 ' "$TMP/prio.linux"; then
        pass "Linux port started at FIFO 50: measuring thread FIFO 40, $(grep -c '^thread 0 0$' "$TMP/prio.linux") own threads SCHED_OTHER"
    else
        fail "Linux port: the agent's own threads vs the measuring thread"; cat "$TMP/prio.linux"
    fi
    if [ "$(grep -c '^thread 1 40$' "$TMP/prio.posix")" = 1 ] && [ "$(grep -c '^thread 1 1$' "$TMP/prio.posix")" -ge 4 ] &&
       ! grep '^thread' "$TMP/prio.posix" | grep -v '^thread 1 1$' | grep -qv '^thread 1 40$' &&
       grep -q ' prio_min=1 prio_max=99 own_prio=1 ' "$TMP/prio.posix" &&
       grep -q '^RTS1 error id=1 code=plan line=1 msg=priority:%201%20puts' "$TMP/prio.posix1"; then
        pass "generic port started at FIFO 50: own threads at FIFO 1 (announced own_prio=1), measuring FIFO 40; -p 1 refused"
    else
        fail "generic port: the agent's own threads vs the measuring thread"; cat "$TMP/prio.posix" "$TMP/prio.posix1"
    fi
else
    skip "own thread priorities (chrt -f needs root or CAP_SYS_NICE)"
fi

# 10. a measuring thread that stops counting (a wake-up the system lost) is
#     reported as stalled instead of hanging the plan (issue 48, item 8).
python3 stall_check.py ./rtscope-agent > "$TMP/stall" 2>&1; src=$?
if [ $src = 0 ]; then pass "stall: $(cat "$TMP/stall")"
elif [ $src = 77 ]; then skip "stall check: $(cat "$TMP/stall")"
else fail "stall"; cat "$TMP/stall"; fi

# 11. every wait a plan starts sees stop and the plan's end (issue 47, item
#     15): a 60 s interval ends at stop / its 50 ms end / the end of input;
#     2^63 ns values are error code=plan naming the key and range.
if python3 long_wait_check.py ./rtscope-agent > "$TMP/longwait" 2>&1; then pass "long waits: $(cat "$TMP/longwait")"
else fail "long waits"; cat "$TMP/longwait"; fi

# 7. hostile input (fuzz_lines.py), under ASan + UBSan where gcc has them
if make -s CC=gcc WERROR=-Werror CFLAGS="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer" OUT="$TMP/agent.asan" >"$TMP/asan.build" 2>&1; then
    fz="$TMP/agent.asan"; what="ASan+UBSan build"
else
    fz=./rtscope-agent; what="plain build (no sanitizer runtime)"
fi
for seed in 1 2; do
    if python3 fuzz_lines.py "$fz" $seed > "$TMP/fuzz.$seed" 2>&1; then
        pass "hostile input, seed $seed, $what: $(head -1 "$TMP/fuzz.$seed")"
    else
        fail "hostile input, seed $seed ($what)"; tail -20 "$TMP/fuzz.$seed"
    fi
done

if [ $FAILS -gt 0 ]; then
    echo "agent/test.sh: $FAILS FAILED"
    exit 1
fi
echo "agent/test.sh: all passed"
