/* engine.h — model-agnostic compute: CPU features, the kernel table, threads.
 *
 * Dimension legend (used in every shape comment of engine/):
 *   T    rows (tokens) of a batch          IN   input features of a matmul
 *   OUT  output features of a matmul       N    length of one row
 *   HS   head size (one attention head)    P    positions held in the K/V cache
 *   LD*  row stride, in floats, of a strided matrix (ldq, ldk, ldo, ...)
 *
 * Matrices are row-major; weights are stored [OUT, IN] (the GGUF/llama.cpp
 * convention), so a matmul is Y = X · Wᵀ + b.
 *
 * Library code here never prints and never exits: functions that can fail
 * return a tg_status and, where given, fill a tg_err with a one-line message.
 */
#ifndef TINYGPT_ENGINE_H
#define TINYGPT_ENGINE_H

#include <stddef.h>
#include <stdint.h>
#include "engine/status.h"

/* ---- CPU features and the ISA level -------------------------------------- */

typedef enum tg_isa {
    TG_ISA_SCALAR = 0, /* portable C reference: the fallback and the oracle */
    TG_ISA_AVX2,       /* x86-64 AVX2 + FMA */
    TG_ISA_AVX512,     /* x86-64 AVX-512 F/BW/VL/DQ (+ AVX2 + FMA) */
    TG_ISA_NEON,       /* aarch64 Advanced SIMD */
    TG_ISA_COUNT
} tg_isa;

const char *tg_isa_name(tg_isa isa);                 /* "scalar", "avx2", ... */
/* Parses "scalar|avx2|avx512|neon"; TG_ERR_ARG on anything else. */
tg_status tg_isa_parse(const char *name, tg_isa *out);
/* Is this ISA usable on this CPU *and* OS (cpuid + XGETBV, or AT_HWCAP)?
 * Detection runs once (pthread_once); the answer never changes. */
int tg_isa_supported(tg_isa isa);
/* Optional instructions within an ISA level, detected once (cpuid leaf 7 +
 * XGETBV; AT_HWCAP on aarch64): kernels that use them are installed in the
 * table only where they are present. */
typedef enum tg_cpu_feature {
    TG_CPU_F16C,          /* x86 half <-> float conversions */
    TG_CPU_AVX_VNNI,      /* VEX vpdpbusd on ymm */
    TG_CPU_AVX512_VNNI,   /* EVEX vpdpbusd */
    TG_CPU_AVX512_BF16,   /* vdpbf16ps, vcvtne2ps2bf16 */
    TG_CPU_AVX512_FP16,   /* half-precision arithmetic */
    TG_CPU_NEON_DOTPROD,  /* aarch64 sdot/udot */
    TG_CPU_NEON_FP16,     /* aarch64 half-precision arithmetic */
    /* x86 AMX tiles: cpuid 7.0 EDX bits 24, 25, 22, the OS saving XTILECFG
     * and XTILEDATA (XCR0 bits 17, 18), and Linux's permission for them
     * (arch_prctl ARCH_REQ_XCOMP_PERM, asked once, after $TINYGPT_CPU_MASK:
     * a masked AMX is never asked for). INT8 and BF16 imply TILE; masking
     * amx_tile hides all three. */
    TG_CPU_AMX_TILE,      /* ldtilecfg, tileloadd, tilestored, tilezero */
    TG_CPU_AMX_INT8,      /* tdpbssd and kin */
    TG_CPU_AMX_BF16,      /* tdpbf16ps */
    TG_CPU_FEATURE_COUNT
} tg_cpu_feature;
int tg_cpu_has(tg_cpu_feature f); /* 0 also when named in $TINYGPT_CPU_MASK */
const char *tg_cpu_feature_name(tg_cpu_feature f);

/* The largest data or unified cache one core can use, in bytes, as cpuid
 * tells it (x86; 0 elsewhere, or when cpuid gives no figure to trust): the
 * deterministic cache leaves (4 on Intel, 0x8000001D on AMD with TOPOEXT),
 * else AMD's 0x80000006 L3 then L2 fields, skipping one whose associativity
 * code is 0 (absent) or 9 ("see 0x8000001D"; under some hypervisors its
 * size field is the whole host's L3: 508 MiB on a Zen 5 VM with 32 MB). */
