/* tokenizer.h — text bytes <-> token ids, for either vocabulary kind of
 * weights/vocab.h: GPT-2 byte-level BPE (below) or SentencePiece-style BPE
 * (TG_VOCAB_SPM: llama2.c's semantics, described in model/tokenizer_spm.h).
 * tg_tokenizer_create picks the algorithm from the vocabulary's kind; every
 * function here works on both.
 *
 * Encoding: the text is cut into pre-tokens by GPT-2's regex (run with
 * PCRE2, JIT, UTF + UCP), each pre-token's bytes start as one symbol per
 * byte and adjacent symbols merge by rank (lowest first, all occurrences of
 * that pair left to right, exactly like OpenAI's encoder.py), then each
 * symbol is looked up in the vocabulary. Any byte sequence encodes,
 * including invalid UTF-8 (bytes the regex cannot match form pre-tokens of
 * their own), and decode(encode(x)) == x byte for byte.
 *
 * A tg_tokenizer owns a copy of everything it needs from the tg_vocab, a
 * word cache and scratch space: one tokenizer per thread (encode mutates
 * it); no global state.
 */
#ifndef TINYGPT_MODEL_TOKENIZER_H
#define TINYGPT_MODEL_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "engine/status.h"
#include "weights/gpt2.h"

/* GPT-2's pre-tokenizer pattern in PCRE2 syntax:
 *   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 * with \s spelled out as Unicode's White_Space property, which is what
 * OpenAI's encoder.py (the `regex` module), tiktoken, Hugging Face and
 * llama.cpp use. PCRE2's own \s under UCP also matches U+180E; the npm
 * gpt-3-encoder's JS \s misses U+0085 and adds U+FEFF. \p{L} and \p{N}
 * come from PCRE2's tables (Debian's 10.42: Unicode 14), so a letter or
 * digit assigned later (e.g. CJK Extension H, U+31350..U+323AF) counts as
 * punctuation here and can split differently from a reference with newer
 * tables (Python's regex 2022: Unicode 15; node 20: newer). */
#define TG_GPT2_WS "\\t-\\r\\x{20}\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}"
#define TG_GPT2_PRETOK_PATTERN                                                            \
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^" TG_GPT2_WS "\\p{L}\\p{N}]+|[" TG_GPT2_WS \
    "]+(?![^" TG_GPT2_WS "])|[" TG_GPT2_WS "]+"

/* GPT-2's byte -> unicode mapping (bytes_to_unicode in encoder.py): the code
 * point that stands for byte b in vocabulary strings, and the inverse
 * (-1 for a code point that stands for no byte). */
uint32_t tg_gpt2_byte_to_cp(uint8_t b);
int tg_gpt2_cp_to_byte(uint32_t cp);
/* Writes the UTF-8 form of byte b's code point to out (1 or 2 bytes, plus a
 * NUL) and returns its length. */
int tg_gpt2_byte_to_utf8(uint8_t b, char out[3]);

/* ---- pre-tokenizer (also used by the BPE trainer) ---- */

typedef struct tg_pretok tg_pretok;

tg_status tg_pretok_create(tg_pretok **out, tg_err *err);
void tg_pretok_free(tg_pretok *p);

/* Calls fn(user, word, n) for every pre-token of text[len], in order; the
 * pre-tokens tile the text exactly (no byte skipped or repeated). A
 * non-TG_OK return from fn stops the split and is returned. */
typedef tg_status (*tg_pretok_fn)(void *user, const char *word, size_t n, tg_err *err);
tg_status tg_pretok_split(tg_pretok *p, const char *text, size_t len, tg_pretok_fn fn,
                          void *user, tg_err *err);

/* ---- tokenizer ---- */

typedef struct tg_tokenizer tg_tokenizer;

/* Builds a tokenizer from a vocabulary. For TG_VOCAB_SPM, see
 * tokenizer_spm.h (no merge list; scores; <0xXX> byte fallback). For GPT-2:
 * requires a token for each of the 256 byte symbols. A merge "a b" whose a, b or ab is not in the vocabulary
 * can never produce a token and is ignored; a repeated merge keeps its
 * first (lowest) rank. Special tokens: token_type 3 (control) or 4 (user
 * defined), eos/bos, and any token spelled `<|endoftext|>`. */
