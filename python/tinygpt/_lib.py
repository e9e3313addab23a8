"""_lib.py — libtinygpt through ctypes: finding the shared library and the
declarations of include/tinygpt.h that the binding uses. The structs mirror
the header field for field (tests/python checks the layouts against the C
compiler's)."""
import ctypes as C
import os

from . import _config

SONAME = "libtinygpt.so.0"


def _candidates():
    """Where the library may be: $TINYGPT_LIB, then beside the package
    (_config.LIBDIR_REL: the build tree's lib/, or the installed libdir,
    relative to this folder), then the dynamic loader's own search."""
    env = os.environ.get("TINYGPT_LIB")
    if env:
        yield env
        return
    here = os.path.dirname(os.path.abspath(__file__))
    yield os.path.normpath(os.path.join(here, _config.LIBDIR_REL, SONAME))
    yield SONAME


def load():
    errors = []
    for path in _candidates():
        if os.sep in path and not os.path.exists(path):
            errors.append("%s: no such file" % path)
            continue
        try:
            return C.CDLL(path)
        except OSError as e:
            errors.append(str(e))
    raise ImportError("tinygpt: cannot load libtinygpt (set TINYGPT_LIB to its path): "
                      + "; ".join(errors))


class Options(C.Structure):
    _fields_ = [("n_threads", C.c_int), ("isa", C.c_char_p), ("n_ctx", C.c_int),
                ("kv_type", C.c_char_p)]


class Sampling(C.Structure):
    _fields_ = [("temp", C.c_float), ("top_k", C.c_int), ("top_p", C.c_float),
                ("min_p", C.c_float), ("repeat_penalty", C.c_float),
                ("repeat_window", C.c_int), ("seed", C.c_uint64)]


class Info(C.Structure):
    _fields_ = [("arch", C.c_char_p), ("path", C.c_char_p), ("n_layer", C.c_int),
                ("n_head", C.c_int), ("n_kv_head", C.c_int), ("n_embd", C.c_int),
                ("head_size", C.c_int), ("n_ff", C.c_int), ("n_vocab", C.c_int),
                ("n_ctx_train", C.c_int), ("n_ctx", C.c_int), ("tied", C.c_int),
                ("norm_eps", C.c_float), ("n_params", C.c_uint64), ("n_bytes", C.c_uint64),
                ("weight_type", C.c_char_p), ("n_tensors", C.c_int), ("isa", C.c_char_p),
                ("n_threads", C.c_int), ("bos", C.c_int), ("eos", C.c_int)]


class TensorInfo(C.Structure):
    _fields_ = [("name", C.c_char_p), ("type", C.c_char_p), ("n_dims", C.c_int),
                ("dims", C.c_int64 * 2), ("n_elements", C.c_uint64), ("n_bytes", C.c_uint64)]


class GenerateOpts(C.Structure):
    _fields_ = [("max_tokens", C.c_int), ("sampling", Sampling),
                ("stop", C.POINTER(C.c_char_p)), ("n_stop", C.c_int), ("ignore_eos", C.c_int),
                ("keep", C.c_int), ("top_logprobs", C.c_int)]


class Token(C.Structure):
    _fields_ = [("id", C.c_int), ("index", C.c_int), ("piece", C.c_void_p),
                ("piece_len", C.c_size_t), ("text", C.c_void_p), ("text_len", C.c_size_t),
                ("out", C.c_void_p), ("out_len", C.c_size_t), ("logprob", C.c_double),
                ("n_top", C.c_int), ("top_ids", C.POINTER(C.c_int)),
                ("top_logprobs", C.POINTER(C.c_double))]


class GenerateResult(C.Structure):
    _fields_ = [("stop", C.c_int), ("stop_index", C.c_int), ("n_tokens", C.c_int),
                ("last_token", C.c_int), ("n_prompt", C.c_int), ("n_shifts", C.c_int),
                ("prefill_s", C.c_double), ("decode_s", C.c_double)]


class LossBucket(C.Structure):
    _fields_ = [("from_", C.c_int), ("to", C.c_int), ("tokens", C.c_uint64),
                ("nats", C.c_double), ("nats_per_token", C.c_double)]


