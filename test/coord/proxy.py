#!/usr/bin/env python3
"""A stand-in between a node and etcd, for the coordination scenarios.

  proxy.py PORT tcp TARGET_PORT   forwards TCP to 127.0.0.1:TARGET_PORT (kill it to cut the node off)
  proxy.py PORT html              answers every request with an HTML error page
  proxy.py PORT truncated         answers every request with JSON cut in the middle
"""
import socket
import sys
import threading

port, mode = int(sys.argv[1]), sys.argv[2]


def pipe(src, dst):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
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


def serve(conn):
    if mode == "tcp":
        upstream = socket.create_connection(("127.0.0.1", int(sys.argv[3])))
        threading.Thread(target=pipe, args=(conn, upstream), daemon=True).start()
        pipe(upstream, conn)
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