tg_status tg_tokenizer_create(tg_tokenizer **out, const tg_vocab *vocab, tg_err *err);
void tg_tokenizer_free(tg_tokenizer *t);

int tg_tokenizer_n_vocab(const tg_tokenizer *t);
int tg_tokenizer_eos(const tg_tokenizer *t); /* -1 if none */
int tg_tokenizer_bos(const tg_tokenizer *t); /* -1 if none */
int tg_tokenizer_is_special(const tg_tokenizer *t, int id);
/* The id of the token whose vocabulary string is `s` (e.g. "<|endoftext|>",
 * "Ġthe"), or -1. */
int tg_tokenizer_token_id(const tg_tokenizer *t, const char *s);

/* Encodes text[len] and returns a malloc'd array of ids. A SentencePiece
 * vocabulary's BOS (EOS) comes first (last) when the vocabulary says so
 * (add_bos, add_eos: llama2.c's tokenizer.bin and Llama GGUFs add BOS);
 * GPT-2 vocabularies add nothing. Returns in *ids (free() it;
 * non-NULL even when *n_ids is 0). With parse_special, a special token's
 * text appearing literally (e.g. "<|endoftext|>") becomes that token's id,
 * as llama.cpp does with parse_special; without it, such text is ordinary
 * text, as in OpenAI's encoder.py and the npm gpt-3-encoder. */
tg_status tg_tokenizer_encode(tg_tokenizer *t, const char *text, size_t len, int parse_special,
                              int **ids, size_t *n_ids, tg_err *err);

/* ---- additions (issue #11: SentencePiece-style BPE) ---- */

/* Flags of tg_tokenizer_encode_ex. */
enum {
    TG_ENCODE_SPECIAL = 1, /* parse_special of tg_tokenizer_encode */
    TG_ENCODE_BOS = 2,     /* prepend BOS (if the vocabulary has one) */
    TG_ENCODE_EOS = 4,     /* append EOS (if the vocabulary has one) */
    TG_ENCODE_NO_PREFIX = 8, /* SentencePiece: no dummy-prefix space (the text goes on
                                from where the one before it ended) */
};
/* tg_tokenizer_encode with BOS/EOS chosen by the caller (e.g. a REPL's
 * later lines: no BOS). */
tg_status tg_tokenizer_encode_ex(tg_tokenizer *t, const char *text, size_t len, int flags,
                                 int **ids, size_t *n_ids, tg_err *err);
/* TG_VOCAB_GPT2 or TG_VOCAB_SPM. */
int tg_tokenizer_kind(const tg_tokenizer *t);
/* The flags tg_tokenizer_encode uses: TG_ENCODE_BOS / EOS when the
 * vocabulary adds them. */
int tg_tokenizer_default_flags(const tg_tokenizer *t);
/* The bytes token id adds to a text when it follows token prev (-1: the
 * first token, or unknown): tg_tokenizer_piece, except that a
 * SentencePiece piece right after BOS loses its leading space (the dummy
 * prefix; llama2.c's rule). For streaming. */
const char *tg_tokenizer_piece_after(const tg_tokenizer *t, int prev, int id, size_t *len);

/* The bytes token `id` decodes to (*len of them, then a NUL), or NULL if id
 * is out of range. Special tokens decode to their own text. */
const char *tg_tokenizer_piece(const tg_tokenizer *t, int id, size_t *len);

/* Decodes ids[n] into a malloc'd, NUL-terminated byte string (*out, *len
 * bytes before the NUL). An id outside [0, V) is TG_ERR_ARG. SentencePiece:
 * control tokens decode to nothing and the dummy-prefix space is dropped
 * (from the first token and from the one after BOS), so
 * decode(encode(x)) == x. */
tg_status tg_tokenizer_decode(const tg_tokenizer *t, const int *ids, size_t n, char **out,
                              size_t *len, tg_err *err);

/* Streaming: how many leading bytes of buf[n] can be printed now without
 * splitting a UTF-8 character. Only a trailing, still-completable prefix of
 * a multi-byte character (1-3 bytes) is held back; invalid bytes are never
 * held back (they will not become valid). */
size_t tg_utf8_complete(const char *buf, size_t n);

#endif
