/*
 * state.c — the daemon's one state, `fs` (struct flamefs_state in
 * daemon-internal.h): the store handle, the series list, the synthetic
 * directories, the spaces, the render cache, the open files and the
 * invalidation queue, all guarded by fs.lock.  It is defined apart so that
 * every file of the daemon can use it without depending on flamefs.c.
 */
#include "daemon-internal.h"

struct flamefs_state fs = {
        .lock = PTHREAD_MUTEX_INITIALIZER,
        .inval_cond = PTHREAD_COND_INITIALIZER,
        .inval_tail = &fs.inval_head,
};