size_t tg_cpu_cache_bytes(void);
/* The decoders behind it, pure so tests can feed them register values.
 * One deterministic cache leaf (eax, ebx, ecx of leaf 4 / 0x8000001D):
 * its size if it describes a data or unified cache (*level set), else 0. */
size_t tg_cpuid_cache_leaf_bytes(unsigned eax, unsigned ebx, unsigned ecx, int *level);
/* AMD 0x80000006: the L2 (ecx) and L3 (edx) fields; 0 when not valid. */
size_t tg_cpuid_amd_l2_bytes(unsigned ecx);
size_t tg_cpuid_amd_l3_bytes(unsigned edx);

/* The best supported ISA. */
tg_isa tg_isa_best(void);
/* Does this build hold kernels for isa (scalar always; the arch's init file
 * knows the rest)? Compiled in is not usable: see tg_isa_supported. */
int tg_isa_compiled(tg_isa isa);
/* The ISA to use: `name` if non-NULL, else $TINYGPT_ISA if set, else best.
 * An unknown name, or an ISA this CPU lacks, is an error naming it. */
tg_status tg_isa_select(const char *name, tg_isa *out, tg_err *err);
/* TG_ERR_ARG when $TINYGPT_CPU_MASK names a feature that does not exist (a
 * misspelt mask hides nothing); tg_isa_select checks it first. */
tg_status tg_cpu_mask_check(tg_err *err);

/* ---- Weight types and typed weight views ---------------------------------- */

/* The types a weight matrix may have in memory, as it sits in the mapped
 * file (a new type is one more column of the kernel table). F16 is IEEE
 * binary16, BF16 the top half of an f32; Q8_0 and Q4_0 are ggml's blocks
 * of TG_QK elements along a row (below), so files go both ways with
 * llama.cpp unchanged. */
typedef enum tg_wtype {
    TG_WTYPE_F32 = 0,
    TG_WTYPE_F16,
    TG_WTYPE_BF16,
    TG_WTYPE_Q8_0,
    TG_WTYPE_Q4_0,
    TG_WTYPE_COUNT
} tg_wtype;

#define TG_QK 32 /* elements per Q8_0 / Q4_0 block */

/* Q8_0: x[j] = d · qs[j]  (d an IEEE half) */
typedef struct tg_block_q8_0 {
    uint16_t d;
    int8_t qs[TG_QK];
} tg_block_q8_0;

/* Q4_0: x[j] = d · (q[j] - 8), q[j] in 0..15; element j < 16 is the low
 * nibble of qs[j], element j >= 16 the high nibble of qs[j - 16]. */
typedef struct tg_block_q4_0 {
    uint16_t d;
    uint8_t qs[TG_QK / 2];
} tg_block_q4_0;

_Static_assert(sizeof(tg_block_q8_0) == 34, "Q8_0 block is 34 bytes");
_Static_assert(sizeof(tg_block_q4_0) == 18, "Q4_0 block is 18 bytes");

/* A weight matrix W[OUT, IN] as it sits in memory: `rows` rows of `cols`
 * elements of `type`, row r at (const char *)data + r·row_bytes. Views
 * borrow their bytes (usually a read-only file mapping). */
typedef struct tg_weight {
    tg_wtype type;
    const void *data;
    int rows, cols;
    size_t row_bytes;
} tg_weight;

const char *tg_wtype_name(tg_wtype t);  /* "f32", "f16", "bf16", "q8_0", "q4_0" */
/* Parses those names; TG_ERR_ARG on anything else. */
tg_status tg_wtype_parse(const char *name, tg_wtype *out);
/* Elements per block: TG_QK for Q8_0/Q4_0, else 1. */
int tg_wtype_block(tg_wtype t);
/* Bytes of a row of n elements; 0 when n is not a multiple of the block
 * (or t is not a type). */
size_t tg_wtype_row_bytes(tg_wtype t, int n);
/* 1 when the type's matmul takes Q8_0-quantized activations (integer dot
 * products): Q8_0, Q4_0. */
int tg_wtype_q8_act(tg_wtype t);
/* A contiguous f32 [rows, cols] view of w. */
tg_weight tg_weight_f32(const float *w, int rows, int cols);

