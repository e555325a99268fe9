#!/usr/bin/env python3
"""A stand-in between a node and etcd, for the coordination scenarios.

  proxy.py PORT tcp TARGET_PORT   forwards TCP to 127.0.0.1:TARGET_PORT (kill it to cut the node off)
  proxy.py PORT html              answers every request with an HTML error page
  proxy.py PORT truncated         answers every request with JSON cut in the middle
  proxy.py PORT grant TARGET_PORT TTL
                                  forwards HTTP requests to etcd, with the TTL of every lease
                                  grant's answer replaced by TTL (a broken or hostile gateway)
  proxy.py PORT hang [FILE]       accepts every connection and never answers (creates FILE
                                  once it holds one: the node is inside a request)
  proxy.py PORT count TARGET_PORT FILE
                                  forwards TCP to 127.0.0.1:TARGET_PORT and keeps FILE at the
                                  bytes sent each way so far, "<to etcd> <from etcd>" (a benchmark's
                                  measure of what a node asks etcd)
  proxy.py PORT watchgate TARGET_PORT FLAG
                                  forwards HTTP requests to etcd one per connection; while the
                                  file FLAG exists, a watch request (/v3/watch) and a listing of
                                  keys only (the re-check's other way) are held unanswered (a
                                  re-check that cannot be made)
"""
import socket
import sys
import threading

port, mode = int(sys.argv[1]), sys.argv[2]


counted = [0, 0]
count_lock = threading.Lock()


def pipe(src, dst, way=None):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
            if way is not None:
                with count_lock:
                    counted[way] += len(data)
                    with open(sys.argv[4] + ".tmp", "w") as f:
                        f.write(f"{counted[0]} {counted[1]}\n")
                    import os
                    os.replace(sys.argv[4] + ".tmp", sys.argv[4])
    except OSError:
        pass
    finally:
        for s in (src, dst):
            try:
                s.close()
            except OSError:
                pass


def answer(conn, body, status="200 OK", ctype="application/json"):
    try:
        conn.recv(65536)
        head = f"HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        conn.sendall(head.encode() + body)
    except OSError:
        pass
    conn.close()


hung = []


def grant(conn):
    """One HTTP request forwarded to etcd; a lease grant's TTL rewritten."""
    import http.client
    import json
    try:
        f = conn.makefile("rb")
        line = f.readline().decode()
        method, path = line.split()[:2]
        headers, length = {}, 0
        while True:
            h = f.readline().decode()
            if h in ("\r\n", "\n", ""):
                break
            k, v = h.split(":", 1)
            headers[k.strip()] = v.strip()
            if k.strip().lower() == "content-length":
                length = int(v)
        body = f.read(length)
        up = http.client.HTTPConnection("127.0.0.1", int(sys.argv[3]), timeout=10)
        up.request(method, path, body, {k: v for k, v in headers.items() if k.lower() != "host"})
        r = up.getresponse()
        data = r.read()
        if path == "/v3/lease/grant" and r.status == 200:
            j = json.loads(data)
            j["TTL"] = sys.argv[4]
            data = json.dumps(j).encode()
        conn.sendall(f"HTTP/1.1 {r.status} OK\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\n"
                     "Connection: close\r\n\r\n".encode() + data)
    except (OSError, ValueError):
        pass
    conn.close()


def watchgate(conn):
    """One HTTP request forwarded raw to etcd (streams too), or held when it
    is a watch and the flag file exists."""
    import os
    try:
        f = conn.makefile("rb")
        line = f.readline()
        path = line.decode().split()[1]
        head, length = [], 0
        while True:
            h = f.readline()
            if h in (b"\r\n", b"\n", b""):
                break
            k = h.decode().split(":", 1)[0].strip().lower()
            if k == "content-length":
                length = int(h.decode().split(":", 1)[1])
            if k != "connection":
                head.append(h)
        body = f.read(length)
        listing = path == "/v3/kv/range" and b'"keys_only":true' in body.replace(b" ", b"")
        if (path == "/v3/watch" or listing) and os.path.exists(sys.argv[4]):
            hung.append(conn)
            return
        up = socket.create_connection(("127.0.0.1", int(sys.argv[3])))
        up.sendall(line + b"".join(head) + b"Connection: close\r\n\r\n" + body)
        pipe(up, conn)
    except (OSError, ValueError, IndexError):
        conn.close()


def serve(conn):
    if mode == "tcp":
        upstream = socket.create_connection(("127.0.0.1", int(sys.argv[3])))
        threading.Thread(target=pipe, args=(conn, upstream), daemon=True).start()
        pipe(upstream, conn)
    elif mode == "count":
        upstream = socket.create_connection(("127.0.0.1", int(sys.argv[3])))
        threading.Thread(target=pipe, args=(conn, upstream, 0), daemon=True).start()
        pipe(upstream, conn, 1)
    elif mode == "grant":
        grant(conn)
    elif mode == "watchgate":
        watchgate(conn)
    elif mode == "hang":
        hung.append(conn)  # kept open, never read or answered
        if len(sys.argv) > 3:
            open(sys.argv[3], "a").close()
    elif mode == "html":
        answer(conn, b"<html><body><h1>502 Bad Gateway</h1></body></html>", "502 Bad Gateway", "text/html")
    else:
        answer(conn, b'{"header":{"cluster_id":"1","revision":"1"},"ID":"23240355')


listener = socket.socket()
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind(("127.0.0.1", port))
listener.listen(64)
while True:
    c, _ = listener.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
