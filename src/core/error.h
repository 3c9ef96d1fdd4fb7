/* error: filling a tlsan_error (tlsan/plan.h) for the modules that refuse input. */
#ifndef TLSAN_ERROR_PRIV_H
#define TLSAN_ERROR_PRIV_H

#include "tlsan/plan.h"

/* An invalid input: a fixed `what` at a printf-formatted JSON path. Returns
 * TLSAN_ERR_INVALID; err may be NULL. */
tlsan_status error_fail(tlsan_error *err, const char *what, const char *where_fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* An invalid input: a fixed JSON path and a printf-formatted `what`. */
tlsan_status error_failf(tlsan_error *err, const char *where, const char *what_fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Any status with a fixed `what` and no place. Returns st. */
tlsan_status error_status(tlsan_error *err, tlsan_status st, const char *what);
/* TLSAN_ERR_NOMEM with "out of memory". */
tlsan_status error_nomem(tlsan_error *err);

#endif
