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
    _fields_ = [("n_threads", C.c_int), ("isa", C.c_char_p), ("n_ctx", C.c_int)]


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


STRUCTS = {"tinygpt_options": Options, "tinygpt_sampling": Sampling, "tinygpt_info": Info,
           "tinygpt_tensor_info": TensorInfo, "tinygpt_generate_opts": GenerateOpts,
           "tinygpt_token": Token, "tinygpt_generate_result": GenerateResult}

p = C.c_void_p
i32p = C.POINTER(C.c_int)
f32p = C.POINTER(C.c_float)
u8p = C.POINTER(C.c_uint8)
szp = C.POINTER(C.c_size_t)

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
    "tinygpt_gen_result": (None, [p, C.POINTER(GenerateResult)]),
    "tinygpt_gen_free": (None, [p]),
}


def bind(lib):
    for name, (res, args) in PROTOS.items():
        f = getattr(lib, name)
        f.restype = res
        f.argtypes = args
    return lib
