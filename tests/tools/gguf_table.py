"""gguf_table.py — the tensor table of a GGUF file, read in Python from the
GGUF specification (header, metadata key/values, tensor infos, data at the
alignment) and ggml's block sizes, independently of tinygpt's reader: the
oracle for what `inspect` and `profile` say about a file's tensors, and the
offsets bench/quant_quality.py patches.

    t = read_table(path)
    t.tensors["blk.0.ffn_up.weight"]  -> Tensor(name, dims, type, offset, nbytes)
    t.alignment, t.data_start, t.kv (scalar metadata; arrays as their length)
    t.info[name] -> (file offset of its first dimension, of its type code)
"""
import struct
from collections import namedtuple

# ggml type code -> (name, elements per block, bytes per block), from ggml.h /
# ggml.c's type traits
GGML_TYPES = {
    0: ("f32", 1, 4),
    1: ("f16", 1, 2),
    2: ("q4_0", 32, 2 + 16),
    3: ("q4_1", 32, 2 + 2 + 16),
    6: ("q5_0", 32, 2 + 4 + 16),
    7: ("q5_1", 32, 2 + 2 + 4 + 16),
    8: ("q8_0", 32, 2 + 32),
    9: ("q8_1", 32, 4 + 4 + 32),
    30: ("bf16", 1, 2),
}

Tensor = namedtuple("Tensor", "name dims type type_name offset nbytes")  # dims innermost first
# info: name -> (file offset of its first dimension, of its type code)
Table = namedtuple("Table", "version alignment data_start kv tensors order info")

_SCALAR = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<B",
           10: "<Q", 11: "<q", 12: "<d"}


def read_table(path):
    d = open(path, "rb").read()
    if d[:4] != b"GGUF":
        raise ValueError(f"{path}: not a GGUF file")
    p = 4

    def take(fmt):
        nonlocal p
        v = struct.unpack_from(fmt, d, p)[0]
        p += struct.calcsize(fmt)
        return v

    def string():
        nonlocal p
        n = take("<Q")
        s = d[p:p + n].decode("utf-8")
        p += n
        return s

    def value(t):
        if t == 8:
            return string()
        if t == 9:
            et, n = take("<I"), take("<Q")
            for _ in range(n):
                value(et)
            return n  # an array: its length
        return take(_SCALAR[t])

    version = take("<I")
    n_tensors, n_kv = take("<Q"), take("<Q")
    kv = {}
    for _ in range(n_kv):
        key = string()
        kv[key] = value(take("<I"))
    alignment = kv.get("general.alignment", 32)
    infos, info = [], {}
    for _ in range(n_tensors):
        name = string()
        nd = take("<I")
        dims_at = p
        dims = [take("<Q") for _ in range(nd)]
        info[name] = (dims_at, p)
        typ, off = take("<I"), take("<Q")
        infos.append((name, dims, typ, off))
    data_start = (p + alignment - 1) // alignment * alignment
    tensors, order = {}, []
    for name, dims, typ, off in infos:
        tname, blk, bsize = GGML_TYPES[typ]
        n = 1
        for x in dims:
            n *= x
        if dims[0] % blk:
            raise ValueError(f"{name}: row of {dims[0]} is not a multiple of {blk}")
        tensors[name] = Tensor(name, dims, typ, tname, data_start + off, n // blk * bsize)
        order.append(name)
    return Table(version, alignment, data_start, kv, tensors, order, info)


def n_elements(t):
    n = 1
    for x in t.dims:
        n *= x
    return n