/* Scalar conversions (IEEE half with subnormals, inf and NaN; bfloat16):
 * to the narrow types round to nearest even, NaN stays a (quiet) NaN. */
float tg_f16_to_f32(uint16_t h);
uint16_t tg_f32_to_f16(float f);
float tg_bf16_to_f32(uint16_t h);
uint16_t tg_f32_to_bf16(float f);

/* The reference encoders of every type, for writers and tests (n a multiple
 * of the type's block): y = x[N] in type t. F16/BF16 round to nearest even.
 * Q8_0 (ggml's rule): d = max|x|/127, q = x/d rounded to nearest even (so
 * |x - d·q| <= d/2 before d is rounded to a half). Q4_0: m the element of
 * largest |x|, d = m/-8, q = x/d + 8 rounded to nearest even and clamped
 * to 0..15 (|err| <= |d|/2, or |d| for the clamped q = 15 end). A block
 * holding a NaN or an infinity gets d = NaN and q = 0 (so every dot product
 * through it is NaN); returns the number of such blocks (0: all finite). */
int tg_quantize_row(tg_wtype t, void *y, const float *x, int n);
/* y[N] = the values of a row of type t (exact: every type is a subset of
 * f32, and d·q rounds once). */
void tg_dequantize_row(tg_wtype t, float *y, const void *x, int n);

/* ---- The kernel table ---------------------------------------------------- */

/* Every kernel is a small pure function over caller-owned memory. Kernels
 * that are split over threads take a half-open range of output rows/items;
 * the value of every output element must not depend on the range it was
 * computed in (ranges start at multiples of TG_ROW_BLOCK), which is what
 * makes results bit-identical for any thread count. */
#define TG_ROW_BLOCK 16

/* The per-step scalars of the adamw kernel (bias corrections folded in:
 * step = lr / (1 - β1^t), bc2s = √(1 - β2^t)). */
typedef enum tg_tri { TG_TRI_NONE, TG_TRI_C_LOWER, TG_TRI_A_LOWER, TG_TRI_A_UPPER } tg_tri;

typedef struct tg_adamw_coef {
    float gscale, decay, beta1, beta2, step, bc2s, eps;
} tg_adamw_coef;

