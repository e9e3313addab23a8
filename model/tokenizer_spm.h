/* tokenizer_spm.h — SentencePiece-style BPE, behind tg_tokenizer
 * (model/tokenizer.h dispatches here for a TG_VOCAB_SPM vocabulary; nothing
 * else includes this header).
 *
 * Encoding follows llama2.c's `encode`: a dummy-prefix space before the
 * text (not before an empty one), the text cut into UTF-8 characters (a
 * lead or ASCII byte and up to 3 continuation bytes after it, not
 * validated), each character looked up as a piece, and a character with no
 * piece becomes its bytes' <0xXX> tokens (looked up by piece; <unk> when a
 * byte has none). Then, repeatedly, the adjacent pair whose concatenation
 * is a piece with the highest score (above -1e10; the leftmost on a tie)
 * merges. Pieces are matched with ▁ read as a space; control and unused
 * tokens never match text, and a <0xXX> token made by byte fallback never
 * merges. BOS/EOS are flags.
 *
 * Decoding: ▁ is a space, a <0xXX> piece its byte, a control token (<s>,
 * </s>) nothing; the space the encoder put first is dropped from the piece
 * after BOS (llama2.c's rule) and at the start of a decoded sequence.
 */
#ifndef TINYGPT_MODEL_TOKENIZER_SPM_H
#define TINYGPT_MODEL_TOKENIZER_SPM_H

#include <stddef.h>

#include "engine/status.h"
#include "weights/vocab.h"

typedef struct tg_spm tg_spm;

tg_status tg_spm_create(tg_spm **out, const tg_vocab *v, tg_err *err);
void tg_spm_free(tg_spm *s);

int tg_spm_bos(const tg_spm *s);
int tg_spm_eos(const tg_spm *s);
int tg_spm_is_special(const tg_spm *s, int id);
int tg_spm_token_id(const tg_spm *s, const char *piece);
/* flags: TG_ENCODE_* of model/tokenizer.h */
tg_status tg_spm_encode(tg_spm *s, const char *text, size_t len, int flags, int **ids,
                        size_t *n_ids, tg_err *err);
/* The bytes of token id when it follows prev (-1: none known). */
const char *tg_spm_piece(const tg_spm *s, int prev, int id, size_t *len);
tg_status tg_spm_decode(const tg_spm *s, const int *ids, size_t n, char **out, size_t *len,
                        tg_err *err);

#endif