class Quality(C.Structure):
    _fields_ = [("window", C.c_int), ("tokens", C.c_uint64), ("bytes", C.c_uint64),
                ("nats", C.c_double), ("nats_per_token", C.c_double),
                ("perplexity", C.c_double), ("nats_per_byte", C.c_double),
                ("by_position", LossBucket * 4), ("in_context_score", C.c_double)]


class Head(C.Structure):
    _fields_ = [("layer", C.c_int), ("head", C.c_int), ("kv_head", C.c_int),
                ("entropy", C.c_double), ("confidence", C.c_double), ("sink", C.c_double),
                ("prev", C.c_double), ("local", C.c_double), ("induction", C.c_double),
                ("cls", C.c_char_p), ("ablation_loss", C.c_double),
                ("ablation_delta", C.c_double), ("only_loss", C.c_double)]


class LayerHeads(C.Structure):
    _fields_ = [("layer", C.c_int), ("best_head", C.c_int), ("all_heads_loss", C.c_double),
                ("best_head_loss", C.c_double), ("random_head_loss", C.c_double)]


class HeadsOpts(C.Structure):
    _fields_ = [("window", C.c_int), ("head_tokens", C.c_uint64), ("seed", C.c_uint64)]


class HeadAnalysis(C.Structure):
    _fields_ = [("n_layer", C.c_int), ("n_head", C.c_int), ("n_kv_head", C.c_int),
                ("window", C.c_int), ("head_tokens", C.c_uint64), ("seed", C.c_uint64),
                ("tokens", C.c_uint64), ("baseline_loss", C.c_double),
                ("heads", C.POINTER(Head)), ("layers", C.POINTER(LayerHeads)),
                ("n_layers", C.c_int)]


class Agreement(C.Structure):
    _fields_ = [("positions", C.c_uint64), ("top1_same", C.c_uint64), ("kl_sum", C.c_double),
                ("top1", C.c_double), ("kl", C.c_double)]


class ProfileRow(C.Structure):
    _fields_ = [("name", C.c_char_p), ("layer", C.c_int), ("head", C.c_int),
                ("calls", C.c_double), ("ns", C.c_double), ("pct", C.c_double),
                ("flops", C.c_double), ("bytes", C.c_double), ("weight_bytes", C.c_double),
                ("kv_bytes", C.c_double), ("act_bytes", C.c_double), ("roof_pct", C.c_double)]


class ProfilePhase(C.Structure):
    _fields_ = [("name", C.c_char_p), ("ran", C.c_int), ("steps", C.c_int),
                ("tokens", C.c_int64), ("wall_ns", C.c_double), ("op_ns", C.c_double),
                ("wait_ns", C.c_double), ("cpu_ns", C.c_double),
                ("ops", C.POINTER(ProfileRow)), ("n_ops", C.c_int),
                ("layers", C.POINTER(ProfileRow)), ("n_layers", C.c_int),
                ("heads", C.POINTER(ProfileRow)), ("n_heads", C.c_int),
                ("outside", ProfileRow), ("total", ProfileRow)]


class Profile(C.Structure):
    _fields_ = [("n_threads", C.c_int), ("dram_gbs", C.c_double), ("peak_gflops", C.c_double),
                ("phase", ProfilePhase * 2)]


class ProfileOpts(C.Structure):
    _fields_ = [("prompt", C.POINTER(C.c_int)), ("n_prompt", C.c_int), ("gen", C.c_int),
                ("reps", C.c_int), ("seed", C.c_uint64), ("per_layer", C.c_int),
                ("per_head", C.c_int), ("roofline_seconds", C.c_double)]


class SweepRow(C.Structure):
    _fields_ = [("ctx", C.c_int), ("steps", C.c_int), ("step_us", C.c_double),
                ("attn_us", C.c_double), ("part_us", C.c_double * 3), ("attn_pct", C.c_double),
                ("us_per_head", C.c_double), ("attn_gflops", C.c_double),
                ("attn_roof_pct", C.c_double)]