typedef struct tg_kernels {
    /* Y[T,OUT] = X[T,IN] · W[OUT,IN]ᵀ + b[OUT], for output columns o0..o1-1
     * only (b may be NULL). T == 1 is the decode GEMV (memory-bound); T > 1
     * the prefill GEMM (register-blocked, cache-tiled). Y has row stride OUT. */
    void (*matmul)(float *y, const float *x, const float *w, const float *b,
                   int T, int in, int out, int o0, int o1);

    /* The typed matmul, one column per weight type (tg_wtype):
     *   Y[T,OUT] = X[T,IN] · W[OUT,IN]ᵀ + b[OUT], columns o0..o1-1 only,
     * W's rows ldw bytes apart in its type's layout (for F32 ldw == 4·IN:
     * that column is `matmul` above). For F32, F16 and BF16 x is f32
     * [T,IN]; for the integer types (tg_wtype_q8_act) x is X quantized by
     * quantize_q8_0, [T, IN/32] blocks, and IN is a multiple of 32. Within a
     * block the int8·int8 (or int4·int8) products are summed exactly in
     * int32, then scaled by d_w·d_x and summed in f32, so the kernels differ
     * from the reference only in the order of those f32 sums (and where
     * an fma rounds once a product and a sum the reference rounds twice;
     * the x86 prefill GEMM with VNNI, engine/x86/qgemm_tmpl.h). Same range
     * rules as matmul (results independent of o0/o1). ws is scratch of
     * tg_matmul_w_scratch(type, T, IN) bytes, 64-byte aligned, for this call
     * alone (packed panels, X prepared for the GEMM): a prefill allocates
     * nothing per matmul. NULL where that size is 0. */
    void (*matmul_w[TG_WTYPE_COUNT])(float *y, const void *x, const void *w, size_t ldw,
                                     const float *b, int T, int in, int out, int o0,
                                     int o1, void *ws);

    /* q[N/32] = x[N] quantized to Q8_0 blocks (tg_quantize_row's rule for
     * Q8_0, bit for bit on every ISA): the activations of the integer
     * matmuls, shared by their GEMV and GEMM. N % 32 == 0. */
    void (*quantize_q8_0)(tg_block_q8_0 *q, const float *x, int n);

    /* y[N] = one row of type t as f32 (embedding lookup), exact. */
    void (*dequant[TG_WTYPE_COUNT])(float *y, const void *w, int n);

    /* x[N] = softmax(x[N]) in place, max-subtracted. -inf entries get 0;
     * a row that is all -inf becomes all 0 (nothing to attend to); a NaN
     * anywhere makes the whole row NaN (never a clean 0). */
    void (*softmax)(float *x, int n);

    /* y[T,N] = (x - mean) / sqrt(var + eps) * g + b, per row, two-pass. */
    void (*layernorm)(float *y, const float *x, const float *g, const float *b,
                      int T, int n, float eps);

    /* y[N] = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x³)))  (GPT-2's GELU) */
    void (*gelu)(float *y, const float *x, int n);

    /* y[N] = a[N] + b[N] (y may alias a or b) */
    void (*add)(float *y, const float *a, const float *b, int n);

    /* s[P] = q[HS] · K[P,HS]ᵀ · scale  (attention scores of one query; K rows
     * ldk floats apart). */
    void (*attn_scores)(float *s, const float *q, const float *k, int n_pos,
                        int hs, int ldk, float scale);

    /* o[HS] = p[P] · V[P,HS]  (mix the values; V rows ldk floats apart) */
    void (*attn_mix)(float *o, const float *p, const float *v, int n_pos, int hs,
                     int ldk);

    /* Attention core for one head, one query (decode):
     *   s[P] = q[HS] · K[P,HS]ᵀ · scale;  p = softmax(s);  o[HS] = p · V[P,HS]
     * K and V rows are ldk floats apart (ldk == hs for tinygpt's head-major
     * cache, which the kernels unroll for the common head sizes). p[P] is
     * scratch and, on return, holds the attention weights (the probe hook
     * reads them). */
    void (*attn_decode)(float *o, float *p, const float *q, const float *k,
                        const float *v, int n_pos, int hs, int ldk, float scale);

    /* Attention core for one head, T causal queries (prefill):
     *   query t (row t of q, ldq apart) sees positions 0..pos0+t of K/V;
     *   o[t] = softmax(q[t]·Kᵀ·scale) · V, written ldo apart.
     * Tiled with an online softmax: never materialises T×P. Row t's bits
     * depend only on its own query and keys, not on how the T queries are
     * split into calls (pos0 + t0), so callers may chunk or thread them. */
    void (*attn_prefill)(float *o, const float *q, const float *k, const float *v,
                         int T, int pos0, int hs, int ldq, int ldk, int ldo,
                         float scale);

    /* ---- Training kernels (model/train.c) ---------------------------------
     * C[M,N] = S + A[M,K] · B[K,N], rows m0..m1-1 only, where the start S
     * is the old C when acc, else bias[N] on every row when bias is given,
     * else 0 (the forward's Y = b + X·Wᵀ needs no pass to copy b first).
     * A's element (m,k) is a[m*rsa + k*csa] and B's (k,n) is b[k*rsb + n*csb],
     * so either operand may be read transposed; C rows are ldc apart. Every C
     * element is one running sum from S over k in ascending order whatever m0/m1,
     * so results do not depend on how rows are split over threads. ws is
     * scratch of TG_GEMM_WS floats. Training's matmuls are all this kernel:
     * Y = X·Wᵀ, dX = dY·W, dW += dYᵀ·X, and attention's Q·Kᵀ, P·V, ...
     * tri (tg_tri) serves causal attention:
     *   TG_TRI_C_LOWER  only C[m][n] with n <= m is computed; the rest of C
     *                   is not touched (Q·Kᵀ, dY·Vᵀ)
     *   TG_TRI_A_LOWER  A[m][k] is taken as 0 for k > m, whatever is stored
     *                   there: sums run over k <= m (P·V, dS·K)
     *   TG_TRI_A_UPPER  A[m][k] is taken as 0 for k < m: sums run over
     *                   k >= m (dSᵀ·Q, Pᵀ·dY) */
    void (*gemm)(float *c, int ldc, const float *a, ptrdiff_t rsa, ptrdiff_t csa,
                 const float *b, ptrdiff_t rsb, ptrdiff_t csb, int M, int N, int K,
                 int tri, int m0, int m1, int acc, const float *bias, float *ws);

    /* Layernorm backward for x[T,N] (mean and rstd recomputed as in the
     * forward, two-pass), with x̂ = (x - mean)·rstd and u = g⊙dy:
     *   dx[t] += rstd · (u - mean(u) - x̂ · mean(u⊙x̂))
     *   dg[N] += Σ_t dy⊙x̂,   db[N] += Σ_t dy */
    void (*layernorm_bwd)(float *dx, float *dg, float *db, const float *dy,
                          const float *x, const float *g, int T, int n, float eps);

    /* dx[N] = dy[N] · GELU'(x[N])  (the tanh form's exact derivative) */
    void (*gelu_bwd)(float *dx, const float *x, const float *dy, int n);

    /* Softmax backward of one row: p = softmax(s), dy = dL/dp:
     *   dx[N] = scale · p ⊙ (dy - Σ p⊙dy)   (dx may alias dy) */
    void (*softmax_bwd)(float *dx, const float *p, const float *dy, int n, float scale);

    /* One AdamW step over N parameters, in PyTorch's order of operations
     * (c: tg_adamw_coef), g the unclipped gradient:
     *   g' = g·gscale;  m = β1·m + (1-β1)·g';  v = β2·v + (1-β2)·g'²
     *   p = p·decay - step · m / (√v / bc2s + eps) */
    void (*adamw)(float *p, float *m, float *v, const float *g, size_t n,
                  const tg_adamw_coef *c);

    /* Σ x[N]² in double (the gradient norm). SIMD versions sum in float
     * within blocks of TG_SUMSQ_BLOCK elements and add the blocks in double;
     * the reference sums in double throughout. */
    double (*sumsq)(const float *x, size_t n);

    /* RMSNorm backward for x[T,N] (r = 1/sqrt(mean(x²) + eps) recomputed as
     * in the forward, the mean of squares summed in f32), u = g⊙dy:
     *   dx[t] += r · u - x · r³ · mean(u⊙x)
     *   dg[N] += Σ_t dy⊙x·r */
    void (*rmsnorm_bwd)(float *dx, float *dg, const float *dy, const float *x,
                        const float *g, int T, int n, float eps);

    /* SwiGLU backward: y = silu(a)·b, σ = 1/(1 + e^(-a)), dy = dL/dy:
     *   da[N] = dy · b · σ · (1 + a·(1 - σ)),   db[N] = dy · a·σ
     * (da, db may alias a, b or dy element for element: each element's
     * inputs are read before its outputs are written) */
    void (*silu_mul_bwd)(float *da, float *db, const float *a, const float *b,
                         const float *dy, int n);

    /* ---- Llama-family kernels (model/llama.c) ------------------------------ */

    /* y[T,N] = x / sqrt(mean(x²) + eps) · g, per row (RMSNorm; y may alias x).
     * The mean of squares is summed in f32. */
    void (*rmsnorm)(float *y, const float *x, const float *g, int T, int n, float eps);

    /* y[N] = silu(a) · b = a / (1 + exp(-a)) · b  (SwiGLU's gate; y may alias a) */
    void (*silu_mul)(float *y, const float *a, const float *b, int n);

    /* Rotary position embedding of one position, in place, for n_head heads
     * of x[n_head, HS] (heads HS floats apart): pair i (0 <= i < D/2) of each
     * head turns by the angle whose cos and sin are cs[i], sn[i]:
     *   (x0, x1) <- (x0·c - x1·s, x0·s + x1·c)
     * where the pair is (2i, 2i+1) when !halves (GGUF, llama2.c) or
     * (i, i + D/2) when halves (Hugging Face). Dimensions D..HS-1 are left. */
    void (*rope)(float *x, const float *cs, const float *sn, int n_head, int hs, int d,
                 int halves);

    /* Grouped-query decode: G query heads q[G,HS] (contiguous) that share one
     * K/V head, one query each:
     *   for each g: s = q[g]·K[P,HS]ᵀ·scale; p[g] = softmax(s); o[g] = p[g]·V
     * reading each K and V row once for the whole group. K/V rows hs floats
     * apart (head-major cache); o[G,HS] contiguous; p[G,P] scratch holding the
     * weights on return. G == 1 is attn_decode with ldk == hs. */
    void (*attn_decode_gqa)(float *o, float *p, const float *q, const float *k,
                            const float *v, int n_pos, int hs, int g, float scale);

    /* ---- The f16 KV cache ---------------------------------------------------
     * The same contracts as attn_decode_gqa and attn_prefill (head-major
     * rows, ldk == hs) with K and V stored as IEEE half: the SIMD decode
     * widens the halves in the register inside its score and mix loops (the
     * common head sizes) or a block of keys at a time into ws, the prefill
     * a block at a time into ws (TG_KV16_WS(hs) floats of caller scratch:
     * TG_KV16_BLOCK keys of K and V, or 2·TG_KV16_BLOCK of one), running the
     * f32 code's operations either way, so a SIMD result is bit-identical
     * to its f32 kernel on the widened K/V (for G == 1 on attn_decode_gqa's
     * chunking). */
    void (*attn_decode_gqa_f16)(float *o, float *p, const float *q, const uint16_t *k,
                                const uint16_t *v, int n_pos, int hs, int g, float scale,
                                float *ws);
    void (*attn_prefill_f16)(float *o, const float *q, const uint16_t *k, const uint16_t *v,
                             int T, int pos0, int hs, int ldq, int ldo, float scale, float *ws);

    /* attn_decode, attn_decode_gqa and attn_decode_gqa_f16 for a KV cache
     * that is not in cache when read (a model whose weights pass through
     * the LLC every step): the same results bit for bit, with each head's
     * K and V rows prefetched ahead (the hardware prefetchers ramp up too
     * slowly for these short streams). From L1/L2 the prefetches cost
     * ~10-15%, hence separate entries; the C reference is the same code. */
    void (*attn_decode_stream)(float *o, float *p, const float *q, const float *k,
                               const float *v, int n_pos, int hs, int ldk, float scale);
    void (*attn_decode_gqa_stream)(float *o, float *p, const float *q, const float *k,
                                   const float *v, int n_pos, int hs, int g, float scale);
    void (*attn_decode_gqa_f16_stream)(float *o, float *p, const float *q, const uint16_t *k,
                                       const uint16_t *v, int n_pos, int hs, int g, float scale,
                                       float *ws);
    /* y[N] = x[N] as IEEE half, round to nearest even (tg_f32_to_f16's
     * values; a NaN stays a NaN): keys and values into an f16 cache. */
    void (*f32_to_f16)(uint16_t *y, const float *x, int n);
} tg_kernels;

