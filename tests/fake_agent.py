#!/usr/bin/env python3
"""A scripted rtscope-agent for the host's hostile-agent tests (tests/hostile_agent.rs).

It speaks protocol 1 (docs/agent.md) with valid CRC-32 checksums, so what the
host refuses is refused for what the lines say, never for a broken checksum.
Usage: fake_agent.py SCRIPT [LOG]. SCRIPT holds one directive per line; LOG
(optional) receives every line the host sends, as it arrives.

  say BODY            send "RTS1 BODY *crc"; {id} is the last plan's id
  hello [K=V ...]     the announcement of a one-CPU Linux agent with the
                      probes timer, sem (posix/same-cpu, mutex/same-cpu) and
                      migrate; K=V replace or add hello keys, and
                      probe:NAME=V1,V2 (one or more) replace those probes
  plan                wait for the host's next plan line (its id becomes {id})
  stop                wait for the host's stop line
  block N PROBE VARIANT THREAD V1,V2,...
                      a well-formed result block (sums, buckets, tail, one
                      per-second slot) of these sample values
  raw TEXT            send TEXT and a newline, unsigned
  partial TEXT        send TEXT without a newline (the link dies mid-line)
  flood N BODY        send the signed line N times, in large writes
  noise N             send N lines of non-protocol text, in large writes
  forever BODY        send the signed line every 50 ms until killed; {n}
                      counts the lines sent (1, 2, ...)
  close-in            close the agent's input (the host's next write fails)
  sleep S             sleep S seconds
  exit C              exit with status C
Lines starting with # and empty lines are skipped.
"""
import os
import sys
import time
import zlib

OUT = sys.stdout.buffer
LOG = None
PLAN_ID = "1"


def signed(body):
    body = "RTS1 " + body.replace("{id}", PLAN_ID)
    return "%s *%08x\n" % (body, zlib.crc32(body.encode()) & 0xFFFFFFFF)


def send(text):
    OUT.write(text.encode() if isinstance(text, str) else text)
    OUT.flush()


def wait_for(kind):
    global PLAN_ID
    while True:
        line = sys.stdin.readline()
        if not line:
            sys.exit(0)
        if LOG:
            LOG.write(line)
            LOG.flush()
        parts = line.split()
        if len(parts) > 2 and parts[0] == "RTS1" and parts[1] == kind:
            for p in parts[2:]:
                if p.startswith("id="):
                    PLAN_ID = p[3:]
            return


def hello(extra):
    keys = dict(proto="1", agent="fake", os="Linux", release="1", version="1", arch="x86_64", host="fake",
                cpus="1", clock="CLOCK_MONOTONIC", res_ns="1", preempt="none", mlock="ok", max_threads="2",
                max_seconds="3600", max_line="1024")
    probes = []
    for kv in extra:
        k, _, v = kv.partition("=")
        if k.startswith("probe:"):
            probes.append((k[6:], v))
        else:
            keys[k] = v
    probes = probes or [("timer", ""), ("sem", "posix/same-cpu,mutex/same-cpu"), ("migrate", "")]
    send(signed("hello " + " ".join("%s=%s" % kv for kv in keys.items())))
    for name, variants in probes:
        send(signed("probe name=%s variants=%s" % (name, variants)))
    send(signed("ready probes=%d" % len(probes)))


def bucket_of(v):
    """The recorder's bucket of v (docs/agent.md, "result block")."""
    if v < 2048:
        return (v, v)
    w = 1 << (v.bit_length() - 1 - 10)
    return (v - v % w, v - v % w + w - 1)


def block(n, probe, variant, thread, values):
    vs = sorted(int(v) for v in values.split(","))
    s = len(vs)
    bs = sorted(set(bucket_of(v) for v in vs))
    head = ("result id={id} n=%s probe=%s variant=%s thread=%s cpu=0 interval_ns=1000000 samples=%d overruns=0 "
            "min_ns=%d max_ns=%d sum=%d sumsq=%d hist=%d tail=%d tail_k=8 worst=2 sec=1 width_s=1 setup=0 stopped=0"
            % (n, probe, variant, thread, s, vs[0], vs[-1], sum(vs), sum(v * v for v in vs),
               len(bs), min(s, 8)))
    send(signed(head))
    buckets = ",".join("%d:%d:%d" % (lo, hi, sum(1 for v in vs if lo <= v <= hi)) for lo, hi in bs)
    send(signed("hist id={id} n=%s b=%s" % (n, buckets)))
    tail = sorted(enumerate(vs), key=lambda iv: (-iv[1], iv[0]))[:8]
    send(signed("tail id={id} n=%s s=%s" % (n, ",".join("%d:%d:%d:0" % (v, i, i) for i, v in tail))))
    send(signed("sec id={id} n=%s s=0:%d:%d:%d:%d" % (n, s, vs[0], vs[-1], sum(vs))))
    send(signed("end id={id} n=%s" % n))


def repeat(data, n):
    chunk = data * max(1, 65536 // len(data))
    per = max(1, 65536 // len(data))
    while n > 0:
        k = min(n, per)
        send(chunk if k == per else data * k)
        n -= k


def main():
    global LOG
    if len(sys.argv) > 2:
        LOG = open(sys.argv[2], "a")
    with open(sys.argv[1]) as f:
        script = [l.rstrip("\n") for l in f]
    for d in script:
        if not d.strip() or d.startswith("#"):
            continue
        op, _, rest = d.partition(" ")
        if op == "say":
            send(signed(rest))
        elif op == "hello":
            hello(rest.split())
        elif op == "plan":
            wait_for("plan")
        elif op == "stop":
            wait_for("stop")
        elif op == "block":
            block(*rest.split())
        elif op == "raw":
            send(rest + "\n")
        elif op == "partial":
            send(rest)
        elif op == "flood":
            n, _, body = rest.partition(" ")
            repeat(signed(body).encode(), int(n))
        elif op == "noise":
            repeat(b"boot noise: this is not a protocol line, it is what a console prints\n", int(rest))
        elif op == "forever":
            n = 0
            while True:
                n += 1
                send(signed(rest.replace("{n}", str(n))))
                time.sleep(0.05)
        elif op == "close-in":
            os.close(0)
        elif op == "sleep":
            time.sleep(float(rest))
        elif op == "exit":
            OUT.flush()
            os._exit(int(rest))
        else:
            sys.exit("fake_agent.py: unknown directive %r" % d)


if __name__ == "__main__":
    try:
        main()
    except BrokenPipeError:
        os._exit(0)
