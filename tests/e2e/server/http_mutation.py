#!/usr/bin/env python3
"""HTTP-level mutation test (issue 17): mutated copies of the fuzz seed requests
(tests/fuzz/corpus/requests) sent to a running `qmlx serve` over loopback: byte flips,
truncation, field type swaps and spliced fields, each on a fresh connection. Every answer must
be a well-formed HTTP response with status < 500 (503 allowed: overload), with a JSON error body
on errors; the server must stay up, and a normal request must still succeed at the end.

Usage: http_mutation.py PORT API_KEY SEED_DIR COUNT [RANDOM_SEED]
"""
import json
import os
import random
import re
import socket
import sys
import time

# Seed file name prefix -> the route it is a request for.
ROUTES = {
    "chat": "/v1/chat/completions",
    "deep": "/v1/chat/completions",
    "huge": "/v1/chat/completions",
    "completion": "/v1/completions",
    "messages": "/v1/messages",
    "count": "/v1/messages/count_tokens",
    "responses": "/v1/responses",
    "tokenize": "/tokenize",
    "pin": "/admin/cache/snapshots/00000000000000000000000000000000/pin",
}
EXTRA_ROUTES = ["/apply-template", "/detokenize", "/admin/cache/gc"]
ODD_VALUES = [None, True, False, 0, -1, 1.5, 1e308, -(2**63), 2**64 - 1, 2**64 + 5, "", "x",
              "\u0000\ud7ff", [], {}, [[[[]]]], {"type": "text"}, "[" * 300 + "]" * 300]


def paths(value, prefix=()):
    """Every (path, value) inside a JSON value."""
    yield prefix, value
    if isinstance(value, dict):
        for k, v in value.items():
            yield from paths(v, prefix + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from paths(v, prefix + (i,))


def replaced(value, path, new):
    if not path:
        return new
    value = json.loads(json.dumps(value))
    node = value
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = new
    return value


def mutate(rng, body, seeds):
    raw = json.dumps(body).encode()
    kind = rng.randrange(5)
    if kind == 0:  # byte flips
        data = bytearray(raw)
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        return "flip", bytes(data)
    if kind == 1:  # truncation
        return "truncate", raw[: rng.randrange(len(raw))]
    if kind == 2:  # a field's value swapped for one of another type
        path, _ = rng.choice(list(paths(body)))
        odd = rng.choice(ODD_VALUES)
        if isinstance(odd, str) and odd.startswith("["):
            return "swap", json.dumps(replaced(body, path, None)).replace("null", odd, 1).encode()
        return "swap", json.dumps(replaced(body, path, odd)).encode()
    if kind == 3:  # a field from another seed request spliced in
        other = rng.choice(seeds)[1]
        if isinstance(other, dict) and other and isinstance(body, dict):
            key = rng.choice(list(other))
            spliced = dict(body)
            spliced[key] = other[key]
            return "splice", json.dumps(spliced).encode()
        return "splice", raw
    # random bytes inserted
    at = rng.randrange(len(raw) + 1)
    return "insert", raw[:at] + bytes(rng.randrange(256) for _ in range(rng.randint(1, 8))) + raw[at:]


def recv_exactly(sock, buffer, n):
    while len(buffer) < n:
        chunk = sock.recv(65536)
        if not chunk:
            raise ValueError("connection closed inside the body")
        buffer += chunk
    return buffer


def exchange(port, key, path, body):
    """Sends one request; returns (status, headers, body) or raises ValueError if malformed."""
    head = (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {key}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
            "Connection: close\r\n\r\n").encode()
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(head + body)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            if not chunk:
                raise ValueError(f"connection closed before a response head: {data[:200]!r}")
            data += chunk
        head_bytes, rest = data.split(b"\r\n\r\n", 1)
        lines = head_bytes.decode("latin-1").split("\r\n")
        m = re.fullmatch(r"HTTP/1\.[01] (\d{3}) .*", lines[0])
        if not m:
            raise ValueError(f"bad status line {lines[0]!r}")
        headers = {}
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if not sep:
                raise ValueError(f"bad header line {line!r}")
            headers[name.strip().lower()] = value.strip()
        if "content-length" in headers:
            n = int(headers["content-length"])
            payload = recv_exactly(sock, rest, n)[:n]
        elif headers.get("transfer-encoding", "").lower() == "chunked":
            payload, buffer = b"", rest
            while True:
                while b"\r\n" not in buffer:
                    buffer = recv_exactly(sock, buffer, len(buffer) + 1)
                size_line, buffer = buffer.split(b"\r\n", 1)
                size = int(size_line.split(b";")[0], 16)
                buffer = recv_exactly(sock, buffer, size + 2)
                payload += buffer[:size]
                buffer = buffer[size + 2:]
                if size == 0:
                    break
        else:
            payload = rest
            while chunk := sock.recv(65536):
                payload += chunk
        return int(m.group(1)), headers, payload


def main():
    port, key, seed_dir, count = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
    rng = random.Random(int(sys.argv[5]) if len(sys.argv) > 5 else 17)
    seeds = []
    for name in sorted(os.listdir(seed_dir)):
        route = next((r for p, r in ROUTES.items() if name.startswith(p)), None)
        if route:
            with open(os.path.join(seed_dir, name)) as f:
                seeds.append((route, json.load(f)))
    statuses, failures = {}, []
    start = time.monotonic()
    for i in range(count):
        route, body = rng.choice(seeds)
        if i % 250 == 0:
            print(f"#{i} {time.monotonic() - start:.1f}s", flush=True)
        if rng.random() < 0.1:
            route = rng.choice(EXTRA_ROUTES)
        kind, data = mutate(rng, body, seeds)
        try:
            status, headers, payload = exchange(port, key, route, data)
        except (OSError, ValueError) as e:
            failures.append(f"#{i} {kind} {route}: {e}; body {data[:300]!r}")
            if isinstance(e, ConnectionRefusedError):
                break  # the server is gone: every later request would fail the same way
            continue
        statuses[status] = statuses.get(status, 0) + 1
        if status >= 500 and status != 503:
            failures.append(f"#{i} {kind} {route}: status {status} {payload[:300]!r}; "
                            f"body {data[:300]!r}")
        elif status >= 400 and "json" in headers.get("content-type", ""):
            try:
                error = json.loads(payload)
                if "error" not in error:
                    failures.append(f"#{i} {route}: error body without 'error': {payload[:200]!r}")
            except ValueError:
                failures.append(f"#{i} {route}: error body is not JSON: {payload[:200]!r}")
    print(f"http mutation: {count} requests, statuses {dict(sorted(statuses.items()))}")
    for failure in failures[:20]:
        print("FAIL:", failure, file=sys.stderr)
    normal = json.dumps({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 8}).encode()
    try:
        status, _, payload = exchange(port, key, "/v1/chat/completions", normal)
    except (OSError, ValueError) as e:
        status, payload = 0, str(e).encode()
    if status != 200 or not json.loads(payload)["choices"][0]["message"]["content"]:
        print(f"FAIL: a normal request after the mutations got {status} {payload[:300]!r}",
              file=sys.stderr)
        return 1
    print("ok: a normal request still succeeds")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
