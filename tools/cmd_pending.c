/* cmd_pending.c — commands whose issue is still open. Each one says so and
 * fails; an implemented command moves to its own tools/cmd_NAME.c. */
#include "tools/cli.h"

#define PENDING(fn, name, issue)                                                  \
    int fn(int argc, char **argv) {                                               \
        (void)argc;                                                               \
        (void)argv;                                                               \
        return cli_error(name, "not implemented yet (tracked in issue #%d)", issue); \
    }

