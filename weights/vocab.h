/* vocab.h — a tokenizer vocabulary as the files store it, for the two
 * algorithms tinygpt runs (model/tokenizer.h):
 *
 *  - TG_VOCAB_GPT2: GPT-2 byte-level BPE. Token strings use GPT-2's
 *    byte→unicode mapping (UTF-8 encoded), merges[] ranked by index
 *    (tokenizer.ggml.model = gpt2; vocab.json + merges.txt; a byte-level
 *    tokenizer.json such as SmolLM's).
 *  - TG_VOCAB_SPM: SentencePiece-style BPE. Pieces spell a space as ▁
 *    (U+2581), bytes without a piece of their own are <0xXX> tokens (byte
 *    fallback), merges are chosen by score (higher first), no merge list
 *    (tokenizer.ggml.model = llama; llama2.c's tokenizer.bin; a Llama
 *    tokenizer.json, whose merge ranks become scores).
 *
 * Readers validate every count, length and id against the bytes really
 * there and fail with a one-line TG_ERR_FORMAT naming the file and the
 * place. A zeroed struct plus tg_vocab_init is an empty GPT-2 vocabulary.
 */
#ifndef TINYGPT_WEIGHTS_VOCAB_H
#define TINYGPT_WEIGHTS_VOCAB_H

#include <stddef.h>
#include <stdint.h>

#include "engine/status.h"

typedef enum tg_vocab_kind {
    TG_VOCAB_GPT2 = 0, /* byte-level BPE, merges by rank */
    TG_VOCAB_SPM = 1,  /* SentencePiece-style BPE, merges by score, byte fallback */
} tg_vocab_kind;

/* Token types (llama.cpp's llama_token_type / SentencePiece's piece types). */
enum {
    TG_TOKEN_UNDEFINED = 0,
    TG_TOKEN_NORMAL = 1,
    TG_TOKEN_UNKNOWN = 2,      /* <unk> */
    TG_TOKEN_CONTROL = 3,      /* <s>, </s>, <|endoftext|>: no text of their own */
    TG_TOKEN_USER_DEFINED = 4,
    TG_TOKEN_UNUSED = 5,
    TG_TOKEN_BYTE = 6,         /* <0xXX>: one raw byte (byte fallback) */
};

typedef struct tg_vocab {
    int n_tokens;
    char **tokens;        /* [n_tokens], NUL-terminated */
    int32_t *token_type;  /* [n_tokens] TG_TOKEN_* or NULL (all normal) */
    int n_merges;
    char **merges;        /* [n_merges] "left right", rank = index (GPT-2 only) */
    int bos_id, eos_id;   /* -1 if absent */
    char *pre;            /* tokenizer.ggml.pre, or NULL */
    /* ---- additions (issue #11: SentencePiece-style vocabularies) ---- */
    int kind;             /* tg_vocab_kind; 0 = TG_VOCAB_GPT2 */
    float *scores;        /* [n_tokens] merge priority, higher merges first; NULL: all 0 */
    int unk_id, pad_id;   /* -1 if absent (read for TG_VOCAB_SPM; a zeroed GPT-2
                             vocabulary may leave 0 here: ignored for GPT-2) */
    int add_bos, add_eos; /* encoding a prompt prepends BOS / appends EOS */
    int max_token_length; /* longest piece in bytes as the file declares it, 0 if unknown */
} tg_vocab;

/* An empty vocabulary: everything NULL/0, bos/eos/unk/pad -1. */
void tg_vocab_init(tg_vocab *v);

/* Frees a vocabulary's strings and arrays (not the struct), leaving it
 * empty (as tg_vocab_init). Declared again in weights/gpt2.h. */
void tg_vocab_free(tg_vocab *v);

/* The byte-fallback tokens: ids[b] = the id of the TG_VOCAB_SPM piece
 * "<0xXX>" for byte b (looked up by piece, typed BYTE or not; the first
 * such piece wins), or -1. Returns how many of the 256 were found. */
