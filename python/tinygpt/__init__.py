"""tinygpt — run tiny GPT-2 models on the CPU and look at their heads, over
libtinygpt's C API (include/tinygpt.h) through ctypes; NumPy in and out.

    import tinygpt
    m = tinygpt.Model("weights/shakespeare-4h.gguf", threads=1)
    ids = m.encode("ROMEO:")
    m.logits(ids)          # float32 [T, V]
    m.attention(ids)       # float32 [L, H, T, T]
    for piece in m.generate("ROMEO:", 40, temperature=0.8, seed=7):
        print(piece, end="")
    with m.ablate(1, 2):   # head 2 of layer 1 silenced inside the block
        m.logits(ids)

A Model is one handle: use it from one thread at a time (one Model per
thread for parallel work). Errors raise tinygpt.Error carrying the
library's one-line message.
"""
import ctypes as C
import contextlib
import operator

import numpy as np

from . import _lib

_L = _lib.bind(_lib.load())

__all__ = ["Model", "Error", "Token", "Context", "version", "INTERRUPTED"]

INTERRUPTED = 8  # Error.status of a call stopped by Model.set_interrupt (TINYGPT_ERR_INTERRUPTED)


def version():
    """The library's version, "0.1.0"."""
    return _L.tinygpt_version().decode()