class BenchRow(C.Structure):
    _fields_ = [("threads", C.c_int), ("is_pp", C.c_int), ("n", C.c_int), ("reps", C.c_int),
                ("tok_s", C.c_double), ("tok_s_sd", C.c_double), ("gflops", C.c_double),
                ("gbs", C.c_double), ("flops_frac", C.c_double), ("bw_frac", C.c_double),
                ("roof_frac", C.c_double)]


class Speed(C.Structure):
    _fields_ = [("n_tokens", C.c_int), ("reps", C.c_int), ("prefill_tok_s", C.c_double),
                ("decode_tok_s", C.c_double), ("prefill_attn_share", C.c_double),
                ("decode_attn_share", C.c_double)]


STRUCTS = {"tinygpt_options": Options, "tinygpt_sampling": Sampling, "tinygpt_info": Info,
           "tinygpt_tensor_info": TensorInfo, "tinygpt_generate_opts": GenerateOpts,
           "tinygpt_token": Token, "tinygpt_generate_result": GenerateResult,
           "tinygpt_loss_bucket": LossBucket, "tinygpt_quality": Quality,
           "tinygpt_head": Head, "tinygpt_layer_heads": LayerHeads,
           "tinygpt_heads_opts": HeadsOpts, "tinygpt_head_analysis": HeadAnalysis,
           "tinygpt_agreement": Agreement, "tinygpt_profile_row": ProfileRow,
           "tinygpt_profile_phase": ProfilePhase, "tinygpt_profile": Profile,
           "tinygpt_profile_opts": ProfileOpts, "tinygpt_sweep_row": SweepRow,
           "tinygpt_bench_row": BenchRow, "tinygpt_speed": Speed}
# C field names that are Python keywords
RENAMED = {("tinygpt_loss_bucket", "from_"): "from"}

p = C.c_void_p
i32p = C.POINTER(C.c_int)
f32p = C.POINTER(C.c_float)
u8p = C.POINTER(C.c_uint8)
szp = C.POINTER(C.c_size_t)

# int (*fn)(void *ctx) of tinygpt_set_interrupt; INTERRUPT() is NULL
INTERRUPT = C.CFUNCTYPE(C.c_int, C.c_void_p)

