"""serve_util.py — the serve tests' helpers: a `tinygpt serve` on 127.0.0.1
with an ephemeral port (--port 0; the port is read from its first line),
plain HTTP requests through http.client, server-sent events, and a
pass/fail tally ending with the plain 'N passed, N failed' line."""
import http.client
import json
import os
import signal
import subprocess
import time

WEIGHTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "weights")


class Server:
    def __init__(self, exe, args, env=None):
        self.exe = exe
        self.proc = subprocess.Popen([exe, "serve", "--port", "0", *args], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, env=env)
        line = self.proc.stdout.readline()
        if not line.startswith("listening on http://127.0.0.1:"):
            self.proc.kill()
            raise SystemExit("serve did not start: %r %s" % (line, self.proc.stderr.read()))
        self.port = int(line.strip().rsplit(":", 1)[1])

    @staticmethod
    def path(name):
        return os.path.normpath(os.path.join(WEIGHTS, name + ".gguf"))

    def stop_check(self, ck, what):
        """SIGINT; it must exit 0 within 10 s."""
        self.proc.send_signal(signal.SIGINT)
        try:
            rc = self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = "hung"
        err = self.proc.stderr.read()
        ck.check(rc == 0, "%s: SIGINT -> exit %s %s" % (what, rc, err.strip()[-300:]))
        return err


def sanitized(pid):
    """True if the process runs with ASan (its quarantine keeps freed memory,
    so RSS says nothing about leaks; LeakSanitizer checks them at exit)."""
    with open("/proc/%d/maps" % pid) as f:
        return any("libasan" in ln for ln in f)


def request(port, method, path, body=None, headers=None, timeout=30):
    """(status, {lower-case header: value}, body bytes)."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
    h = {"Content-Type": "application/json"} if data is not None else {}
    h.update(headers or {})
    c.request(method, path, body=data, headers=h)
    r = c.getresponse()
    out = r.read()
    hd = {k.lower(): v for k, v in r.getheaders()}
    c.close()
    return r.status, hd, out


def stream_events(port, body, headers=None):
    """The data: payloads of a streamed completion, in order."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    c.request("POST", "/v1/completions", body=json.dumps(body).encode(),
              headers=dict({"Content-Type": "application/json"}, **(headers or {})))
    r = c.getresponse()
    assert r.status == 200 and r.getheader("Content-Type") == "text/event-stream", r.status
    events = []
    for line in r.read().decode("utf-8").split("\n"):
        if line.startswith("data: "):
            events.append(line[6:])
    c.close()
    return events


class Checks:
    def __init__(self):
        self.passed = self.failed = 0

    def check(self, ok, what):
        print(("ok: " if ok else "FAIL: ") + what, flush=True)
        if ok:
            self.passed += 1
        else:
            self.failed += 1
        return ok

    @staticmethod
    def cli_attention(exe, prompt):
        r = subprocess.run([exe, "attention", "-p", prompt, "--json"], capture_output=True, text=True)
        return json.loads(r.stdout)["weights"] if r.returncode == 0 else None

    def finish(self):
        print("%d passed, %d failed" % (self.passed, self.failed))
        return 1 if self.failed else 0
