#!/usr/bin/env python3
"""abuse.py: hostile callers against a running fuseboxd on 127.0.0.1, while
a measured call load runs (issue 27, "Done when").

    abuse.py PORT SECONDS OUT.json [calls-only]

For SECONDS, at once: two loops of GET /v1/requests/{unknown id} (F1),
2,000 slowloris connections trickling header bytes (F3), 1,500 POSTs that
announce a 512 KiB body and send half of it (F2); meanwhile 16 callers post
calls to /v1/routes/intent/call and time them. Writes a JSON summary: calls
answered per second, their p50/p99, answers by status, what the attackers
got back. Every socket goes to 127.0.0.1 only; every loop ends at the
deadline.
"""
import json
import socket
import sys
import threading
import time

HOST = "127.0.0.1"


def conn(port, timeout=5.0):
    s = socket.create_connection((HOST, port), timeout=timeout)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def http(port, method, path, body=b"", headers=None, timeout=5.0):
    """One request on its own connection: (status, seconds) or (None, seconds)."""
    t0 = time.monotonic()
    try:
        s = conn(port, timeout)
        h = "%s %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\n" % (method, path, port)
        for k, v in (headers or {}).items():
            h += "%s: %s\r\n" % (k, v)
        if body:
            h += "Content-Type: application/json\r\nContent-Length: %d\r\n" % len(body)
        s.sendall(h.encode() + b"\r\n" + body)
        data = b""
        while b"\r\n" not in data:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
        s.close()
        line = data.split(b"\r\n", 1)[0].split()
        return (int(line[1]) if len(line) > 1 else None), time.monotonic() - t0
    except OSError:
        return None, time.monotonic() - t0


def f1_loop(port, deadline, out):
    n = 0
    while time.monotonic() < deadline:
        st, _ = http(port, "GET", "/v1/requests/no-such-request-%d" % n)
        out.setdefault(str(st), 0)
        out[str(st)] += 1
        n += 1


def slowloris(port, deadline, count, out):
    socks = []
    for _ in range(count):
        if time.monotonic() >= deadline:
            break
        try:
            s = conn(port, 2.0)
            s.sendall(b"POST /v1/routes/intent/call HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            socks.append(s)
        except OSError:
            out["connect_failed"] = out.get("connect_failed", 0) + 1
    out["opened"] = len(socks)
    while time.monotonic() < deadline:
        for s in list(socks):
            try:
                s.send(b"X-a: b\r\n")
            except OSError:
                socks.remove(s)
                out["closed_by_daemon"] = out.get("closed_by_daemon", 0) + 1
        time.sleep(1.0)
    for s in socks:
        s.close()


def half_bodies(port, deadline, count, out):
    socks = []
    half = b"x" * (256 * 1024)
    for _ in range(count):
        if time.monotonic() >= deadline:
            break
        try:
            s = conn(port, 2.0)
            s.sendall(b"POST /v1/routes/intent/call HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                      b"Content-Type: application/json\r\nContent-Length: 524288\r\n\r\n")
            s.settimeout(0.01)
            try:
                s.sendall(half)
            except OSError:
                pass
            socks.append(s)
        except OSError:
            out["connect_failed"] = out.get("connect_failed", 0) + 1
    out["opened"] = len(socks)
    got = {}
    for s in socks:
        try:
            s.settimeout(0.05)
            line = s.recv(64).split(b"\r\n", 1)[0].split()
            if len(line) > 1:
                got[line[1].decode()] = got.get(line[1].decode(), 0) + 1
        except OSError:
            pass
    out["answered_early"] = got
    while time.monotonic() < deadline:
        time.sleep(0.2)
    for s in socks:
        s.close()


def caller(port, deadline, lat, status):
    body = b'{"input": "I want my money back"}'
    while time.monotonic() < deadline:
        st, dt = http(port, "POST", "/v1/routes/intent/call", body,
                      {"X-Fusebox-Budget-Ms": "2000"})
        lat.append(dt)
        status[str(st)] = status.get(str(st), 0) + 1


def pct(v, q):
    if not v:
        return None
    v = sorted(v)
    return v[min(len(v) - 1, int(q * len(v)))]


def main():
    port, secs, path = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
    calls_only = len(sys.argv) > 4 and sys.argv[4] == "calls-only"
    deadline = time.monotonic() + secs
    f1, slow, half, status = {}, {}, {}, {}
    lat = []
    threads = []
    if not calls_only:
        threads = [threading.Thread(target=f1_loop, args=(port, deadline, f1)) for _ in range(2)]
        threads.append(threading.Thread(target=slowloris, args=(port, deadline, 2000, slow)))
        threads.append(threading.Thread(target=half_bodies, args=(port, deadline, 1500, half)))
    for t in threads:
        t.start()
    time.sleep(min(2.0, secs / 4))  # the attack is in place before the calls
    callers = [threading.Thread(target=caller, args=(port, deadline, lat, status)) for _ in range(16)]
    t0 = time.monotonic()
    for t in callers:
        t.start()
    for t in callers + threads:
        t.join()
    span = max(time.monotonic() - t0, 1e-9)
    res = {"seconds": round(span, 1), "calls": len(lat), "calls_per_s": round(len(lat) / span, 1),
           "p50_ms": round(pct(lat, 0.5) * 1000, 1) if lat else None,
           "p99_ms": round(pct(lat, 0.99) * 1000, 1) if lat else None,
           "max_ms": round(max(lat) * 1000, 1) if lat else None,
           "call_status": status, "f1_status": f1, "slowloris": slow, "half_bodies": half}
    with open(path, "w") as f:
        json.dump(res, f, indent=1)
    print(json.dumps(res))


if __name__ == "__main__":
    main()
