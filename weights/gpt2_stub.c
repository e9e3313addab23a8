/* gpt2_stub.c — placeholder until the GGUF reader lands (issue #3). */
#include <string.h>

#include "weights/gpt2.h"

tg_status tg_gpt2_load(tg_gpt2_model *m, const char *path, int vocab_only, tg_err *err) {
    (void)vocab_only;
    memset(m, 0, sizeof *m);
    return tg_fail(err, TG_ERR_UNSUPPORTED, "%s: model loading is not implemented yet", path);
}
void tg_gpt2_free(tg_gpt2_model *m) { (void)m; }
