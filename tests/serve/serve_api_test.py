#!/usr/bin/env python3
"""serve_api_test.py TINYGPT — `tinygpt serve` on 127.0.0.1 (an ephemeral
port) through http.client: every endpoint, streaming, stop strings, seeds
that reproduce `tinygpt generate` exactly, echo + logprobs (the prompt's
log-probabilities) against PyTorch (tests/serve/torch_ref.py), /v1/attention
against the CLI's own attention dump, /v1/compare against `tinygpt compare
--json` field by field, every error path, the bounded queue (503 + Retry-After),
--api-key (401), a client that disconnects (its generation or compare stops), and
SIGTERM (in-flight work ends within the bound, exit 0)."""
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_util import Server, Checks, request, sanitized, stream_events  # noqa: E402

EXE = sys.argv[1]
ck = Checks()


def generate(prompt, n, seed, *flags):
    """`tinygpt generate --no-echo`'s text (it ends the output with a newline)."""
    r = subprocess.run([EXE, "generate", "-p", prompt, "-n", str(n), "--seed", str(seed), "--no-echo",
                        *flags], capture_output=True)
    assert r.returncode == 0, r.stderr
    out = r.stdout.decode("utf-8", "replace")
    return out[:-1] if out.endswith("\n") else out


def main():
    srv = Server(EXE, ["--max-tokens", "200000", "--parallel", "1", "--queue", "8", "--max-body", "64K"])
    port = srv.port

    # -- GET endpoints
    st, h, b = request(port, "GET", "/health")
    ck.check(st == 200 and json.loads(b)["status"] == "ok", "GET /health: 200 ok")
    st, h, b = request(port, "GET", "/v1/models")
    models = json.loads(b)
    names = [m["id"] for m in models["data"]]
    ck.check(st == 200 and names == ["shakespeare-4h", "shakespeare-1h"], "GET /v1/models lists the shipped pair: %s" % names)
    ck.check(models["data"][0]["n_head"] == 4 and models["data"][1]["n_head"] == 1, "model heads 4 and 1")
    st, h, b = request(port, "GET", "/")
    ck.check(st == 200 and h.get("content-type", "").startswith("text/html") and b"<html" in b.lower(), "GET /: the page")
    for path in ["/app.js", "/style.css"]:
        st, h, b = request(port, "GET", path)
        ck.check(st == 200 and len(b) > 100, "GET %s: compiled-in asset (%d bytes)" % (path, len(b)))
    for path in ["/../../etc/passwd", "/weights/shakespeare-4h.gguf", "/index.html/..", "/%2e%2e/README.md"]:
        st, h, b = request(port, "GET", path)
        ck.check(st == 404, "GET %s: 404 (no path reaches the file system)" % path)

    # -- completions: seeds reproduce `tinygpt generate` exactly
    cases = [("ROMEO:", 40, 1, {}, []),
             ("To be", 30, 7, {"temperature": 1.2, "top_k": 0, "top_p": 0.9, "min_p": 0.0},
              ["--temp", "1.2", "--top-k", "0", "--top-p", "0.9", "--min-p", "0"]),
             ("KING", 25, 3, {"temperature": 0}, ["--temp", "0"]),
             ("Hello", 30, 11, {"repeat_penalty": 1.3, "top_k": 5}, ["--repeat-penalty", "1.3", "--top-k", "5"])]
    for prompt, n, seed, extra, flags in cases:
        body = dict(prompt=prompt, max_tokens=n, seed=seed, **extra)
        st, h, b = request(port, "POST", "/v1/completions", body)
        j = json.loads(b)
        if "choices" not in j:
            ck.check(False, "completion %r: %d %s" % (prompt, st, b[:300]))
            continue
        want = generate(prompt, n, seed, *flags)
        got = j["choices"][0]["text"]
        ck.check(st == 200 and got == want, "completion %r seed %d %s == tinygpt generate (%r vs %r)" % (prompt, seed, flags, got[:40], want[:40]))
        ck.check(j["usage"]["completion_tokens"] == n and j["choices"][0]["finish_reason"] == "length", "usage and finish_reason length")
        # streamed: the same text, token by token
        events = stream_events(port, dict(body, stream=True))
        ck.check(events[-1] == "[DONE]", "stream ends with [DONE]")
        chunks = [json.loads(e) for e in events[:-1]]
        text = "".join(c["choices"][0]["text"] for c in chunks)
        ck.check(text == want, "streamed completion %r == tinygpt generate" % prompt)
        ck.check(chunks[-1]["choices"][0]["finish_reason"] == "length" and all(c["choices"][0]["finish_reason"] is None for c in chunks[:-1]),
                 "stream: finish_reason only on the last chunk")
    # model by name, n choices use seed + i, echo, prompt as token ids
    st, h, b = request(port, "POST", "/v1/completions", dict(model="shakespeare-1h", prompt="ROMEO:", max_tokens=20, seed=5, n=2))
    j = json.loads(b)
    ck.check([c["text"] for c in j["choices"]] == [generate("ROMEO:", 20, 5, "-m", srv.path("shakespeare-1h")),
                                                     generate("ROMEO:", 20, 6, "-m", srv.path("shakespeare-1h"))],
             "n=2 on shakespeare-1h: choice i is --seed S+i")
    st, h, b = request(port, "POST", "/v1/completions", dict(prompt="ROMEO:", max_tokens=10, seed=2, echo=True))
    ck.check(json.loads(b)["choices"][0]["text"] == "ROMEO:" + generate("ROMEO:", 10, 2), "echo prepends the prompt")
    st, h, b = request(port, "POST", "/tokenize", dict(content="ROMEO:"))
    ids = json.loads(b)["tokens"]
    tok_cli = subprocess.run([EXE, "tokenize", "-p", "ROMEO:"], capture_output=True, text=True).stdout.split()
    ck.check(st == 200 and ids == [int(x) for x in tok_cli], "/tokenize == tinygpt tokenize: %s" % ids)
    st, h, b = request(port, "POST", "/v1/completions", dict(prompt=ids, max_tokens=15, seed=4))
    ck.check(json.loads(b)["choices"][0]["text"] == generate("ROMEO:", 15, 4), "prompt as token ids == the text prompt")
    st, h, b = request(port, "POST", "/detokenize", dict(tokens=ids))
    ck.check(st == 200 and json.loads(b)["content"] == "ROMEO:", "/detokenize inverts /tokenize")
    st, h, b = request(port, "POST", "/tokenize", dict(content="a<|endoftext|>b", with_pieces=True))
    j = json.loads(b)
    ck.check(0 <= 1023 and len(j["pieces"]) == len(j["tokens"]) and "<|endoftext|>" in j["pieces"], "/tokenize parses <|endoftext|>, pieces")

    # logprobs: the CLI's --json log-probabilities and alternatives
    st, h, b = request(port, "POST", "/v1/completions", dict(prompt="ROMEO:", max_tokens=8, seed=9, logprobs=3))
    lp = json.loads(b)["choices"][0]["logprobs"]
    cli = subprocess.run([EXE, "generate", "-p", "ROMEO:", "-n", "8", "--seed", "9", "--json", "--top-logprobs", "3"],
                         capture_output=True, text=True)
    cj = json.loads(cli.stdout)
    toks = cj.get("tokens") or cj.get("samples", [{}])[0].get("tokens")
    ok = toks is not None and len(toks) == len(lp["token_logprobs"])
    if ok:
        for k, t in enumerate(toks):
            ok &= abs(t["logprob"] - lp["token_logprobs"][k]) <= 1e-5 * max(1, abs(t["logprob"]))
            ok &= len(lp["top_logprobs"][k]) <= 3
    ck.check(ok, "logprobs == tinygpt generate --json's, 3 alternatives each")
    ck.check(all(lp["token_logprobs"][k] <= max(lp["top_logprobs"][k].values()) + 1e-6 for k in range(8)), "a token's logprob <= the best alternative's")
    events = stream_events(port, dict(prompt="ROMEO:", max_tokens=8, seed=9, logprobs=3, stream=True))
    slp = [json.loads(e)["choices"][0]["logprobs"] for e in events[:-1]]
    ck.check([s["token_logprobs"][0] for s in slp if s] == lp["token_logprobs"], "streamed logprobs == plain ones")

    # echo + logprobs: the prompt's tokens with their log-probabilities
    # (OpenAI: the first one's null) against PyTorch; then the generated ones
    echo_logprob_checks(port)

    # stop strings: cut off, finish_reason stop; streamed too
    full = generate("ROMEO:", 60, 1)
    stop = full[10:13]
    st, h, b = request(port, "POST", "/v1/completions", dict(prompt="ROMEO:", max_tokens=60, seed=1, stop=[stop, "zzzz"]))
    c = json.loads(b)["choices"][0]
    ck.check(c["text"] == full[:full.index(stop)] and c["finish_reason"] == "stop", "stop %r: text cut before it, finish_reason stop" % stop)
    events = stream_events(port, dict(prompt="ROMEO:", max_tokens=60, seed=1, stop=stop, stream=True))
    text = "".join(json.loads(e)["choices"][0]["text"] for e in events[:-1])
    ck.check(text == full[:full.index(stop)], "streamed with a stop string: the same text")

    # /v1/attention against `tinygpt attention --json`
    st, h, b = request(port, "POST", "/v1/attention", dict(prompt="ROMEO: peace", top=5))
    a = json.loads(b)
    L, H, T = a["n_layer"], a["n_head"], a["n_tokens"]
    ck.check(st == 200 and len(a["weights"]) == L and len(a["weights"][0]) == H and len(a["weights"][0][0]) == T, "attention: [L][H][T] rows")
    ok = all(abs(sum(row) - 1) < 1e-3 for lay in a["weights"] for head in lay for row in head)
    ck.check(ok, "every attention row sums to 1")
    # next-token distribution == the completion's greedy first token and its logprob
    st, h, b = request(port, "POST", "/v1/completions", dict(prompt="ROMEO: peace", max_tokens=1, temperature=0, logprobs=5))
    c = json.loads(b)["choices"][0]
    ck.check(abs(c["logprobs"]["token_logprobs"][0] - a["next"][0]["logprob"]) < 1e-3 and c["logprobs"]["tokens"][0] == a["next"][0]["text"],
             "attention's next[0] == the greedy completion's token (%r)" % a["next"][0]["text"])
    # switching heads off changes the distribution; all heads of the last layer off
    st, h, b = request(port, "POST", "/v1/attention", dict(prompt="ROMEO: peace", top=5, heads_off=[[L - 1, k] for k in range(H)]))
    a2 = json.loads(b)
    ck.check(st == 200 and a2["next"] != a["next"] and a2["heads_off"] == [[L - 1, k] for k in range(H)], "heads_off changes the next-token distribution")
    ck.check(a2["weights"][0] == a["weights"][0], "heads off in the last layer leave layer 0's weights as they were")
    st, h, b = request(port, "POST", "/v1/attention", dict(prompt="ROMEO: peace", top=5))
    ck.check(json.loads(b)["next"] == a["next"], "the mask does not outlive its request")
    heads = ck.cli_attention(EXE, "ROMEO: peace")
    if heads is not None:
        worst = max(abs(heads[l][hh][q][k] - a["weights"][l][hh][q][k]) for l in range(L) for hh in range(H) for q in range(T) for k in range(q + 1))
        ck.check(worst < 1e-3, "attention weights == tinygpt attention --json's (max diff %.2g)" % worst)

    # -- /v1/compare: the numbers of `tinygpt compare --json` on the same text,
    # field by field (all but speed, a timing); one model alone; its limits
    compare_checks(port, srv)

    # -- errors: 400 naming the field
    bad = [({"prompt": "x", "max_tokens": -1}, "max_tokens"), ({"prompt": "x", "max_tokens": 1.5}, "max_tokens"),
           ({"prompt": "x", "max_tokens": "10"}, "max_tokens"), ({"prompt": "x", "max_tokens": 10 ** 9}, "max_tokens"),
           ({"prompt": "x", "temperature": -1}, "temperature"), ({"prompt": "x", "temperature": 1e-40}, "temperature"),
           ({"prompt": "x", "top_p": 2}, "top_p"), ({"prompt": 5}, "prompt"), ({"prompt": ["a", "b"]}, "prompt"),
           ({"prompt": [1, -2]}, "prompt"), ({"prompt": [99999]}, "prompt"), ({"prompt": "x", "stream": 1}, "stream"),
           ({"prompt": "x", "stop": [1]}, "stop"), ({"prompt": "x", "n": 0}, "n"), ({"prompt": "x", "logprobs": 50}, "logprobs"),
           ({"prompt": "x", "seed": -3}, "seed"), ({"prompt": "x", "repeat_penalty": 0.5}, "repeat_penalty"),
           ({"prompt": "ROMEO " * 400}, "prompt"), ({"prompt": list(range(300))}, "prompt")]
    for body, field in bad:
        st, h, b = request(port, "POST", "/v1/completions", body)
        e = json.loads(b).get("error", {})
        ck.check(st == 400 and e.get("param") == field and e.get("type") == "invalid_request_error" and e.get("message"),
                 "400 for %s: param %s (%s)" % (json.dumps(body)[:60], e.get("param"), e.get("message")))
    raw = [(b"{", "invalid JSON"), (b"[1]", "not an object"), (b'{"prompt": NaN}', "NaN"), (b'{"prompt": "x", "max_tokens": 1e999}', "1e999"),
           (b'{"prompt": "\xff\xfe"}', "invalid UTF-8"), (b"", "empty body"),
           (b'{"prompt": "a\\u0000b"}', "a NUL escape (cJSON would cut the prompt to 'a')"),
           (b'{"prompt": "a", "stop": ["\\u0000"]}', "a NUL escape in a stop string"),
           (b'{"prompt": "a\x00b"}', "a raw NUL byte in a string")]
    for body, what in raw:
        st, h, b = request(port, "POST", "/v1/completions", body)
        ck.check(st == 400 and "error" in json.loads(b), "400 for %s" % what)
    # an escaped backslash before u0000 is text, not a NUL
    st, h, b = request(port, "POST", "/tokenize", b'{"content": "a\\\\u0000"}')
    ck.check(st == 200 and len(json.loads(b)["tokens"]) >= 3, "/tokenize of a backslash, u0000: 200 (%d %r)" % (st, b[:80]))
    st, h, b = request(port, "POST", "/v1/completions", {"prompt": "x" * 70000})
    ck.check(st == 400 and json.loads(b)["error"]["param"] == "body", "a body over --max-body: 400 param body")
    for path, body in (("/v1/completions", {"prompt": "x"}), ("/tokenize", {"content": "x"}),
                       ("/detokenize", {"tokens": [1]}), ("/v1/attention", {"prompt": "x"})):
        st, h, b = request(port, "POST", path, dict(body, model="nope"))
        e = json.loads(b)["error"]
        ck.check(st == 404 and e["param"] == "model" and "'nope'" in e["message"],
                 "%s, unknown model: 404 param model, the message names it (%s)" % (path, e["message"]))
    st, h, b = request(port, "GET", "/v1/completions")
    ck.check(st == 405, "GET /v1/completions: 405")
    st, h, b = request(port, "POST", "/v1/attention", {"prompt": "hi", "heads_off": [[0, 9]]})
    ck.check(st == 400 and json.loads(b)["error"]["param"] == "heads_off", "a head that is not there: 400 heads_off")
    st, h, b = request(port, "POST", "/v1/attention", {"prompt": ""})
    ck.check(st == 400 and json.loads(b)["error"]["param"] == "prompt", "attention on no tokens: 400 prompt")
    st, h, b = request(port, "POST", "/detokenize", {"tokens": [5000]})
    ck.check(st == 400 and json.loads(b)["error"]["param"] == "tokens", "/detokenize an id outside the vocabulary: 400")
    st, h, b = request(port, "POST", "/tokenize", {"text": "x"})
    ck.check(st == 400 and json.loads(b)["error"]["param"] == "content", "/tokenize without content: 400")

    # -- the queue: --parallel 1 --queue 0, one long generation holds the slot
    main_srv = srv
    srv = Server(EXE, ["--max-tokens", "200000", "--parallel", "1", "--queue", "0"])
    port = srv.port
    long_body = dict(prompt="ROMEO:", max_tokens=6000, seed=1)
    res = {}

    def long_request():
        res["long"] = request(port, "POST", "/v1/completions", long_body, timeout=120)
    th = threading.Thread(target=long_request)
    th.start()
    busy = wait_busy(port, 1)
    st, h, b = request(port, "POST", "/v1/completions", dict(prompt="x", max_tokens=1))
    ck.check(busy and st == 503 and h.get("retry-after") == "1" and "error" in json.loads(b), "slot busy, queue 0: 503 with Retry-After")
    st, h, b = request(port, "POST", "/v1/completions", dict(model="shakespeare-1h", prompt="x", max_tokens=1))
    ck.check(st == 200, "the other model's slot still serves")
    th.join()
    ck.check(res["long"][0] == 200 and json.loads(res["long"][2])["usage"]["completion_tokens"] == 6000, "the long one completes (6000 tokens)")

    srv.stop_check(ck, "queue server")
    srv = main_srv
    port = srv.port

    # -- a client that goes away stops its generation (plain and streamed)
    for stream in (False, True):
        s = socket.create_connection(("127.0.0.1", port))
        body = json.dumps(dict(prompt="ROMEO:", max_tokens=150000, stream=stream)).encode()
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
        if stream:
            s.recv(4096)
        busy = wait_busy(port, 1)
        t0 = time.time()
        s.close()
        freed = wait_busy(port, 0, 3.0)
        ck.check(busy and freed, "%s client closes mid-generation: its slot is free after %.2f s (the whole would take ~100 s)"
                 % ("a streaming" if stream else "a", time.time() - t0))
    # /v1/compare too: ~19k tokens at head_tokens 8192 is ~10-20 s of passes
    # (two models, every head ablated); the interrupt stops it within one
    s = socket.create_connection(("127.0.0.1", port))
    body = json.dumps(dict(text=COMPARE_TEXT * 40, head_tokens=8192)).encode()
    s.sendall(b"POST /v1/compare HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
    busy = wait_busy(port, 2)
    time.sleep(0.2)
    t0 = time.time()
    s.close()
    freed = wait_busy(port, 0, 3.0)
    ck.check(busy and freed, "a client closes mid-compare: both slots are free after %.2f s" % (time.time() - t0))
    st, h, b = request(port, "POST", "/v1/compare", dict(text=COMPARE_TEXT), timeout=120)
    ck.check(st == 200 and len(json.loads(b)["models"]) == 2, "and a compare after it runs whole (%d)" % st)
    st, h, b = request(port, "POST", "/v1/completions", dict(prompt="x", max_tokens=3))
    ck.check(st == 200, "and the server keeps serving")
    srv.stop_check(ck, "first server")

    # -- --api-key
    srv = Server(EXE, ["--api-key", "s3cret"])
    port = srv.port
    for hdr, want in [({}, 401), ({"Authorization": "Bearer wrong"}, 401), ({"Authorization": "Bearer s3cret"}, 200),
                      ({"Authorization": "s3cret"}, 401), ({"Authorization": "Bearer s3cretX"}, 401)]:
        st, h, b = request(port, "POST", "/v1/completions", dict(prompt="x", max_tokens=2), headers=hdr)
        ck.check(st == want and (want == 200 or json.loads(b)["error"]["type"] == "authentication_error"), "--api-key, %s: %d" % (hdr, st))
    st, h, b = request(port, "GET", "/v1/models")
    ck.check(st == 401, "--api-key: GET /v1/models without the key is 401")
    st, h, b = request(port, "GET", "/health")
    ck.check(st == 200, "--api-key: /health stays open")

    # -- SIGTERM with work in flight: no new connections, exit 0 within the bound
    res = {}

    def long_request2():
        try:
            res["r"] = request(port, "POST", "/v1/completions", dict(prompt="x", max_tokens=150000), headers={"Authorization": "Bearer s3cret"}, timeout=60)
        except Exception as e:  # the connection may be cut when the server cancels
            res["r"] = (None, {}, repr(e).encode())
    th = threading.Thread(target=long_request2)
    th.start()
    wait_busy(port, 1)
    t0 = time.time()
    srv.proc.send_signal(signal.SIGTERM)
    rc = srv.proc.wait(timeout=30)
    dt = time.time() - t0
    th.join()
    ck.check(rc == 0 and dt < 6, "SIGTERM with a generation in flight: exit %d after %.2f s (grace 2 s)" % (rc, dt))
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
        refused = False
    except OSError:
        refused = True
    ck.check(refused, "after SIGTERM nothing listens")

    # -- --parallel 4: four handles, the weights in memory once (the same file's
    # pages): a copy per handle would be anonymous memory of the file's size each
    m4 = Server.path("shakespeare-4h")
    size_kb = os.path.getsize(m4) // 1024

    def memory(par):
        srv = Server(EXE, ["-m", m4, "--parallel", str(par)])
        maps = pss = 0
        anon = None
        with open("/proc/%d/smaps" % srv.proc.pid) as f:
            ours = False
            for ln in f:
                if not ln[:1].isupper() or ln.split()[0].count("-") == 1 and ":" not in ln.split()[0]:
                    ours = ln.rstrip().endswith("shakespeare-4h.gguf")  # a mapping's header line
                    maps += ours
                elif ours and ln.startswith("Pss:"):
                    pss += int(ln.split()[1])
        if not sanitized(srv.proc.pid):
            with open("/proc/%d/smaps_rollup" % srv.proc.pid) as f:
                anon = [int(ln.split()[1]) for ln in f if ln.startswith("Pss_Anon:")][0]
        srv.stop_check(ck, "--parallel %d server" % par)
        return maps, pss, anon
    maps1, pss1, anon1 = memory(1)
    maps4, pss4, anon4 = memory(4)
    # the model file's own mappings: their proportional share adds up to one
    # copy of the file however many handles map it
    ck.check(maps4 >= 4 and maps4 == 4 * maps1 and pss4 <= size_kb * 1.05 + 64,
             "--parallel 4: %d mappings of the model (1 slot: %d), their PSS %d KiB (1 slot: %d) for a %d KiB file: at most one copy"
             % (maps4, maps1, pss4, pss1, size_kb))
    if anon1 is not None:
        ck.check(anon4 - anon1 < 3 * size_kb,
                 "--parallel 4: anonymous memory +%d KiB over 1 slot (KV caches; a copy of the weights per handle would be >= %d)"
                 % (anon4 - anon1, 3 * size_kb))
    else:
        print("note: anonymous memory not compared under ASan (shadow memory)")

    # -- the command line
    r = subprocess.run([EXE, "serve", "--host", "example.com"], capture_output=True, text=True)
    ck.check(r.returncode == 2 and "--host" in r.stderr and r.stderr.count("\n") == 1, "--host not an address: usage error: %s" % r.stderr.strip())
    r = subprocess.run([EXE, "serve", "-m", "/nonexistent.gguf", "--port", "0"], capture_output=True, text=True)
    ck.check(r.returncode == 1 and "/nonexistent.gguf" in r.stderr, "a missing model: exit 1 naming it")
    m4 = srv.path("shakespeare-4h")
    r = subprocess.run([EXE, "serve", "-m", m4, "-m", m4, "--port", "0"], capture_output=True, text=True)
    ck.check(r.returncode == 2 and "two models" in r.stderr, "two models of one name: usage error")
    with socket.socket() as taken:  # a port in use: one line (not libmicrohttpd's own as well), exit 1
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        r = subprocess.run([EXE, "serve", "-m", m4, "--port", str(busy)], capture_output=True, text=True, timeout=60)
        ck.check(r.returncode == 1 and r.stderr.count("\n") == 1 and "cannot listen on 127.0.0.1:%d" % busy in r.stderr,
                 "a port in use: exit 1, one line: exit %d %r" % (r.returncode, r.stderr))
    return ck.finish()


U = 2.0 ** -24  # float32 unit roundoff


def echo_logprob_checks(port):
    from torch_ref import GPT2  # PyTorch: /usr/bin/python3 has it
    import torch
    ref_model = GPT2(Server.path("shakespeare-4h"))
    L, E = ref_model.L, ref_model.t["token_embd.weight"].shape[1]
    # 150 tokens or so: past the server's 64-position chunks
    text = ("ROMEO:\nBut soft, what light through yonder window breaks?\nIt is the east, and Juliet is the sun.\n"
            "Arise, fair sun, and kill the envious moon,\n") * 3
    st, h, b = request(port, "POST", "/tokenize", dict(content=text, with_pieces=True))
    tk = json.loads(b)
    ids, pieces, n = tk["tokens"], tk["pieces"], len(tk["tokens"])
    body = dict(prompt=text, echo=True, logprobs=3, max_tokens=6, seed=4)
    st, h, b = request(port, "POST", "/v1/completions", body)
    c = json.loads(b)["choices"][0]
    lp = c["logprobs"]
    lg = ref_model.logits(ids)
    ref = torch.log_softmax(lg, -1)
    ck.check(st == 200 and n > 128 and lp["tokens"][:n] == pieces and len(lp["token_logprobs"]) == n + 6,
             "echo + logprobs: the %d prompt tokens (/tokenize's pieces), then the 6 generated" % n)
    ck.check(lp["token_logprobs"][0] is None and lp["top_logprobs"][0] is None,
             "echo + logprobs: the first prompt token's logprob and alternatives are null (OpenAI's)")
    # |C f32 - float64| within the printed 6 digits plus (L+1) E U times the row's largest logit
    worst = worst_shift = 0.0
    top_ok = True
    for i in range(1, n):
        row = lg[i - 1]
        tol = 5e-6 * abs(ref[i - 1, ids[i]].item()) + (L + 1) * E * U * row.abs().max().item()
        got = lp["token_logprobs"][i]
        worst = max(worst, abs(got - ref[i - 1, ids[i]].item()) / tol)
        worst_shift = max(worst_shift, abs(got - ref[i - 1, ids[i - 1]].item()) / tol)
        want_top = torch.topk(ref[i - 1], 3)
        tops = lp["top_logprobs"][i]
        for v, k in zip(want_top.values.tolist(), want_top.indices.tolist()):
            top_ok &= abs(tops.get(pieces_of(port, k), 1e9) - v) <= tol
    ck.check(worst <= 1, "echo + logprobs: each prompt token's logprob == PyTorch's (float64) within tolerance (worst %.3f of it)" % worst)
    ck.check(worst_shift > 100, "  (the check can fail: the previous token's logprob is %.0fx the tolerance off)" % worst_shift)
    ck.check(top_ok, "echo + logprobs: each prompt position's 3 alternatives == PyTorch's top 3")
    offs = lp["text_offset"]
    ck.check(offs[:n] == [sum(len(p.encode()) for p in pieces[:i]) for i in range(n)] and offs[n] == len(text.encode()),
             "echo: text_offset runs through the prompt's bytes, the generated tokens' after them")
    plain = json.loads(request(port, "POST", "/v1/completions", dict(body, echo=False))[2])["choices"][0]
    ck.check(lp["token_logprobs"][n:] == plain["logprobs"]["token_logprobs"] and c["text"] == text + plain["text"],
             "echo + logprobs: the generated part == the completion without echo")
    events = stream_events(port, dict(body, stream=True))
    first = json.loads(events[0])["choices"][0]
    ck.check(first["text"] == text and first["logprobs"]["token_logprobs"] == lp["token_logprobs"][:n]
             and first["logprobs"]["tokens"] == pieces,
             "streamed echo + logprobs: the first event holds the prompt's columns, as the plain response")
    gen = [json.loads(e)["choices"][0]["logprobs"] for e in events[1:-1]]
    ck.check([g["token_logprobs"][0] for g in gen if g] == plain["logprobs"]["token_logprobs"],
             "streamed echo + logprobs: then the generated tokens' (== without echo)")
    ck.check([g["text_offset"][0] for g in gen if g] == offs[n:],
             "streamed echo + logprobs: each token's text_offset == the plain response's")
    # a prompt of ids, and logprobs 0 (no alternatives)
    st, h, b = request(port, "POST", "/v1/completions", dict(prompt=ids[:10], echo=True, logprobs=0, max_tokens=1, seed=4))
    l0 = json.loads(b)["choices"][0]["logprobs"]
    ck.check(l0["token_logprobs"][:10] == lp["token_logprobs"][:10] and all(t == {} for t in l0["top_logprobs"][1:10]),
             "echo + logprobs 0, prompt as ids: the same logprobs, no alternatives")


_pieces = {}


def pieces_of(port, k):
    """Token k's piece (the key of top_logprobs), through /detokenize."""
    if k not in _pieces:
        _pieces[k] = json.loads(request(port, "POST", "/detokenize", dict(tokens=[k]))[2])["content"]
    return _pieces[k]


COMPARE_TEXT = ("ROMEO:\nBut soft, what light through yonder window breaks?\nIt is the east, and Juliet is the sun.\n"
                "Arise, fair sun, and kill the envious moon,\nWho is already sick and pale with grief,\n"
                "That thou her maid art far more fair than she.\n\nJULIET:\nO Romeo, Romeo! wherefore art thou Romeo?\n"
                "Deny thy father and refuse thy name;\nOr, if thou wilt not, be but sworn my love,\n"
                "And I'll no longer be a Capulet.\n") * 3


def cli_compare(a, b, text, *flags):
    """`tinygpt compare A B -f TEXT --json` as a dict."""
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write(text)
    try:
        r = subprocess.run([EXE, "compare", Server.path(a), Server.path(b), "-f", f.name, "--json", *flags],
                           capture_output=True, text=True)
    finally:
        os.unlink(f.name)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


# The deterministic fields compare --json prints, by part of a model's entry.
CFG = ["n_layer", "n_head", "head_size", "n_embd", "n_ctx", "n_vocab", "n_params"]
QUALITY = ["tokens", "bytes", "nats_per_token", "perplexity", "nats_per_byte", "in_context_score"]
HEAD = ["layer", "head", "entropy", "confidence", "sink", "prev", "local", "induction", "ablation_loss",
        "ablation_delta", "only_head_loss", "class"]
LAYER = ["layer", "best_head", "best_head_loss", "random_head_loss"]


def same_model(api, cli):
    """The fields of one model where the API and the CLI differ ([] if none)."""
    bad = [k for k in CFG if api.get(k) != cli.get(k)]
    bad += ["quality." + k for k in QUALITY if api["quality"].get(k) != cli["quality"].get(k)]
    if api["quality"]["by_position"] != cli["quality"]["by_position"]:
        bad.append("quality.by_position")
    if api.get("baseline_loss") != cli.get("baseline_loss"):
        bad.append("baseline_loss")
    if len(api["heads"]) != len(cli["heads"]) or len(api["layers"]) != len(cli["layers"]):
        return bad + ["heads/layers count"]
    for ha, hc in zip(api["heads"], cli["heads"]):
        bad += ["L%dH%d.%s" % (hc["layer"], hc["head"], k) for k in HEAD if ha.get(k) != hc.get(k)]
    for la, lc in zip(api["layers"], cli["layers"]):
        bad += ["layer%d.%s" % (lc["layer"], k) for k in LAYER if la.get(k) != lc.get(k)]
    return bad


def compare_checks(port, srv):
    for flags, extra in [([], {}), (["--ctx", "64", "--head-tokens", "100", "--seed", "3"],
                                    {"window": 64, "head_tokens": 100, "seed": 3})]:
        st, h, b = request(port, "POST", "/v1/compare", dict(text=COMPARE_TEXT, **extra), timeout=120)
        api = json.loads(b)
        if not ck.check(st == 200 and "models" in api, "/v1/compare %s: 200 (%s)" % (extra, b[:200])):
            continue
        cli = cli_compare("shakespeare-4h", "shakespeare-1h", COMPARE_TEXT, *flags)
        ck.check([m["name"] for m in api["models"]] == ["shakespeare-4h", "shakespeare-1h"],
                 "/v1/compare without models: the server's first two, in order")
        ck.check(api["window"] == cli["window"] and api["head_tokens"] == cli["head_tokens"],
                 "/v1/compare %s: window %d, head_tokens %d as compare's" % (extra, api["window"], api["head_tokens"]))
        for i in range(2):
            bad = same_model(api["models"][i], cli["models"][i])
            nh = len(cli["models"][i]["heads"])
            ck.check(not bad, "/v1/compare %s, %s: config, quality, %d heads x 12 fields, layers == tinygpt compare --json%s"
                     % (extra, api["models"][i]["name"], nh, ": differ in " + ", ".join(bad[:8]) if bad else ""))
        if not extra:  # the check can fail: one head's delta moved in its 9th digit is caught
            moved = json.loads(json.dumps(cli["models"][0]))
            moved["heads"][5]["ablation_delta"] *= 1 + 1e-8
            ck.check(same_model(api["models"][0], moved) == ["L1H1.ablation_delta"] and same_model(api["models"][0], cli["models"][1]),
                     "/v1/compare: the check can fail (a delta moved by 1e-8 relative, the other model)")
        ag, cag = api["agreement"], cli["agreement"]
        ck.check(ag is not None and all(ag[k] == cag[k] for k in ("positions", "top1", "kl")),
                 "/v1/compare %s: agreement == compare's (top1 %s, kl %s over %s positions)"
                 % (extra, ag and ag["top1"], ag and ag["kl"], ag and ag["positions"]))
        if extra:
            ck.check(api["models"][0]["quality"]["in_context_score"] is not None, "window 64: in-context score set")
    # one model: its entry alone, no agreement
    st, h, b = request(port, "POST", "/v1/compare", dict(model="shakespeare-1h", text=COMPARE_TEXT), timeout=120)
    one = json.loads(b)
    cli = cli_compare("shakespeare-4h", "shakespeare-1h", COMPARE_TEXT)
    ck.check(st == 200 and len(one["models"]) == 1 and one["agreement"] is None and not same_model(one["models"][0], cli["models"][1]),
             "/v1/compare one model (shakespeare-1h): its numbers, agreement null")
    st, h, b = request(port, "POST", "/v1/compare", dict(models=["shakespeare-1h", "shakespeare-4h"], text=COMPARE_TEXT,
                                                         agreement=False), timeout=120)
    two = json.loads(b)
    ck.check(st == 200 and [m["name"] for m in two["models"]] == ["shakespeare-1h", "shakespeare-4h"] and two["agreement"] is None
             and not same_model(two["models"][1], cli["models"][0]), "/v1/compare models in the order asked, agreement false")
    bad = [({}, 400, "text"), ({"text": "a"}, 400, "text"), ({"text": 5}, 400, "text"),
           ({"text": "ab cd", "window": 1}, 400, "window"), ({"text": "ab cd", "window": 257}, 400, "window"),
           ({"text": "ab cd", "head_tokens": 1}, 400, "head_tokens"), ({"text": "ab cd", "head_tokens": 8193}, 400, "head_tokens"),
           ({"text": "ab cd", "seed": -1}, 400, "seed"), ({"text": "ab cd", "agreement": "yes"}, 400, "agreement"),
           ({"text": "ab cd", "models": []}, 400, "models"), ({"text": "ab cd", "models": ["a", "b", "c"]}, 400, "models"),
           ({"text": "ab cd", "models": ["shakespeare-1h", "shakespeare-1h"]}, 400, "models"),
           ({"text": "ab cd", "models": ["shakespeare-1h", 4]}, 400, "models"),
           ({"text": "ab cd", "models": ["shakespeare-1h"], "model": "shakespeare-1h"}, 400, "models"),
           ({"text": "ab cd", "models": ["shakespeare-1h", "nope"]}, 404, "models"), ({"text": "ab cd", "model": "nope"}, 404, "model")]
    for body, want, field in bad:
        st, h, b = request(port, "POST", "/v1/compare", body)
        e = json.loads(b).get("error", {})
        ck.check(st == want and e.get("param") == field and e.get("message"),
                 "/v1/compare %s: %d param %s (%s)" % (json.dumps(body)[:70], st, e.get("param"), e.get("message")))
    st, h, b = request(port, "GET", "/v1/compare")
    ck.check(st == 405, "GET /v1/compare: 405")


def wait_busy(port, want, limit=5.0):
    """Waits until /health's slots_busy is want; True if it got there."""
    t0 = time.time()
    while time.time() - t0 < limit:
        st, h, b = request(port, "GET", "/health")
        if st in (200, 503) and json.loads(b)["slots_busy"] == want:
            return True
        time.sleep(0.02)
    return False


if __name__ == "__main__":
    sys.exit(main())
