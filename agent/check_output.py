#!/usr/bin/env python3
"""Check an rtscope-agent session transcript against docs/agent.md.

Independent of the agent's C code (CRC from zlib, bucket geometry from the
formula in docs/agent.md), so a bug on either side shows. Usage:

    check_output.py TRANSCRIPT [--expect-status complete|stopped] [--periods]
                    [--allocs-zero] [--min-results N]

Exits 1 naming the first line that is wrong; prints a one-line summary per
result block otherwise.

TRANSCRIPT is the agent's output as it came (`rtscope-agent < plan > out`), or
a transcript rtscope wrote with `--target-transcript FILE` (records
`SECONDS < LINE` from the target, `SECONDS > LINE` to it, `#` notes: the `<`
records are checked, as their lines, a console's `\r` dropped).
"""
import re
import sys
import zlib

RECORD = re.compile(r"^[0-9]+\.[0-9]+ (<\+?|>) ")

HIGHEST = 1 << 47


def geometry(v):
    if v < 2048:
        return v, v
    m = v.bit_length() - 1
    w = 1 << (m - 10)
    lo = v - v % w
    return lo, lo + w - 1


def fail(no, line, why):
    print(f"check_output: line {no}: {why}\n  {line[:200]}", file=sys.stderr)
    sys.exit(1)


def parse(no, line):
    if len(line) > 1024:
        fail(no, line, f"longer than 1024 bytes ({len(line)})")
    if not line.startswith("RTS1 "):
        fail(no, line, "not RTS1")
    body, sep, crc = line.rpartition(" *")
    if not sep or len(crc) != 8:
        fail(no, line, "no ' *crc' at the end")
    if int(crc, 16) != zlib.crc32(body.encode()):
        fail(no, line, f"crc {crc} != {zlib.crc32(body.encode()):08x}")
    parts = body.split(" ")
    kind = parts[1]
    f = {}
    for p in parts[2:]:
        k, eq, v = p.partition("=")
        if not eq:
            fail(no, line, f"field {p!r} is not key=value")
        if k in f:
            fail(no, line, f"key {k} twice")
        f[k] = v
    return kind, f


def from_target(lines):
    """The target's lines: a transcript's `<` records (the host's `>` ones
    and `#` notes as empty lines, so line numbers stay the file's), or the
    lines of a plain output; a `\r` before the line end dropped."""
    transcript = bool(lines) and lines[0].startswith("# rtscope ") and " transcript of " in lines[0]
    out = []
    for line in lines:
        if transcript:
            m = RECORD.match(line)
            line = line[m.end():] if m and m.group(1) != ">" else ""
        out.append(line[:-1] if line.endswith("\r") else line)
    return out


def main():
    args = sys.argv[1:]
    path = args[0]
    want_status = None
    allocs_zero = "--allocs-zero" in args
    min_results = 1
    if "--expect-status" in args:
        want_status = args[args.index("--expect-status") + 1]
    if "--min-results" in args:
        min_results = int(args[args.index("--min-results") + 1])
    lines = from_target(open(path, encoding="ascii", errors="surrogateescape").read().split("\n"))
    block = None
    blocks = 0
    total = 0
    done = None
    plan_duration = {}
    periodic_cpu = {}
    hello = False
    for no, line in enumerate(lines, 1):
        if not line.startswith("RTS"):
            continue
        if not line.isascii():
            fail(no, line.encode("ascii", "replace").decode(), "not ASCII")
        kind, f = parse(no, line)
        if kind == "hello":
            hello = True
            if f.get("proto") != "1":
                fail(no, line, "proto is not 1")
            for k in ("agent", "os", "release", "arch", "cpus", "clock", "res_ns", "preempt", "mlock"):
                if k not in f:
                    fail(no, line, f"hello without {k}")
            if allocs_zero and not int(f.get("allocs_startup", "0")) > 0:
                fail(no, line, "alloc counter saw no start-up allocation: is it live?")
        elif kind == "error":
            fail(no, line, "agent sent an error")
        elif kind == "ack":
            blocks = 0
        elif kind == "begin":
            plan_duration[f["variant"]] = int(f["duration_ns"])
        elif kind == "result":
            if block is not None:
                fail(no, line, "result inside a result block")
            block = dict(f=f, hist=[], tail=[], sec=[], setup=0, notes=0, no=no)
        elif kind == "note":
            if block is None or f["n"] != block["f"]["n"]:
                fail(no, line, "note outside its result block")
            block["notes"] += 1
        elif kind in ("hist", "tail", "sec", "setup") and f.get("n") != "-":
            if block is None or f["n"] != block["f"]["n"]:
                fail(no, line, f"{kind} outside its result block")
            if kind == "setup":
                block["setup"] += 1
            else:
                key = "b" if kind == "hist" else "s"
                block[kind] += [tuple(x.split(":")) for x in f[key].split(",")]
        elif kind == "end":
            if block is None or f["n"] != block["f"]["n"]:
                fail(no, line, "end without its result")
            check_block(no, line, block, plan_duration)
            bf = block["f"]
            if bf["probe"] == "periodic":
                # A period-error block is its latency block's thread: the same
                # CPU, `-` for both when the thread was not pinned.
                base = bf["variant"].removesuffix("/period-error")
                key = (base, bf["thread"])
                if base == bf["variant"]:
                    periodic_cpu[key] = bf["cpu"]
                elif key in periodic_cpu and periodic_cpu[key] != bf["cpu"]:
                    fail(no, line, f"period-error of {base} thread {bf['thread']} says cpu={bf['cpu']}, its latency block cpu={periodic_cpu[key]}")
            blocks += 1
            total += 1
            block = None
        elif kind == "done":
            done = f
            if int(f["results"]) != blocks:
                fail(no, line, f"done says {f['results']} results, {blocks} blocks came")
            if want_status and f["status"] != want_status:
                fail(no, line, f"status {f['status']}, expected {want_status}")
            if allocs_zero and f.get("allocs") != "0":
                fail(no, line, f"allocations after start-up: {f.get('allocs')}")
    if not hello:
        fail(0, "", "no hello")
    if done is None:
        fail(len(lines), "", "no done line")
    if total < min_results:
        fail(len(lines), "", f"{total} result blocks, expected at least {min_results}")


