"""gguf_table.py — GGUF files read in Python from the GGUF specification
(header, metadata key/values, tensor infos, data at the alignment) and
ggml's block sizes, independently of tinygpt's reader: the tests' one GGUF
reader. The oracle for what `inspect` and `profile` say about a file's
tensors, for the bytes `quantize` and `convert` write, and the offsets
bench/quant_quality.py patches.

    g = read_gguf(path)               # or parse(the file's bytes)
    g.kv["tokenizer.ggml.tokens"]     -> every metadata value (arrays as lists)
    g.tensors["blk.0.ffn_up.weight"]  -> Tensor(name, dims, type, type_name, offset, nbytes)
    raw(g, name)                      -> the tensor's bytes; f32(g, name) -> a numpy array
    g.alignment, g.data_start, g.version, g.order (the infos' order)
    g.info[name] -> (file offset of its first dimension, of its type code)
    g.kv_types[key] -> (value type, an array's element type or None)
    a tensor of a type ggml.h has but not this table: type_name None, nbytes None

    t = read_table(path)              # the same, arrays in t.kv as their length
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
# a whole file: Table's fields, the file's bytes, and each key's value type
# (kv_types[key] = (type, element type of an array or None))
Gguf = namedtuple("Gguf", Table._fields + ("data", "kv_types"))

# metadata value types 0..12 (the spec's gguf_metadata_value_type): the scalars
_SCALAR = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?",
           10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9


def parse(d):
    """The GGUF (v2 or v3: the same layout) in the bytes d: a Gguf. Raises
    ValueError for a file that is not GGUF or a row that is not whole blocks."""
    if d[:4] != b"GGUF":
        raise ValueError("not a GGUF file")
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
        if t == _STRING:
            return string()
        if t == _ARRAY:
            et, n = take("<I"), take("<Q")
            return [value(et) for _ in range(n)]
        return take(_SCALAR[t])

    version = take("<I")
    if version not in (2, 3):
        raise ValueError(f"GGUF version {version}")
    n_tensors, n_kv = take("<Q"), take("<Q")
    kv, kv_types = {}, {}
    for _ in range(n_kv):
        key = string()
        t = take("<I")
        kv_types[key] = (t, struct.unpack_from("<I", d, p)[0] if t == _ARRAY else None)
        kv[key] = value(t)
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
        tname, blk, bsize = GGML_TYPES.get(typ, (None, 1, None))
        if dims[0] % blk:
            raise ValueError(f"{name}: row of {dims[0]} is not a multiple of {blk}")
        tensors[name] = Tensor(name, dims, typ, tname, data_start + off,
                               n_elements_of(dims) // blk * bsize if bsize else None)
        order.append(name)
    return Gguf(version, alignment, data_start, kv, tensors, order, info, d, kv_types)


def read_gguf(path):
    with open(path, "rb") as f:
        return parse(f.read())


def read_table(path):
    """The tensor table: read_gguf's, with each array value in kv as its
    length."""
    g = read_gguf(path)
    kv = {k: len(v) if isinstance(v, list) else v for k, v in g.kv.items()}
    return Table(g.version, g.alignment, g.data_start, kv, g.tensors, g.order, g.info)


def raw(g, name):
    """The bytes of tensor name in the file."""
    t = g.tensors[name]
    return g.data[t.offset:t.offset + t.nbytes]


def shape(t):
    """numpy order (outermost first) of a Tensor's dims."""
    return list(reversed(t.dims))


def f32(g, name):
    """An F32 tensor as a float32 array in numpy order (a view of the file)."""
    import numpy as np
    t = g.tensors[name]
    if t.type != 0:
        raise ValueError(f"{name} is {t.type_name}, not f32")
    return np.frombuffer(g.data, "<f4", n_elements(t), t.offset).reshape(shape(t))


def n_elements_of(dims):
    n = 1
    for x in dims:
        n *= x
    return n


def n_elements(t):
    return n_elements_of(t.dims)