#define TG_KV16_BLOCK 64 /* keys per widened block of an f16 KV cache */
#define TG_KV16_WS(hs) (2 * (size_t)TG_KV16_BLOCK * (size_t)(hs))

#define TG_SUMSQ_BLOCK 1024

/* Scratch floats the gemm kernel needs (packed panels of A and B). */
#define TG_GEMM_WS (96 * 256 + 256 * 256 + 64)

/* An engine instance: the chosen ISA and its filled kernel table. */
typedef struct tg_engine {
    tg_isa isa;
    tg_kernels k;
    /* 1 where k.matmul_w[TG_WTYPE_BF16] with T > 1 rounds X to bfloat16
     * first (the AVX512-BF16 GEMM, engine/x86/bf16_avx512.c): each x moves
     * by at most 2^-8·|x|, so Y is within (2^-8 + (IN + 8)·eps)·Σ|w·x| of
     * exact instead of the f32 bound. 0: X stays f32. (Outside the table,
     * which holds only kernels.) */
    int bf16_act;
} tg_engine;

/* Fills the table with the C reference, then upgrades it up to `isa`. */
tg_status tg_engine_init(tg_engine *e, tg_isa isa, tg_err *err);

/* Per-ISA upgrade steps (each defined in the files built with that ISA's
 * flags; the arch init calls them in order). */
