#!/usr/bin/env python3
"""A measuring thread that stops counting is reported as stalled.

Usage: stall_check.py AGENT

Stands in for a wake-up an RTOS lost (issue 48: NuttX's sigwaitinfo missing
a pending signal): the agent measures a 30 s timer plan; this script stops
its one measuring thread alone with ptrace (PTRACE_SEIZE + PTRACE_INTERRUPT
stop that thread only, not the process). The agent must notice that the
thread stopped counting, send the results of what it measured with
stopped=1 and a failed set-up step "stall watch", end the plan with done
status=stopped, refuse the next plan while the thread is still stuck
(error code=internal), and take plans again once it is released. Exit 0
when all of that held, 1 naming what did not, 77 when ptrace is not allowed
here (a skip).
"""
import ctypes
import os
import sys
import time

from agent_pipe import Agent

PTRACE_DETACH, PTRACE_SEIZE, PTRACE_INTERRUPT = 17, 0x4206, 0x4207
WALL = 0x40000000
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]


def measuring_thread(pid, prio):
    for t in os.listdir(f"/proc/{pid}/task"):
        stat = open(f"/proc/{pid}/task/{t}/stat").read()
        f = stat[stat.rindex(")") + 2 :].split()
        if int(f[37]) == prio:  # field 40, rt_priority
            return int(t)
    return None


def fail(what, a):
    print(f"FAIL: {what}")
    for l in a.seen[-12:]:
        print("    " + l[:160])
    a.p.kill()
    sys.exit(1)


def main():
    a = Agent(sys.argv[1])
    plan = "probe=timer interval_ns=1000000 duration_ns={} priority=40 policy=fifo cpus=0 threads=1 worst=5"
    a.send("plan id=1 " + plan.format(30000000000))
    if not a.until(lambda l: l.startswith("RTS1 progress "), 10):
        fail("no progress line from the timer plan", a)
    tid = measuring_thread(a.p.pid, 40)
    if tid is None:
        fail("no thread at SCHED_FIFO 40 (is this root?)", a)
    if libc.ptrace(PTRACE_SEIZE, tid, None, None) != 0:
        print(f"SKIP: ptrace not allowed here ({os.strerror(ctypes.get_errno())})")
        a.p.kill()
        sys.exit(77)
    libc.ptrace(PTRACE_INTERRUPT, tid, None, None)
    os.waitpid(tid, WALL)
    t0 = time.monotonic()
    try:
        done = a.until(lambda l: l.startswith("RTS1 done "), 20)
        took = time.monotonic() - t0
        seen = "\n".join(a.seen)
        if not done or "status=stopped" not in done:
            fail(f"no done status=stopped within 20 s of the stall: {done}", a)
        if "stopped=1" not in seen or "step=stall%20watch outcome=failed detail=no%20event%20for%20" not in seen:
            fail("the result does not say stopped=1 and the stall watch step", a)
        a.send("plan id=2 " + plan.format(100000000))
        err = a.until(lambda l: l.startswith("RTS1 error id=2 ") or l.startswith("RTS1 ack id=2 "), 10)
        if not err or "code=internal" not in err or "stalled" not in err:
            fail(f"a plan while the thread is stuck: {err}", a)
    finally:
        libc.ptrace(PTRACE_DETACH, tid, None, None)
    time.sleep(0.5)
    a.send("plan id=3 " + plan.format(100000000))
    done = a.until(lambda l: l.startswith("RTS1 done id=3 ") or l.startswith("RTS1 error id=3 "), 20)
    if not done or "status=complete" not in done:
        fail(f"after the thread was released, a plan: {done}", a)
    a.send("bye")
    a.until(lambda l: l.startswith("RTS1 bye"), 10)
    a.p.wait(timeout=10)
    print(f"stall reported in {took:.1f} s (stopped=1, 'stall watch' failed, done status=stopped); "
          f"next plan refused while stuck, accepted once released")


if __name__ == "__main__":
    main()