int tg_vocab_byte_ids(const tg_vocab *v, int ids[256]);

struct tg_gguf;
struct tg_gguf_writer;

/* tokenizer.ggml.* of a GGUF file -> v, for tokenizer.ggml.model = gpt2
 * (tokens, token_type, merges, bos/eos, pre) or llama (tokens, scores,
 * token_type, bos/eos/unknown/padding ids, add_bos_token, add_eos_token;
 * llama.cpp's defaults bos 1, eos 2, unk 0, add_bos true when a key is
 * absent). A file without tokenizer.ggml.model gives an empty vocabulary
 * (n_tokens 0) and TG_OK; any other model is TG_ERR_UNSUPPORTED. `where`
 * names the file in errors. On failure v is left empty. */
tg_status tg_vocab_from_gguf(tg_vocab *v, const struct tg_gguf *g, const char *where,
                             tg_err *err);

/* Adds v's tokenizer.ggml.* keys to a GGUF writer in llama.cpp's
 * conventions: gpt2 (model, pre, tokens, token_type, merges, bos/eos) or
 * llama (model, tokens, scores, token_type, bos/eos/unknown/padding ids,
 * add_bos_token, add_eos_token), so llama.cpp runs the file. */
tg_status tg_vocab_to_gguf(struct tg_gguf_writer *gw, const tg_vocab *v, tg_err *err);

/* llama2.c's tokenizer.bin: int32 max_token_length, then per token a
 * float32 score, an int32 length and that many bytes, to the end of the
 * file. The file does not say how many tokens it holds; n_expect > 0 is the
 * count the caller's model expects (reading stops there, and fewer is an
 * error), 0 reads to the end of the file (bytes left over that do not
 * form a whole token are an error). Pieces come back SentencePiece-style:
 * llama2.c's export wrote ▁ as a space and BOS/EOS as "\n<s>\n" /
 * "\n</s>\n"; they become ▁, "<s>" and "</s>" again. Ids follow llama2.c:
 * 0 <unk>, 1 BOS, 2 EOS (when those pieces are there), add_bos 1; token
 * types are inferred (<unk> unknown, <s> </s> control, <0xXX> byte). */
tg_status tg_vocab_load_llama2c(tg_vocab *v, const char *path, int n_expect, tg_err *err);
/* The same over bytes in memory (`name` appears in errors; fuzzing). */
tg_status tg_vocab_parse_llama2c(tg_vocab *v, const void *buf, size_t len, int n_expect,
                                 const char *name, tg_err *err);

/* A Hugging Face tokenizer.json (parsed with cJSON): model.type BPE. With
 * byte_fallback or ▁ pieces (Llama, TinyLlama, Mistral) it becomes a
 * TG_VOCAB_SPM vocabulary whose scores are -rank of the merge that makes
 * each piece (so "highest score first" is "lowest rank first"); a
 * byte-level one (a ByteLevel pre-tokenizer or decoder: GPT-2, SmolLM)
 * becomes TG_VOCAB_GPT2 with its merges. added_tokens are typed control
 * (special) or user-defined; bos/eos come from the added tokens named
 * <s>, </s>, <|endoftext|>, <|im_start|>, <|im_end|> when present. */
tg_status tg_vocab_load_hf_json(tg_vocab *v, const char *path, tg_err *err);
tg_status tg_vocab_parse_hf_json(tg_vocab *v, const char *json, size_t len, const char *name,
                                 tg_err *err);

/* Any vocabulary file or folder, by inspecting it: a GGUF file (its
 * tokenizer), a tokenizer.json, a Hugging Face folder (tokenizer.json, else
 * vocab.json + merges.txt), or else a llama2.c tokenizer.bin. */
tg_status tg_vocab_load(tg_vocab *v, const char *path, tg_err *err);

#endif
