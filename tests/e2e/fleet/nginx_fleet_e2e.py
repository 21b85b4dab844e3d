#!/usr/bin/env python3
"""The shipped nginx configuration (deploy/nginx/qmlx-fleet.conf) in front of three real
`qmlx serve` processes: conversations stick to one server by the id each agent sends, and a
conversation whose server dies moves to another server and is answered there.

Usage: nginx_fleet_e2e.py QMLX_BINARY NGINX_BINARY SHIPPED_CONF WORK_DIR
"""
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from e2e_support import fail, free_port, wait_healthy  # noqa: E402

QMLX, NGINX, CONF, WORK = sys.argv[1:5]


def start_server(index):
    port = free_port()
    store = os.path.join(WORK, "disk-%d" % index)
    config = os.path.join(WORK, "cache-%d.json" % index)
    with open(config, "w") as f:
        json.dump({"cache": {"disk_cache_dir": store, "fsync": False}}, f)
    log = os.path.join(WORK, "server-%d.log" % index)
    process = subprocess.Popen([QMLX, "serve", "--port", str(port), "--threads", "1",
                                "--cache-config", config],
                               stderr=open(log, "w"), stdout=subprocess.DEVNULL)
    wait_healthy(port, process, log)
    return {"port": port, "process": process, "log": log}


def start_nginx(servers):
    """The shipped file with this test's ports and paths; everything else as shipped."""
    text = open(CONF).read()
    upstream_lines = re.findall(r"^\s*server 127\.0\.0\.1:\d+ .*;$", text, re.M)
    if len(upstream_lines) != 3:
        fail("expected three upstream server lines in " + CONF)
    for line, server in zip(upstream_lines, servers):
        text = text.replace(line, re.sub(r":\d+", ":%d" % server["port"], line, count=1), 1)
    port = free_port()
    text = text.replace("listen 127.0.0.1:8080;", "listen 127.0.0.1:%d;" % port)
    text = ("worker_processes 1;\npid %s/nginx.pid;\nerror_log stderr warn;\n"
            "events { worker_connections 1024; }\n"
            "http {\n  access_log off;\n  client_body_temp_path %s/body;\n"
            "  proxy_temp_path %s/proxy;\n%s\n}\n" % (WORK, WORK, WORK, text))
    conf = os.path.join(WORK, "nginx.conf")
    with open(conf, "w") as f:
        f.write(text)
    log = os.path.join(WORK, "nginx.log")
    process = subprocess.Popen([NGINX, "-p", WORK, "-c", conf, "-g", "daemon off;"],
                               stderr=open(log, "w"), stdout=subprocess.DEVNULL)
    wait_healthy(port, process, log)
    return {"port": port, "process": process, "log": log}


def chat(port, headers, text):
    body = json.dumps({"messages": [{"role": "user", "content": text}], "max_tokens": 3,
                       "temperature": 0}).encode()
    request = urllib.request.Request("http://127.0.0.1:%d/v1/chat/completions" % port,
                                     data=body, method="POST")
    request.add_header("Authorization", "Bearer fleet")
    request.add_header("Content-Type", "application/json")
    for name, value in headers.items():
        request.add_header(name, value)
    with urllib.request.urlopen(request, timeout=60) as r:
        return r.status, r.headers.get("X-Qmlx-Upstream", ""), json.loads(r.read())


def main():
    os.makedirs(WORK, exist_ok=True)
    servers = [start_server(i) for i in range(3)]
    nginx = start_nginx(servers)
    try:
        # Each agent's conversation id keeps its conversation on one server.
        upstream_of = {}
        for i in range(12):
            conversation = "conv-%02d" % i
            header = [("X-Claude-Code-Session-Id", conversation), ("session-id", conversation),
                      ("x-session-affinity", conversation)][i % 3]
            seen = set()
            for turn in range(2):
                status, upstream, _ = chat(nginx["port"], dict([header]), "%s turn %d" % (conversation, turn))
                if status != 200:
                    fail("status %d" % status)
                seen.add(upstream)
            if len(seen) != 1:
                fail("conversation %s went to %s" % (conversation, seen))
            upstream_of[conversation] = seen.pop()
        used = set(upstream_of.values())
        if len(used) < 2:
            fail("12 conversations all went to %s" % used)
        # The same id under another agent's header is the same conversation key.
        _, codex_upstream, _ = chat(nginx["port"], {"session-id": "conv-00"}, "again")
        if codex_upstream != upstream_of["conv-00"]:
            fail("the same id under session-id went elsewhere")
        print("ok: 12 conversations, 2 turns each, each on one server; %d servers used"
              % len(used))

        # The server holding conv-01 dies: its next turn is answered by another server.
        victim = upstream_of["conv-01"]
        dead = next(s for s in servers if victim.endswith(":%d" % s["port"]))
        dead["process"].send_signal(signal.SIGKILL)
        dead["process"].wait()
        status, upstream, _ = chat(nginx["port"], {"X-Claude-Code-Session-Id": "conv-01"},
                                   "conv-01 after the failure")
        if status != 200 or upstream.endswith(":%d" % dead["port"]) and "," not in upstream:
            fail("after the failure: status %d from %s" % (status, upstream))
        _, again, _ = chat(nginx["port"], {"X-Claude-Code-Session-Id": "conv-01"}, "and again")
        if again.split(",")[-1].strip() != upstream.split(",")[-1].strip():
            fail("after the failure the conversation moved again: %s then %s" % (upstream, again))
        print("ok: the server of conv-01 was killed; the conversation moved to %s and stays"
              % again)
    finally:
        nginx["process"].send_signal(signal.SIGQUIT)
        for s in servers:
            if s["process"].poll() is None:
                s["process"].send_signal(signal.SIGTERM)
        for p in [nginx["process"]] + [s["process"] for s in servers]:
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()
    print("PASS")


main()