void tg_kernels_init_ref(tg_kernels *k);
void tg_kernels_init_train_ref(tg_kernels *k); /* called by tg_kernels_init_ref */
void tg_kernels_init_quant_ref(tg_kernels *k); /* called by tg_kernels_init_ref */
/* The reference f32 matmul (tg_kernels.matmul's contract). */
void tg_matmul_ref(float *y, const float *x, const float *w, const float *b, int T, int in,
                   int out, int o0, int o1);
void tg_kernels_init_arch(tg_kernels *k, tg_isa isa);
/* Whether that table's BF16 GEMM rounds X to bfloat16 (tg_engine.bf16_act). */
int tg_arch_bf16_act(tg_isa isa);

/* ---- Threads -------------------------------------------------------------- */

typedef struct tg_pool tg_pool;

/* A persistent pool of n_threads workers (the caller is worker 0), spinning
 * briefly then sleeping between jobs. n_threads >= 1. */
tg_status tg_pool_create(tg_pool **out, int n_threads, tg_err *err);
void tg_pool_free(tg_pool *pool);
int tg_pool_size(const tg_pool *pool);

/* Runs fn(ctx, ith, nth) on nth workers (nth <= pool size; 1 runs inline on
 * the caller) and returns when all have finished. */
typedef void (*tg_task_fn)(void *ctx, int ith, int nth);
void tg_pool_run(tg_pool *pool, int nth, tg_task_fn fn, void *ctx);

