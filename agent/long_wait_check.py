#!/usr/bin/env python3
"""Every wait a plan starts sees stop and the plan's end (issue 47, item 15).

Usage: long_wait_check.py AGENT

Before: `sem` / `pipe` with interval_ns=60 s never ended: the pair probes'
receiver slept to its next tick (an hour-long interval: an hour) while the
sender waited for it, so `stop`, `bye` and the end of input were ignored
and the 50 ms duration was not kept; interval_ns=2^63 overflowed the
deadlines. Checks, for every probe the agent offers (each variant of the
pair probes):
  1. a 120 s plan with a 60 s interval ends with `done` soon after `stop`
     (the old agent: a minute or more);
  2. a 50 ms plan with a 60 s interval ends at once (no tick in the plan);
  3. the end of input during such a plan ends the agent;
  4. interval_ns=2^63 / duration_ns=2^64-1 / warmup_ns=2^63 are refused with
     error code=plan naming the key and its range.
LIMIT (20 s) separates "ends at stop" (well under a second) from the old
"sleeps out the minute" with room for a loaded machine. Exit 0 when all
held, 1 naming what did not.
"""
import os
import sys
import time

from agent_pipe import Agent as AgentPipe

LIMIT = 20.0
IV = 60_000_000_000


class Agent(AgentPipe):
    """The pipe with this check's limit as its default."""

    def until(self, pred, limit=LIMIT):
        return super().until(pred, limit)

    def close(self, limit=LIMIT):
        return super().close(limit)


def main():
    path = sys.argv[1]
    a = Agent(path)
    probes = []
    while True:
        l = a.until(lambda l: l.startswith("RTS1 probe ") or l.startswith("RTS1 ready "))
        if l is None or l.startswith("RTS1 ready "):
            break
        f = dict(kv.split("=", 1) for kv in l.split()[2:-1])
        vs = [v for v in f.get("variants", "").split(",") if v]
        if f["name"] != "periodic":
            probes += [(f["name"], v) for v in vs] or [(f["name"], None)]
    cpus = "0,1" if (os.cpu_count() or 1) >= 2 else "0"
    common = f"cpus={cpus} threads=1 priority=80 policy=fifo worst=5"
    fails, pid, n = [], 0, 0
    for probe, v in probes:
        if v and "cross-cpu" in v and cpus == "0":
            continue
        var = f" variants={v}" if v else ""
        name = probe + (":" + v if v else "")
        for dur, stop in ((120_000_000_000, True), (50_000_000, False)):
            pid += 1
            a.send(f"plan id={pid} probe={probe}{var} interval_ns={IV} duration_ns={dur} {common}")
            if a.until(lambda l: l.startswith(f"RTS1 begin id={pid} ") or l.startswith(f"RTS1 error id={pid} ")) is None:
                fails.append(f"{name}: no begin for plan {pid}")
                continue
            t = time.monotonic()
            if stop:
                a.send(f"stop id={pid}")
            d = a.until(lambda l: l.startswith(f"RTS1 done id={pid} "))
            took = time.monotonic() - t
            if d is None:
                fails.append(f"{name}: no done within {LIMIT:.0f} s of {'stop' if stop else 'its 50 ms end'} (interval 60 s)")
            elif stop and " status=stopped " not in d:
                fails.append(f"{name}: {d}")
            n += 1
        if fails:
            break  # the agent is still in that plan: the rest would only wait too
    a.send("bye")
    if a.until(lambda l: l.startswith("RTS1 bye")) is None or not a.close():
        fails.append("bye after the long-interval plans: no answer")
    # 3. the end of input while the receiver sleeps out a 60 s tick
    b = Agent(path)
    b.send(f"plan id=1 probe=sem variants=posix/same-cpu interval_ns={IV} duration_ns=120000000000 {common}")
    if b.until(lambda l: l.startswith("RTS1 begin id=1 ")) is None:
        fails.append("EOF case: no begin")
    t = time.monotonic()
    if not b.close():
        fails.append(f"the end of input during a 60 s sem tick: the agent still ran after {LIMIT:.0f} s")
    # 4. values the agent cannot honour: error code=plan naming key and range
    c = Agent(path)
    for i, (kv, key) in enumerate(((f"interval_ns={1 << 63} duration_ns=50000000", "interval_ns"),
                                    (f"interval_ns=1000000 duration_ns={(1 << 64) - 1}", "duration_ns"),
                                    (f"interval_ns=1000000 duration_ns=50000000 warmup_ns={1 << 63}", "warmup_ns")), 1):
        c.send(f"plan id={i} probe=sem variants=posix/same-cpu {kv} {common}")
        e = c.until(lambda l: l.startswith(f"RTS1 error id={i} ") or l.startswith(f"RTS1 done id={i} "))
        if e is None or f"code=plan " not in e or f"msg={key}:" not in e or "365%20days" not in e and "1%20h" not in e:
            fails.append(f"{key} out of range: {e}")
    c.send("bye")
    c.close()
    if fails:
        for f in fails:
            print("FAIL:", f)
        return 1
    print(f"{n} long-interval plans over {len(probes)} probe variants ended at stop or their end; EOF ends the agent; 2^63 values refused as code=plan")
    return 0


if __name__ == "__main__":
    sys.exit(main())