class Error(Exception):
    """A failure of the library: .status (the tinygpt_status code), .reason
    (its short description) and the message as str(e)."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status
        self.reason = _L.tinygpt_status_str(status).decode()


class Token:
    """One generated token: id, piece (its bytes), text (the characters it
    completes), out (what the output gains: text less a possible stop
    string's start), logprob, top (a list of (id, logprob) alternatives
    when top_logprobs > 0). piece, text and out are bytes. The last Token
    may have id -1: the bytes held back until the end."""

    __slots__ = ("id", "piece", "text", "out", "logprob", "top")

    def __init__(self, id, piece, text, out, logprob, top):
        self.id, self.piece, self.text, self.out, self.logprob, self.top = \
            id, piece, text, out, logprob, top

    def __repr__(self):
        return "Token(id=%d, piece=%r, logprob=%.4f)" % (self.id, self.piece, self.logprob)


class Context:
    """A saved KV cache (Model.save), to restore into this or another Model
    of the same file."""

    def __init__(self, ptr):
        self._p = ptr

    @property
    def n_past(self):
        return _L.tinygpt_context_n_past(self._p)

    def __del__(self):
        if getattr(self, "_p", None):
            _L.tinygpt_context_free(self._p)
            self._p = None


def _ids(ids):
    """A 1-D sequence of integer ids (or one id) as contiguous int32. Floats,
    bools and arrays of more than one dimension are refused, not rounded or
    flattened."""
    a = np.asarray(ids)
    if a.ndim == 0:
        a = a.reshape(1)
    if a.ndim != 1:
        raise ValueError("token ids must be a 1-D sequence, not an array of shape %s" % (a.shape,))
    if a.size == 0:
        return np.zeros(0, dtype=np.int32)
    if not np.issubdtype(a.dtype, np.integer):
        raise ValueError("token ids must be integers, not %s" % a.dtype)
    a = a.astype(np.int64)
    if a.min() < -2**31 or a.max() >= 2**31:
        raise ValueError("token ids must fit in 32 bits")
    return np.ascontiguousarray(a.astype(np.int32))


def _seed(seed):
    """A seed in [0, 2^64 - 1], as the command line takes it."""
    s = operator.index(seed)
    if not 0 <= s < 2**64:
        raise ValueError("seed %d is outside [0, 2^64 - 1]" % s)
    return s


def _ptr(a, t):
    return a.ctypes.data_as(C.POINTER(t))


def _bytes(text):
    if isinstance(text, str):
        return text.encode("utf-8", "surrogateescape")
    if isinstance(text, (bytes, bytearray, memoryview)):
        return bytes(text)
    raise TypeError("text must be str or bytes, not %s" % type(text).__name__)


class Model:
    """A model opened from a GGUF file or a Hugging Face GPT-2 or Llama
    folder, with its tokenizer, KV cache (n_ctx positions; 0 = the model's
    context; kv_type "f32" or "f16") and threads."""

    def __init__(self, path, threads=1, isa=None, n_ctx=0, kv_type=None):
        self._m = None
        self._gen = None  # the generation in progress (its C pointer), if any
        self._interrupt_cb = None   # set_interrupt's C callback, alive while the library holds it
        self._interrupt_exc = None  # an exception raised inside it, raised in place of the Error
        o = _lib.Options()
        _L.tinygpt_options_init(C.byref(o))
        o.n_threads = int(threads)
        o.isa = isa.encode() if isa else None
        o.n_ctx = int(n_ctx)
        self._kv_type = kv_type.encode() if kv_type else None  # kept alive for the call
        o.kv_type = self._kv_type
        err = C.create_string_buffer(512)
        h = C.c_void_p()
        s = _L.tinygpt_open(C.byref(h), _bytes(str(path)), C.byref(o), err)
        if s:
            raise Error(s, err.value.decode("utf-8", "replace"))
        self._m = h
        i = _lib.Info()
        _L.tinygpt_get_info(self._m, C.byref(i))
        self._info = {f: (getattr(i, f).decode() if isinstance(getattr(i, f), bytes)
                          else getattr(i, f)) for f, _ in _lib.Info._fields_}
        self.n_layer, self.n_head = self._info["n_layer"], self._info["n_head"]
        self.n_vocab, self.n_ctx = self._info["n_vocab"], self._info["n_ctx"]

    # ---- lifetime ----

    def close(self):
        """Frees the handle (also on garbage collection, or leaving a with block)."""
        self._end_gen()
        if self._m:
            _L.tinygpt_close(self._m)
            self._m = None
        self._interrupt_cb = None

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _h(self):
        """The handle, after ending any generation still open on it."""
        if not self._m:
            raise Error(5, "tinygpt: the model is closed")
        self._end_gen()
        return self._m

    def _end_gen(self):
        if self._gen:
            _L.tinygpt_gen_free(self._gen)
            self._gen = None

    def _check(self, s):
        if s:
            exc, self._interrupt_exc = self._interrupt_exc, None
            if exc is not None and s == INTERRUPTED:
                raise exc
            raise Error(s, _L.tinygpt_last_error(self._m).decode("utf-8", "replace"))

    # ---- information ----

    @property
    def info(self):
        """Architecture, shapes, parameter and byte counts, weight type, ISA,
        special ids (a dict)."""
        return dict(self._info)

    @property
    def tensors(self):
        """The tensors the model runs on: a list of dicts (name, type, shape,
        n_elements, n_bytes)."""
        out = []
        for k in range(self._info["n_tensors"]):
            t = _lib.TensorInfo()
            self._check(_L.tinygpt_tensor(self._m, k, C.byref(t)))
            out.append({"name": t.name.decode(), "type": t.type.decode(),
                        "shape": tuple(t.dims[:t.n_dims]), "n_elements": t.n_elements,
                        "n_bytes": t.n_bytes})
        return out

    @property
    def bos(self):
        return _L.tinygpt_bos(self._m)

    @property
    def eos(self):
        return _L.tinygpt_eos(self._m)

    def is_special(self, id):
        return bool(_L.tinygpt_is_special(self._m, int(id)))

    def token_id(self, s):
        """The id of a vocabulary string ("<|endoftext|>", "Ġthe"), or -1."""
        return _L.tinygpt_token_id(self._m, s.encode())

    # ---- tokenizer ----

    def encode(self, text, special=False):
        """Text (str or bytes) -> int32 ids; special=True parses
        "<|endoftext|>" spelled out as that token."""
        b = _bytes(text)
        n = C.c_size_t()
        s = _L.tinygpt_tokenize(self._m, b, len(b), int(special), None, 0, C.byref(n))
        if s and s != 6:  # TINYGPT_ERR_RANGE: the size query
            self._check(s)
        out = np.zeros(n.value, dtype=np.int32)
        self._check(_L.tinygpt_tokenize(self._m, b, len(b), int(special), _ptr(out, C.c_int),
                                        n.value, C.byref(n)))
        return out

    def decode_bytes(self, ids):
        """Ids -> their exact bytes."""
        a = _ids(ids)
        n = C.c_size_t()
        s = _L.tinygpt_detokenize(self._m, _ptr(a, C.c_int), a.size, None, 0, C.byref(n))
        if s and s != 6:
            self._check(s)
        buf = C.create_string_buffer(n.value + 1)
        self._check(_L.tinygpt_detokenize(self._m, _ptr(a, C.c_int), a.size, buf, n.value + 1,
                                          C.byref(n)))
        return buf.raw[:n.value]

    def decode(self, ids):
        """Ids -> str (an invalid UTF-8 byte becomes U+FFFD)."""
        return self.decode_bytes(ids).decode("utf-8", "replace")

    def piece(self, id):
        """The bytes of one token."""
        n = C.c_size_t()
        p = _L.tinygpt_token_piece(self._m, int(id), C.byref(n))
        if not p:
            raise Error(5, "tinygpt: token %d is outside [0, %d)" % (id, self.n_vocab))
        return C.string_at(p, n.value)

    # ---- logits, log-probabilities, attention ----

    def _tokens(self, ids, what):
        a = _ids(self.encode(ids) if isinstance(ids, (str, bytes)) else ids)
        if a.size == 0:
            raise Error(5, "tinygpt: %s of no tokens" % what)
        return a

    def eval(self, ids, pos=None, all_logits=True):
        """Runs ids at positions pos.. (default: the end of the cache) and
        returns their logits float32 [T, V] (all_logits) or the last [V]."""
        h = self._h()
        a = self._tokens(ids, "eval")
        pos = _L.tinygpt_n_past(h) if pos is None else int(pos)
        out = np.zeros((a.size if all_logits else 1, self.n_vocab), dtype=np.float32)
        self._check(_L.tinygpt_eval(h, _ptr(a, C.c_int), a.size, pos, _ptr(out, C.c_float),
                                    int(all_logits)))
        return out if all_logits else out[0]

    def logits(self, ids):
        """float32 [T, V]: the logits at every position of ids (a str is
        encoded first), from position 0. The KV cache then holds ids."""
        return self.eval(ids, 0, True)

    def logprobs(self, ids):
        """float32 [T, V]: log-softmax of logits(ids)."""
        lg = self.logits(ids)
        self._check(_L.tinygpt_logprobs(self._m, _ptr(lg, C.c_float), lg.shape[0],
                                        _ptr(lg, C.c_float)))
        return lg

    def score(self, ids):
        """float32 [T-1]: log-probability of each token after those before it."""
        h = self._h()
        a = self._tokens(ids, "score")
        out = np.zeros(max(a.size - 1, 0), dtype=np.float32)
        self._check(_L.tinygpt_score(h, _ptr(a, C.c_int), a.size, _ptr(out, C.c_float)))
        return out

    def top_k(self, logits, k):
        """The k most likely tokens of a logits row [V]: (int32 ids [k],
        float32 logprobs [k]), best first."""
        row = np.ascontiguousarray(np.asarray(logits, dtype=np.float32).reshape(-1))
        if row.size != self.n_vocab:
            raise ValueError("a logits row has %d values, not %d" % (self.n_vocab, row.size))
        ids = np.zeros(max(int(k), 0), dtype=np.int32)
        lp = np.zeros(max(int(k), 0), dtype=np.float32)
        self._check(_L.tinygpt_top_k(self._m, _ptr(row, C.c_float), int(k),
                                     _ptr(ids, C.c_int), _ptr(lp, C.c_float)))
        return ids, lp

    def attention(self, ids):
        """float32 [L, H, T, T]: every head's attention weights over ids (a
        str is encoded first); row q sums to 1 over keys 0..q, zeros above
        the diagonal."""
        h = self._h()
        a = self._tokens(ids, "attention")
        out = np.zeros((self.n_layer, self.n_head, a.size, a.size), dtype=np.float32)
        self._check(_L.tinygpt_attention(h, _ptr(a, C.c_int), a.size, _ptr(out, C.c_float),
                                         None))
        return out

    # ---- head mask ----

    @property
    def head_mask(self):
        """uint8 [L, H]: 1 keeps a head, 0 silences it."""
        m = np.zeros((self.n_layer, self.n_head), dtype=np.uint8)
        self._check(_L.tinygpt_get_head_mask(self._m, _ptr(m, C.c_uint8)))
        return m

    @head_mask.setter
    def head_mask(self, mask):
        h = self._h()
        if mask is None:
            self._check(_L.tinygpt_set_head_mask(h, None))
            return
        m = np.ascontiguousarray(np.asarray(mask).astype(bool).astype(np.uint8))
        if m.shape != (self.n_layer, self.n_head):
            raise ValueError("a head mask is [%d, %d], not %s" % (self.n_layer, self.n_head,
                                                                 m.shape))
        self._check(_L.tinygpt_set_head_mask(h, _ptr(m, C.c_uint8)))

    @contextlib.contextmanager
    def ablate(self, layer, head=None):
        """Silences heads inside a with block: ablate(layer, head),
        ablate(layer) (every head of it), or ablate([(l, h), ...]). The
        previous mask comes back on exit. Evaluate from position 0 inside
        (logits, attention, generate do)."""
        pairs = layer if head is None and not isinstance(layer, int) else \
            [(layer, h) for h in (range(self.n_head) if head is None else [head])]
        old = self.head_mask
        new = old.copy()
        for (l, h) in pairs:
            if not (0 <= l < self.n_layer and 0 <= h < self.n_head):
                raise Error(5, "tinygpt: head (%d, %d) is outside %d layers x %d heads"
                            % (l, h, self.n_layer, self.n_head))
            new[l, h] = 0
        self.head_mask = new
        try:
            yield self
        finally:
            self.head_mask = old

    # ---- interruption ----

    def set_interrupt(self, fn):
        """fn() is asked at the start of every forward pass from now on
        (None: never). A true answer makes the call running the pass (eval,
        logits, attention, a generation step, quality, heads, compare, ...)
        raise Error with status INTERRUPTED, so that a long analysis can be
        cancelled within one pass (a deadline, a flag another thread sets).
        fn runs on the calling thread; an exception inside it interrupts too
        and is raised in place of the Error. The KV cache keeps what the
        passes before it computed."""
        h = self._h()
        if fn is None:
            cb = _lib.INTERRUPT()  # NULL
        else:
            def ask(_ctx):
                try:
                    return 1 if fn() else 0
                except BaseException as e:  # noqa: B902 — handed back by _check
                    self._interrupt_exc = e
                    return 1
            cb = _lib.INTERRUPT(ask)
        self._check(_L.tinygpt_set_interrupt(h, cb, None))
        self._interrupt_cb = cb

    # ---- the KV cache ----

    @property
    def n_past(self):
        """Positions the KV cache holds."""
        return _L.tinygpt_n_past(self._m)

    def truncate(self, n):
        self._check(_L.tinygpt_truncate(self._h(), int(n)))

    def cache_tokens(self):
        """int32 ids at positions 0..n_past-1."""
        out = np.zeros(self.n_past, dtype=np.int32)
        n = C.c_size_t()
        self._check(_L.tinygpt_cache_tokens(self._m, _ptr(out, C.c_int), out.size, C.byref(n)))
        return out

    def save(self):
        """A Context: the cache as it is (to fork a prompt)."""
        p = C.c_void_p()
        self._check(_L.tinygpt_context_save(self._h(), C.byref(p)))
        return Context(p)

    def restore(self, ctx):
        self._check(_L.tinygpt_context_restore(self._h(), ctx._p))

    # ---- analysis: the numbers of `tinygpt compare`, `profile`, `bench` ----

    def _text_ids(self, text):
        a = _ids(self.encode(text) if isinstance(text, (str, bytes)) else text)
        if a.size < 2:
            raise Error(5, "tinygpt: a text of %d tokens; the analysis takes at least 2" % a.size)
        return a

    def quality(self, text, window=0):
        """Loss of a text (str/bytes, encoded without special tokens as
        `tinygpt compare -f` does, or ids) in windows of `window` tokens (0:
        the cache length): nats/token, perplexity, nats/byte, loss by window
        position, in-context score (a dict). Runs under the head mask (so an
        ablated loss is `with m.ablate(l, h): m.quality(text)`)."""
        a = self._text_ids(text)
        q = _lib.Quality()
        self._check(_L.tinygpt_run_quality(self._h(), _ptr(a, C.c_int), a.size, int(window),
                                           C.byref(q)))
        return _lib.as_dict(q)

    def heads(self, text, window=0, head_tokens=2048, seed=1):
        """The head analysis of `tinygpt compare`: per-head attention metrics
        (entropy, confidence, sink, prev, local, induction: float64 [L, H]),
        the loss with each head zeroed (ablation_loss, ablation_delta), the
        loss keeping only one head of a layer (only_loss), the class of each
        head ([L][H] strings), and per layer the best and the mean single
        head. From every head on (the mask set before is back after)."""
        a = self._text_ids(text)
        o = _lib.HeadsOpts(int(window), int(head_tokens), _seed(seed))
        r = C.POINTER(_lib.HeadAnalysis)()
        self._check(_L.tinygpt_run_heads(self._h(), _ptr(a, C.c_int), a.size, C.byref(o),
                                         C.byref(r)))
        try:
            h = r.contents
            L, H = h.n_layer, h.n_head
            out = {k: getattr(h, k) for k in ("n_layer", "n_head", "n_kv_head", "window",
                                              "head_tokens", "seed", "tokens", "baseline_loss")}
            rows = [h.heads[i] for i in range(L * H)]
            for k in ("entropy", "confidence", "sink", "prev", "local", "induction",
                      "ablation_loss", "ablation_delta", "only_loss"):
                out[k] = np.array([getattr(x, k) for x in rows], dtype=np.float64).reshape(L, H)
            out["kv_head"] = np.array([x.kv_head for x in rows], dtype=np.int32).reshape(L, H)
            out["class"] = [[rows[l * H + j].cls.decode() for j in range(H)] for l in range(L)]
            out["layers"] = [_lib.as_dict(h.layers[i]) for i in range(h.n_layers)]
            return out
        finally:
            _L.tinygpt_head_analysis_free(r)

    def agreement(self, other, text, window=0):
        """Top-1 agreement and mean KL(self || other) on the same windows of
        text (the vocabularies must be the same)."""
        a = self._text_ids(text)
        g = _lib.Agreement()
        other._h()
        self._check(_L.tinygpt_run_agreement(self._h(), other._m, _ptr(a, C.c_int), a.size,
                                             int(window), C.byref(g)))
        return _lib.as_dict(g)

    def speed(self, text, window=0, reps=3):
        """Prefill and decode tok/s at the window and attention's share of
        each (compare's speed part; timings vary from run to run)."""
        a = self._text_ids(text)
        sp = _lib.Speed()
        self._check(_L.tinygpt_run_speed(self._h(), _ptr(a, C.c_int), a.size, int(window),
                                         int(reps), C.byref(sp)))
        return _lib.as_dict(sp)

    def compare(self, other, text, window=0, head_tokens=2048, seed=1, heads=True,
                agreement=True, speed=False):
        """`tinygpt compare self other -f text --json` as a dict: per model
        its configuration, quality, head analysis (heads=True) and speed
        (speed=True); their agreement. window 0: the smaller cache."""
        N = int(window) or min(self.n_ctx, other.n_ctx)
        out = {"window": N, "head_tokens": head_tokens, "models": []}
        for m in (self, other):
            ids = m.encode(text) if isinstance(text, (str, bytes)) else text
            d = {k: m.info[k] for k in ("path", "n_layer", "n_head", "head_size", "n_embd",
                                        "n_ctx", "n_vocab", "n_params")}
            d["quality"] = m.quality(ids, N)
            if heads:
                d["heads"] = m.heads(ids, N, head_tokens, seed)
            if speed:
                d["speed"] = m.speed(ids, N)
            out["models"].append(d)
        if agreement:
            out["agreement"] = self.agreement(other, self.encode(text) if isinstance(
                text, (str, bytes)) else text, N)
        return out

    def profile(self, prompt=None, n_prompt=0, gen=32, reps=1, seed=0, per_layer=False,
                per_head=False, roofline_seconds=0.0):
        """`tinygpt profile`'s numbers: per phase (prefill, decode) the rows
        per op (and per layer / head) with calls, ns, %, flops, bytes and %
        of the roofline (roofline_seconds > 0 measures the machine first).
        prompt: a str or ids (else n_prompt random ids from seed)."""
        o = _lib.ProfileOpts()
        _L.tinygpt_profile_opts_init(C.byref(o))
        a = None
        if prompt is not None:
            a = _ids(self.encode(prompt) if isinstance(prompt, (str, bytes)) else prompt)
            o.prompt, o.n_prompt = _ptr(a, C.c_int), a.size
        else:
            o.n_prompt = int(n_prompt)
        o.gen, o.reps, o.seed = int(gen), int(reps), _seed(seed)
        o.per_layer, o.per_head = int(bool(per_layer)), int(bool(per_head))
        o.roofline_seconds = float(roofline_seconds)
        r = C.POINTER(_lib.Profile)()
        self._check(_L.tinygpt_run_profile(self._h(), C.byref(o), C.byref(r)))
        try:
            p = r.contents
            out = {"n_threads": p.n_threads, "dram_gbs": p.dram_gbs,
                   "peak_gflops": p.peak_gflops, "phases": {}}
            for ph in p.phase:
                if not ph.ran:
                    continue
                d = _lib.as_dict(ph)
                for k, n in (("ops", ph.n_ops), ("layers", ph.n_layers), ("heads", ph.n_heads)):
                    d[k] = [_lib.as_dict(getattr(ph, k)[i]) for i in range(n)]
                out["phases"][d["name"]] = d
            return out
        finally:
            _L.tinygpt_profile_free(r)

    def sweep(self, ctx, steps=8, seed=0, roofline_seconds=0.0):
        """Decode at growing context (profile --ctx-sweep): a dict per ctx."""
        c = _ids(ctx)
        rows = (_lib.SweepRow * c.size)()
        self._check(_L.tinygpt_run_sweep(self._h(), _ptr(c, C.c_int), c.size, int(steps),
                                         _seed(seed), float(roofline_seconds), rows))
        return [_lib.as_dict(r) for r in rows]

    def bench(self, pp=(128,), tg=(128,), reps=5, roofline_seconds=0.0):
        """`tinygpt bench` rows (llama-bench style): ppN prefills, tgN decodes."""
        out = []
        for is_pp, ns in ((1, pp), (0, tg)):
            for n in ns:
                r = _lib.BenchRow()
                ms = (C.c_double * int(reps))()
                self._check(_L.tinygpt_run_bench(self._h(), is_pp, int(n), int(reps), None,
                                                 float(roofline_seconds), C.byref(r), ms))
                d = _lib.as_dict(r)
                d["test"] = ("pp%d" if is_pp else "tg%d") % n
                d["ms"] = list(ms)
                out.append(d)
        return out

    # ---- generation ----

    def generate(self, prompt="", n=256, temperature=0.8, top_k=40, top_p=0.95, min_p=0.05,
                 repeat_penalty=1.0, repeat_window=64, seed=0, stop=(), ignore_eos=False,
                 keep=-1, top_logprobs=0, tokens=False):
        """An iterator of the generated text's pieces (str), the way
        `tinygpt generate` samples: the same prompt, settings and seed give
        the same text. prompt: str/bytes (from position 0, "<|endoftext|>"
        spelled out is that token; "" starts from it), a sequence of ids
        (appended to the cache), or None (go on from the cache). n: tokens
        (-1: until EOS, a stop string or the caller). stop: strings that end
        the text (not shown). keep: the context crop (-1: half the cache; 0:
        stop when full). tokens=True yields Token objects instead. After the
        iterator ends, .result holds the stop reason and counts."""
        h = self._h()
        o = _lib.GenerateOpts()
        _L.tinygpt_generate_opts_init(C.byref(o))
        o.max_tokens, o.ignore_eos, o.keep = int(n), int(bool(ignore_eos)), int(keep)
        o.top_logprobs = int(top_logprobs)
        sp = o.sampling
        sp.temp, sp.top_k, sp.top_p, sp.min_p = temperature, int(top_k), top_p, min_p
        sp.repeat_penalty, sp.repeat_window, sp.seed = repeat_penalty, int(repeat_window), \
            _seed(seed)
        if isinstance(stop, (str, bytes)):
            stop = [stop]
        stops = [_bytes(s) for s in stop]
        arr = (C.c_char_p * max(len(stops), 1))(*stops)
        o.stop, o.n_stop = C.cast(arr, C.POINTER(C.c_char_p)), len(stops)
        g = C.c_void_p()
        if prompt is None:
            s = _L.tinygpt_gen_start(h, None, 0, C.byref(o), C.byref(g))
        elif isinstance(prompt, (str, bytes, bytearray)):
            b = _bytes(prompt)
            s = _L.tinygpt_gen_start_text(h, b, len(b), C.byref(o), C.byref(g))
        else:
            a = _ids(prompt)
            s = _L.tinygpt_gen_start(h, _ptr(a, C.c_int), a.size, C.byref(o), C.byref(g))
        self._check(s)
        self._gen = g
        return _Generation(self, g, tokens)


class _Generation:
    """The iterator Model.generate returns. Any other call on the model ends
    it (it then stops yielding)."""

    def __init__(self, model, g, tokens):
        self._model, self._g, self._tokens = model, g, tokens
        self._dec = __import__("codecs").getincrementaldecoder("utf-8")("replace")
        self.result = None

    def __iter__(self):
        return self

    def _live(self):
        return self._g is not None and self._model._gen is self._g

    def __next__(self):
        while True:
            if not self._live():
                self._g = None
                raise StopIteration
            t = _lib.Token()
            s = _L.tinygpt_gen_next(self._g, C.byref(t))
            if s:
                self._finish()
                self._model._check(s)
            out = C.string_at(t.out, t.out_len) if t.out_len else b""
            if t.id < 0:
                tail = self._dec.decode(out, final=True)
                self._finish()
                if tail and not self._tokens:
                    return tail
                if out and self._tokens:
                    return Token(-1, b"", b"", out, 0.0, [])
                raise StopIteration
            text = self._dec.decode(out)
            if self._tokens:
                top = [(t.top_ids[j], t.top_logprobs[j]) for j in range(t.n_top)]
                return Token(t.id, C.string_at(t.piece, t.piece_len),
                             C.string_at(t.text, t.text_len) if t.text_len else b"", out,
                             t.logprob, top)
            if text:
                return text

    def _finish(self):
        r = _lib.GenerateResult()
        _L.tinygpt_gen_result(self._g, C.byref(r))
        self.result = {"stop": _L.tinygpt_stop_reason_str(r.stop).decode(),
                       "stop_index": r.stop_index, "n_tokens": r.n_tokens,
                       "last_token": r.last_token, "n_prompt": r.n_prompt,
                       "n_shifts": r.n_shifts, "prefill_s": r.prefill_s,
                       "decode_s": r.decode_s}
        self._model._end_gen()
        self._g = None

    def close(self):
        """Ends the generation early."""
        if self._live():
            _L.tinygpt_gen_stop(self._g)
            self._finish()

    def __del__(self):
        if getattr(self, "_g", None) is not None and self._live():
            self._model._end_gen()
