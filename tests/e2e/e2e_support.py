"""Helpers shared by the Python end-to-end tests (hardening/, fleet/, server/): failing with a
message, a free loopback port, waiting for a started process to answer /health with 200, and
reading one Prometheus metric."""
import http.client
import socket
import sys
import time
import urllib.error
import urllib.request


def fail(message):
    print("FAIL: " + message, file=sys.stderr)
    sys.exit(1)


_given_ports = set()


def free_port():
    """A free loopback port, never one this process was given before (the kernel can hand the
    same free port to two calls in a row; free_ports.sh says the same for the shell scripts)."""
    while True:
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        if port not in _given_ports:
            _given_ports.add(port)
            return port


def wait_healthy(port, process, log_path):
    """Until http://127.0.0.1:PORT/health answers 200; fails if `process` exits first."""
    for _ in range(300):
        if process.poll() is not None:
            with open(log_path) as f:
                fail("process exited during start-up:\n" + f.read())
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d/health" % port, timeout=1) as r:
                if r.status == 200:
                    return
        except (OSError, urllib.error.URLError):
            pass
        time.sleep(0.1)
    fail("not ready: port %d" % port)


def metric(port, name):
    """The value of metric `name` on the metrics port; fails when it is missing."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", "/metrics")
    text = conn.getresponse().read().decode()
    conn.close()
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    fail("metric %s missing" % name)
