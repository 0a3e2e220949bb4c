#!/usr/bin/env python3
"""The agent's worst stack use on a path, from gcc's own figures.

Usage: stack_usage.py DIR ROOT [--indirect CALLER=T1,T2 ...] [--max BYTES]

DIR holds the .ci files of `gcc -fstack-usage -fcallgraph-info=su` (one per
agent source). Prints the deepest call chain from ROOT (a function name) with
each frame's bytes (gcc's figure for the function, "static" or
"dynamic,bounded") and their sum; exit 1 if the sum is over --max. Calls
through a function pointer are the indirect targets given for their caller
(the session's handler table, run_submit's announce); calls into libc are
outside the sum and listed by name. Recursion is not expected: a cycle is an
error.
"""
import glob
import os
import re
import sys

NODE = re.compile(r'node: \{ title: "([^"]+)" label: "([^"]*)"')
EDGE = re.compile(r'edge: \{ sourcename: "([^"]+)" targetname: "([^"]+)"')
BYTES = re.compile(r'\\n(\d+) bytes \(')


def load(d):
    frames, calls, by_name = {}, {}, {}
    for path in glob.glob(os.path.join(d, "*.ci")):
        text = open(path).read()
        for title, label in NODE.findall(text):
            m = BYTES.search(label)
            if m:
                frames[title] = int(m.group(1))
                by_name.setdefault(title.rsplit(":", 1)[-1], []).append(title)
        for a, b in EDGE.findall(text):
            calls.setdefault(a, []).append(b)
    return frames, calls, by_name


def main():
    args = sys.argv[1:]
    if len(args) < 2:
        sys.exit(__doc__)
    d, root = args[0], args[1]
    indirect, limit, rest = {}, None, args[2:]
    while rest:
        if rest[0] == "--indirect":
            caller, targets = rest[1].split("=", 1)
            indirect[caller] = targets.split(",")
            rest = rest[2:]
        elif rest[0] == "--max":
            limit = int(rest[1])
            rest = rest[2:]
        else:
            sys.exit(f"stack_usage.py: unknown argument {rest[0]!r}")
    frames, calls, by_name = load(d)
    # A call's target: a static function's "file:name", or an extern name
    # resolved to its one definition; anything else is libc's.
    def resolve(t):
        if t in frames:
            return [t]
        return by_name.get(t, [])
    outside = set()
    memo = {}

    def deepest(f, seen):
        if f in memo:
            return memo[f]
        if f in seen:
            sys.exit(f"stack_usage.py: recursion through {f}")
        best = (0, [])
        name = f.rsplit(":", 1)[-1]
        for t in calls.get(f, []):
            targets = []
            if t == "__indirect_call":
                for n in indirect.get(name, []):
                    targets += resolve(n)
            else:
                targets = resolve(t)
                if not targets:
                    outside.add(t)
            for g in targets:
                c = deepest(g, seen | {f})
                if c[0] > best[0]:
                    best = c
        memo[f] = (frames[f] + best[0], [f] + best[1])
        return memo[f]

    roots = resolve(root)
    if not roots:
        sys.exit(f"stack_usage.py: no function {root} in {d}")
    total, chain = deepest(roots[0], frozenset())
    for f in chain:
        print(f"{frames[f]:7d}  {f.rsplit('/', 1)[-1]}")
    print(f"{total:7d}  bytes in all, from {root} (libc's own frames not counted: {', '.join(sorted(outside)[:12])} ...)")
    if limit is not None and total > limit:
        print(f"over the limit of {limit} bytes")
        sys.exit(1)


if __name__ == "__main__":
    main()