/* Splits [0, n) into contiguous ranges aligned to `grain` items and runs
 * fn(ctx, i0, i1, ith) over them. `work` is the estimated cost of the whole
 * job in flops or bytes: below a threshold it stays on one thread, so that
 * two threads are never slower than one on small problems. */
typedef void (*tg_range_fn)(void *ctx, int i0, int i1, int ith);
void tg_parallel_for(tg_pool *pool, int n, int grain, double work,
                     tg_range_fn fn, void *ctx);

/* Time spent by workers waiting at the end-of-job barrier (ns, summed), for
 * the profiler; reset with tg_pool_reset_wait. */
uint64_t tg_pool_wait_ns(const tg_pool *pool);
void tg_pool_reset_wait(tg_pool *pool);

/* Y[T,OUT] = X · Wᵀ + b split over the pool by output columns. */
void tg_matmul(const tg_engine *e, tg_pool *pool, float *y, const float *x,
               const float *w, const float *b, int T, int in, int out);

/* Y[T,OUT] = X[T,IN] · Wᵀ + b for a typed weight (IN = w->cols, OUT =
 * w->rows), split over the pool by output columns. ws is caller scratch of
 * tg_matmul_ws(w->type, T, IN, tg_pool_size(pool)) bytes (any alignment;
 * NULL is fine when that is 0): the integer types' X quantized once, then
 * each worker's tg_matmul_w_scratch. F32 is exactly tg_matmul. */
void tg_matmul_w(const tg_engine *e, tg_pool *pool, float *y, const float *x,
                 const tg_weight *w, const float *b, int T, void *ws);
/* Scratch bytes tg_matmul_w needs for T rows of IN inputs of type t on
 * n_threads workers. */
size_t tg_matmul_ws(tg_wtype t, int T, int in, int n_threads);
/* Scratch bytes one call of tg_kernels.matmul_w needs for T rows of IN
 * inputs of type t, on any ISA's kernels (a bound over them all; 0 for F32
 * and for T == 1). */
size_t tg_matmul_w_scratch(tg_wtype t, int T, int in);
/* For kernels: the next `bytes` of scratch at *p (64-byte aligned when *p
 * is), *p moved past them rounded up to 64. */
static inline void *tg_ws_take(char **p, size_t bytes) {
    void *r = *p;
    *p += (bytes + 63) / 64 * 64;
    return r;
}
/* For kernels: Y[T, o0..o1) = b (0 without b), rows out apart: a matmul
 * over zero inputs (an empty sum). */
static inline void tg_bias_rows(float *y, const float *b, int T, int out, int o0, int o1) {
    for (int t = 0; t < T; t++)
        for (int o = o0; o < o1; o++) y[(size_t)t * out + o] = b ? b[o] : 0.0f;
}

#endif
