#!/usr/bin/env python3
"""Slow clients for test/serving/parts/35_slow_clients.sh: many connections
from one loopback address that send a request very slowly, to see the
gateway cut them off or refuse them.  Plain Python (asyncio), nothing to
install.  Bounded in count and time: it opens at most --count connections,
each lives at most --seconds, and then it ends by itself.

  headers  each connection sends a request line, then one header line
           every --interval seconds and never the blank line that ends
           the header; it reports when the gateway closed it
  bodies   each connection sends a whole header of a POST with a body of
           --length bytes, then one byte of the body every --interval
           seconds; it reports the status the gateway answered, if any

Writes its summary, one JSON object, to standard output; and --ready FILE
(the number of connections open) once every connection was tried (headers)
or every one was answered or has sent its header and a first byte of its
body (bodies).
"""
import argparse
import asyncio
import json
import resource
import time


def parse():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["headers", "bodies"])
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--source", default="127.0.0.2", help="the loopback address the connections come from")
    p.add_argument("--count", type=int, required=True)
    p.add_argument("--interval", type=float, required=True)
    p.add_argument("--seconds", type=float, required=True, help="the most any connection lives")
    p.add_argument("--length", type=int, default=1000)
    p.add_argument("--path", default="/v1/namespace/ns/list")
    p.add_argument("--ready", help="a file written once every connection is under way")
    p.add_argument("--reconnect", action="store_true", help="headers: make a connection the gateway closed again")
    p.add_argument("--cutoff", type=float, default=20, help="headers: a life this long or longer overstayed")
    a = p.parse_args()
    if not a.source.startswith("127.") or a.count > 10000 or a.seconds > 120:
        p.error("loopback only, at most 10000 connections, at most 120 s")
    return a


class Run:
    def __init__(self, a):
        self.a = a
        self.start = time.monotonic()
        self.open_now = 0
        self.most_open = 0
        self.failed = 0  # connections that could not be made
        self.lifetimes = []  # headers: seconds from connect to the gateway's close
        self.open_at_end = []  # headers: the lives of those still open at --seconds
        self.statuses = {}  # bodies: status -> count ("none": no answer)
        self.refusals = []  # bodies: the first refusal's status line, headers and body
        self.under_way = 0
        self.all_under_way = asyncio.Event()

    def left(self):
        return self.a.seconds - (time.monotonic() - self.start)

    def note_under_way(self):
        self.under_way += 1
        if self.under_way >= self.a.count:
            self.all_under_way.set()

    async def connect(self):
        try:
            async with self.opening:
                reader, writer = await asyncio.wait_for(
                    asyncio.open_connection("127.0.0.1", self.a.port, local_addr=(self.a.source, 0)), 10)
        except (OSError, asyncio.TimeoutError):
            self.failed += 1
            self.note_under_way()
            return None, None
        self.open_now += 1
        self.most_open = max(self.most_open, self.open_now)
        return reader, writer

    def closed(self, writer):
        self.open_now -= 1
        try:
            writer.close()
        except OSError:
            pass

    async def slow_header(self, i):
        # (--reconnect: while time is left, a connection the gateway closed
        # is made again, as a client that insists would; one it closed at
        # once, after a pause)
        while True:
            reader, writer = await self.connect()
            if not reader:
                if not self.a.reconnect or self.left() <= 0.5:
                    return
                await asyncio.sleep(0.5)
                continue
            opened = time.monotonic()
            self.note_under_way()
            closed = False
            try:
                writer.write(b"GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n" % self.a.path.encode())
                line = 0
                while True:
                    left = self.left()
                    if left <= 0:
                        break
                    try:
                        data = await asyncio.wait_for(reader.read(65536), min(self.a.interval, left))
                    except asyncio.TimeoutError:
                        line += 1
                        writer.write(b"X-Slow-%d: %d\r\n" % (line, i))
                        continue
                    if not data:
                        closed = True
                        break
            except OSError:
                # a reset (reset_timedout_connection) is the gateway's close too
                closed = True
            life = time.monotonic() - opened
            self.closed(writer)
            if closed:
                self.lifetimes.append(life)
            else:
                self.open_at_end.append(life)
            if not closed or not self.a.reconnect or self.left() <= 0.5:
                return
            if life < 1:
                await asyncio.sleep(0.5)

    async def slow_body(self, i):
        reader, writer = await self.connect()
        if not reader:
            return
        opened = time.monotonic()
        status = "none"
        counted = False
        try:
            writer.write(b"POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-type: application/json\r\n"
                         b"content-length: %d\r\n\r\n{" % (self.a.path.encode(), self.a.length))
            sent = 1
            answer = reader.readuntil(b"\r\n\r\n")
            reading = asyncio.ensure_future(answer)
            while sent < self.a.length:
                left = self.left()
                if left <= 0:
                    break
                done, _ = await asyncio.wait({reading}, timeout=min(self.a.interval, left))
                if done:
                    break
                if not counted:
                    counted = True
                    self.note_under_way()
                writer.write(b" ")
                sent += 1
            if reading.done() and not reading.exception():
                head = reading.result().decode("latin-1")
                status = head.split(" ", 2)[1]
                if not self.refusals and status != "200":
                    length = 0
                    for h in head.split("\r\n")[1:]:
                        if h.lower().startswith("content-length:"):
                            length = int(h.split(":", 1)[1])
                    body = await asyncio.wait_for(reader.readexactly(length), 5) if length else b""
                    self.refusals.append(head + body.decode("latin-1"))
            else:
                reading.cancel()
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, asyncio.TimeoutError):
            pass
        if not counted:
            self.note_under_way()
        self.statuses[status] = self.statuses.get(status, 0) + 1
        self.closed(writer)

    async def main(self):
        # connections are made 200 at a time (connect): a burst of
        # thousands would overflow the listening socket's queue (511), and
        # a dropped SYN is tried again only after a second
        self.opening = asyncio.Semaphore(200)
        run = self.slow_header if self.a.mode == "headers" else self.slow_body
        ready = asyncio.ensure_future(self.write_ready())
        await asyncio.gather(*(run(i) for i in range(self.a.count)))
        ready.cancel()

    async def write_ready(self):
        await self.all_under_way.wait()
        if self.a.ready:
            with open(self.a.ready, "w") as f:
                f.write("%d\n" % self.open_now)


def main():
    a = parse()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < a.count + 64:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, a.count + 64) if hard > 0 else a.count + 64, hard))
    r = Run(a)
    asyncio.run(r.main())
    life = sorted(r.lifetimes)
    print(json.dumps({
        "mode": a.mode,
        "count": a.count,
        "failed": r.failed,
        "most_open": r.most_open,
        "closed_by_gateway": len(life),
        "open_at_end": len(r.open_at_end),
        "overstayed": sum(1 for t in life + r.open_at_end if t >= a.cutoff),
        "longest_life": round(max(life + r.open_at_end), 3) if life or r.open_at_end else None,
        "shortest_life": round(life[0], 3) if life else None,
        "statuses": r.statuses,
        "refusal": r.refusals[0] if r.refusals else None,
        "seconds": round(time.monotonic() - r.start, 3),
    }))


if __name__ == "__main__":
    main()
