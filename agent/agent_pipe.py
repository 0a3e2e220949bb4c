"""The agent's protocol over a pipe, for the check scripts beside it
(stall_check.py, long_wait_check.py): signed lines out, whole lines in."""
import os
import select
import subprocess
import time
import zlib


def sign(body):
    """`RTS1 BODY *crc` as the host sends it."""
    line = "RTS1 " + body
    return f"{line} *{zlib.crc32(line.encode()):08x}\n".encode()


class Agent:
    """An agent started as a child on stdin/stdout. `seen` keeps every line read."""

    def __init__(self, path):
        self.p = subprocess.Popen([path], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.buf = b""
        self.lines = []
        self.seen = []

    def send(self, body):
        self.p.stdin.write(sign(body))
        self.p.stdin.flush()

    def until(self, pred, limit):
        """Read lines until pred(line) holds (that line) or limit s pass (None)."""
        end = time.monotonic() + limit
        while True:
            for i, l in enumerate(self.lines):
                if pred(l):
                    del self.lines[: i + 1]
                    return l
            self.lines.clear()
            left = end - time.monotonic()
            if left <= 0:
                return None
            r, _, _ = select.select([self.p.stdout], [], [], left)
            if not r:
                return None
            d = os.read(self.p.stdout.fileno(), 65536)
            if not d:
                return None
            self.buf += d
            *done, self.buf = self.buf.split(b"\n")
            got = [x.decode(errors="replace") for x in done]
            self.lines += got
            self.seen += got

    def close(self, limit):
        """End of input; True when the agent then exits within limit s (else it is killed)."""
        try:
            self.p.stdin.close()
        except OSError:
            pass
        try:
            self.p.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
            return False
        return True
