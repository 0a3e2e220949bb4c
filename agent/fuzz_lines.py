#!/usr/bin/env python3
"""Hostile input for rtscope-agent: random, mutated, truncated, oversized and
wrongly-signed lines mixed with valid plans, stops and his (seeded). The
agent must answer every one, write only protocol lines, finish with bye and
exit 0. Usage: fuzz_lines.py AGENT [SEED]. Exit 1 on failure."""
import random, sys, zlib, subprocess
random.seed(int(sys.argv[2]) if len(sys.argv) > 2 else 1)
def sign(b): return f"RTS1 {b} *{zlib.crc32(('RTS1 ' + b).encode()):08x}"
valid = [sign("plan id=1 probe=timer interval_ns=1000000 duration_ns=20000000 priority=80 policy=fifo cpus=0 threads=1 worst=3"),
         sign("hi"), sign("stop id=1"), sign("plan id=2 probe=sem variants=posix/same-cpu interval_ns=100000 duration_ns=20000000 priority=80 policy=fifo cpus=0,1 threads=1 worst=3")]
lines = []
for i in range(3000):
    r = random.random()
    v = random.choice(valid)
    if r < 0.2:
        lines.append(v)
    elif r < 0.4:  # mutate a byte
        b = bytearray(v.encode()); j = random.randrange(len(b)); b[j] = random.randrange(256); lines.append(bytes(b).decode("latin1"))
    elif r < 0.55:  # truncate
        lines.append(v[:random.randrange(len(v))])
    elif r < 0.7:  # random fields, correctly signed
        fs = " ".join(f"{random.choice(['id','probe','cpus','threads','worst','x','interval_ns','duration_ns','variants','policy','priority'])}={random.choice(['','-1','0','1','99999999999999999999999','a%zz','%41','timer','0,1,','fifo','posix/same-cpu,'])}" for _ in range(random.randrange(12)))
        lines.append(sign(random.choice(["plan","stop","hi","zzz","bye-no"]) + (" " + fs if fs else "")))
    elif r < 0.8:
        lines.append("RTS1 " + "x" * random.randrange(2000))
    else:
        lines.append("".join(chr(random.randrange(1, 256)) for _ in range(random.randrange(100))).replace("\n", ""))
data = ("\n".join(lines) + "\n" + sign("hi") + "\n" + sign("bye") + "\n").encode("latin1")
p = subprocess.run([sys.argv[1]], input=data, capture_output=True, timeout=300)
out = p.stdout.decode("ascii")
ok = p.returncode == 0 and out.rstrip().endswith(out.rstrip().split("\n")[-1]) and out.rstrip().split("\n")[-1].startswith("RTS1 bye")
for l in out.split("\n"):
    if l and not l.startswith("RTS1 "): ok = False
print(f"rc {p.returncode}, {out.count(chr(10))} lines out, {out.count('RTS1 error')} errors, {out.count('RTS1 done')} plans done: {'ok' if ok else 'BAD'}")
if not ok or p.stderr:
    print(p.stderr.decode()[-2000:])
    sys.exit(1)
