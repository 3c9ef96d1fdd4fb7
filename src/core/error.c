#include "core/error.h"

#include "core/utf8.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

tlsan_status error_fail(tlsan_error *err, const char *what, const char *where_fmt, ...)
{
    if (err) {
        memset(err, 0, sizeof *err);
        va_list ap;
        va_start(ap, where_fmt);
        vsnprintf(err->where, sizeof err->where, where_fmt, ap);
        va_end(ap);
        snprintf(err->what, sizeof err->what, "%s", what);
        utf8_trim_partial(err->where);
        utf8_trim_partial(err->what);
    }
    return TLSAN_ERR_INVALID;
}

tlsan_status error_failf(tlsan_error *err, const char *where, const char *what_fmt, ...)
{
    if (err) {
        memset(err, 0, sizeof *err);
        snprintf(err->where, sizeof err->where, "%s", where);
        va_list ap;
        va_start(ap, what_fmt);
        vsnprintf(err->what, sizeof err->what, what_fmt, ap);
        va_end(ap);
        utf8_trim_partial(err->where);
        utf8_trim_partial(err->what);
    }
    return TLSAN_ERR_INVALID;
}

tlsan_status error_status(tlsan_error *err, tlsan_status st, const char *what)
{
    if (err) {
        memset(err, 0, sizeof *err);
        snprintf(err->what, sizeof err->what, "%s", what);
    }
    return st;
}

tlsan_status error_nomem(tlsan_error *err)
{
    return error_status(err, TLSAN_ERR_NOMEM, "out of memory");
}