# name: (restype, argtypes)
PROTOS = {
    "tinygpt_status_str": (C.c_char_p, [C.c_int]),
    "tinygpt_version": (C.c_char_p, []),
    "tinygpt_options_init": (None, [C.POINTER(Options)]),
    "tinygpt_open": (C.c_int, [C.POINTER(p), C.c_char_p, C.POINTER(Options), C.c_char_p]),
    "tinygpt_close": (None, [p]),
    "tinygpt_last_error": (C.c_char_p, [p]),
    "tinygpt_n_vocab": (C.c_int, [p]),
    "tinygpt_n_ctx": (C.c_int, [p]),
    "tinygpt_n_past": (C.c_int, [p]),
    "tinygpt_tokenize": (C.c_int, [p, C.c_char_p, C.c_size_t, C.c_int, i32p, C.c_size_t, szp]),
    "tinygpt_detokenize": (C.c_int, [p, i32p, C.c_size_t, C.c_char_p, C.c_size_t, szp]),
    "tinygpt_token_piece": (C.c_void_p, [p, C.c_int, szp]),
    "tinygpt_eval": (C.c_int, [p, i32p, C.c_int, C.c_int, f32p, C.c_int]),
    "tinygpt_sampling_init": (None, [C.POINTER(Sampling)]),
    "tinygpt_get_info": (C.c_int, [p, C.POINTER(Info)]),
    "tinygpt_tensor": (C.c_int, [p, C.c_int, C.POINTER(TensorInfo)]),
    "tinygpt_bos": (C.c_int, [p]),
    "tinygpt_eos": (C.c_int, [p]),
    "tinygpt_is_special": (C.c_int, [p, C.c_int]),
    "tinygpt_token_id": (C.c_int, [p, C.c_char_p]),
    "tinygpt_logprobs": (C.c_int, [p, f32p, C.c_size_t, f32p]),
    "tinygpt_top_k": (C.c_int, [p, f32p, C.c_int, i32p, f32p]),
    "tinygpt_score": (C.c_int, [p, i32p, C.c_int, f32p]),
    "tinygpt_attention": (C.c_int, [p, i32p, C.c_int, f32p, f32p]),
    "tinygpt_set_head_mask": (C.c_int, [p, u8p]),
    "tinygpt_get_head_mask": (C.c_int, [p, u8p]),
    "tinygpt_set_interrupt": (C.c_int, [p, INTERRUPT, C.c_void_p]),
    "tinygpt_truncate": (C.c_int, [p, C.c_int]),
    "tinygpt_cache_tokens": (C.c_int, [p, i32p, C.c_size_t, szp]),
    "tinygpt_context_save": (C.c_int, [p, C.POINTER(p)]),
    "tinygpt_context_restore": (C.c_int, [p, p]),
    "tinygpt_context_n_past": (C.c_int, [p]),
    "tinygpt_context_free": (None, [p]),
    "tinygpt_stop_reason_str": (C.c_char_p, [C.c_int]),
    "tinygpt_generate_opts_init": (None, [C.POINTER(GenerateOpts)]),
    "tinygpt_gen_start": (C.c_int, [p, i32p, C.c_int, C.POINTER(GenerateOpts), C.POINTER(p)]),
    "tinygpt_gen_start_text": (C.c_int, [p, C.c_char_p, C.c_size_t, C.POINTER(GenerateOpts),
                                         C.POINTER(p)]),
    "tinygpt_gen_next": (C.c_int, [p, C.POINTER(Token)]),
    "tinygpt_gen_stop": (None, [p]),
    "tinygpt_gen_set_logprobs": (None, [p, C.c_int]),
    "tinygpt_gen_result": (None, [p, C.POINTER(GenerateResult)]),
    "tinygpt_gen_free": (None, [p]),
    "tinygpt_run_quality": (C.c_int, [p, i32p, C.c_size_t, C.c_int, C.POINTER(Quality)]),
    "tinygpt_heads_opts_init": (None, [C.POINTER(HeadsOpts)]),
    "tinygpt_run_heads": (C.c_int, [p, i32p, C.c_size_t, C.POINTER(HeadsOpts),
                                    C.POINTER(C.POINTER(HeadAnalysis))]),
    "tinygpt_head_analysis_free": (None, [C.POINTER(HeadAnalysis)]),
    "tinygpt_run_agreement": (C.c_int, [p, p, i32p, C.c_size_t, C.c_int,
                                        C.POINTER(Agreement)]),
    "tinygpt_profile_opts_init": (None, [C.POINTER(ProfileOpts)]),
    "tinygpt_run_profile": (C.c_int, [p, C.POINTER(ProfileOpts), C.POINTER(C.POINTER(Profile))]),
    "tinygpt_profile_free": (None, [C.POINTER(Profile)]),
    "tinygpt_run_sweep": (C.c_int, [p, i32p, C.c_int, C.c_int, C.c_uint64, C.c_double,
                                    C.POINTER(SweepRow)]),
    "tinygpt_run_bench": (C.c_int, [p, C.c_int, C.c_int, C.c_int, i32p, C.c_double,
                                    C.POINTER(BenchRow), C.POINTER(C.c_double)]),
    "tinygpt_run_speed": (C.c_int, [p, i32p, C.c_size_t, C.c_int, C.c_int, C.POINTER(Speed)]),
}


def as_dict(st):
    """A ctypes struct as a dict (nested structs and arrays of them too;
    strings decoded; pointers left out)."""
    cname = next((k for k, v in STRUCTS.items() if v is type(st)), "")
    out = {}
    for f, t in st._fields_:
        v = getattr(st, f)
        if isinstance(v, bytes):
            v = v.decode()
        elif isinstance(v, C.Structure):
            v = as_dict(v)
        elif isinstance(v, C.Array):
            v = [as_dict(x) if isinstance(x, C.Structure) else x for x in v]
        elif isinstance(v, (C._Pointer, C.c_void_p)) or (t is C.c_void_p):
            continue
        out[RENAMED.get((cname, f), f)] = v
    return out


def bind(lib):
    for name, (res, args) in PROTOS.items():
        f = getattr(lib, name)
        f.restype = res
        f.argtypes = args
    return lib
