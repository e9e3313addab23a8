/* bpe_train.h — learn a GPT-2 style byte-level BPE vocabulary from a text.
 *
 * The text is cut into words by GPT-2's pre-tokenizer (model/tokenizer.h),
 * words are counted once, and merges are learned greedily: the adjacent pair
 * of symbols with the highest count over all words (each word weighted by
 * its frequency; "a a a" counts the pair (a, a) twice) becomes the next
 * merge, applied left to right in every word that has it. Ties go to the
 * pair with the smaller left id, then the smaller right id, so the result
 * depends only on the text and N.
 *
 * The vocabulary: ids 0..255 are the bytes (token i is byte i, written in
 * GPT-2's byte->unicode form), then one token per new merged string in merge
 * order, then "<|endoftext|>" (token_type 3, bos = eos) as the last id;
 * merges are "left right" in rank order; pre = "gpt-2". A merge whose
 * result spells an existing token reuses it, so n_tokens can be below
 * 256 + n_merges + 1, and a pair that comes back after its merge (through
 * such a reuse) is merged again but listed once. Training stops early when
 * no pair is left.
 */
#ifndef TINYGPT_MODEL_BPE_TRAIN_H
#define TINYGPT_MODEL_BPE_TRAIN_H

#include <stddef.h>

#include "engine/status.h"
#include "weights/gpt2.h"

/* Vocabulary sizes tg_bpe_train accepts: 256 bytes + <|endoftext|> at
 * least, and at most TG_BPE_MAX_VOCAB tokens. */
#define TG_BPE_MIN_VOCAB 257
#define TG_BPE_MAX_VOCAB (1 << 20)

/* Learns merges from text[len] until the vocabulary has n_vocab tokens (or
 * no pair is left) and fills *out (free it with tg_vocab_free). n_vocab
 * outside [TG_BPE_MIN_VOCAB, TG_BPE_MAX_VOCAB] is TG_ERR_RANGE. */
tg_status tg_bpe_train(const char *text, size_t len, int n_vocab, tg_vocab *out, tg_err *err);

#endif