def check_block(no, line, b, plan_duration):
    f = b["f"]
    n = int(f["samples"])
    where = f"result n={f['n']} ({f['probe']} {f['variant']} thread {f['thread']})"
    if len(b["hist"]) != int(f["hist"]) or len(b["tail"]) != int(f["tail"]) or len(b["sec"]) != int(f["sec"]):
        fail(no, line, f"{where}: item counts differ from the result line")
    if b["setup"] != int(f["setup"]):
        fail(no, line, f"{where}: setup lines differ")
    if b["notes"] != int(f.get("notes", "0")):
        fail(no, line, f"{where}: note lines differ")
    if sum(int(c) for _, _, c in b["hist"]) != n:
        fail(no, line, f"{where}: bucket counts do not sum to samples")
    prev = -1
    lo_sum = hi_sum = 0
    mx = int(f["max_ns"])
    for lo, hi, c in b["hist"]:
        lo, hi, c = int(lo), int(hi), int(c)
        glo, ghi = geometry(lo)
        if glo != lo or (ghi != hi and not (lo == HIGHEST and hi == max(ghi, mx))):
            fail(no, line, f"{where}: bucket {lo}:{hi} is not the native geometry ({glo}:{ghi})")
        if lo <= prev:
            fail(no, line, f"{where}: buckets not ascending")
        prev = lo
        lo_sum += lo * c
        hi_sum += hi * c
    if n:
        mn = int(f["min_ns"])
        if not (int(b["hist"][0][0]) <= mn <= int(b["hist"][0][1])):
            fail(no, line, f"{where}: min outside the lowest bucket")
        if not (int(b["hist"][-1][0]) <= mx <= int(b["hist"][-1][1])):
            fail(no, line, f"{where}: max outside the highest bucket")
        s = int(f["sum"])
        if not lo_sum <= s <= hi_sum:
            fail(no, line, f"{where}: sum {s} outside the buckets' bounds {lo_sum}..{hi_sum}")
        if int(f["sumsq"]) * n < s * s:
            fail(no, line, f"{where}: sumsq < sum^2/n (negative variance)")
    lats = [(int(t[0]), int(t[2])) for t in b["tail"]]
    if lats != sorted(lats, key=lambda x: (-x[0], x[1])):
        fail(no, line, f"{where}: tail not largest first")
    if n and lats and lats[0][0] != mx:
        fail(no, line, f"{where}: tail's first is not the max")
    if len(lats) != min(n, int(f["tail_k"])):
        fail(no, line, f"{where}: tail has {len(lats)} samples, expected min(samples, tail_k)")
    if sum(int(s[1]) for s in b["sec"]) != n:
        fail(no, line, f"{where}: per-second counts do not sum to samples")
    if f["probe"] in ("timer", "periodic") and not f["variant"].endswith("/period-error") and f["stopped"] == "0" and "error" not in f:
        periods = plan_duration[f["variant"]] // int(f["interval_ns"])
        if n + int(f["overruns"]) != periods:
            fail(no, line, f"{where}: samples {n} + overruns {f['overruns']} != periods {periods}")
    if int(f.get("late_starts", "0")) > int(f["overruns"]):
        fail(no, line, f"{where}: late_starts {f['late_starts']} above overruns {f['overruns']}")
    if f["variant"].endswith("/period-error"):
        c, lo, hi, s = (int(x) for x in f["signed"].split(":"))
        if c != n:
            fail(no, line, f"{where}: signed count != samples")
    print(f"ok {where}: samples={n} overruns={f['overruns']} max={mx} buckets={len(b['hist'])} stopped={f['stopped']}")


main()
