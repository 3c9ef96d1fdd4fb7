/* tracegen: hand-written traces for tests. */
#include "tracegen.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void tg_raw(tracegen *g, const void *p, size_t n)
{
    if (n == 0)
        return; /* an empty payload comes with a NULL buffer */
    if (g->n + n > g->cap) {
        size_t cap = g->cap ? g->cap : 256;
        while (cap < g->n + n)
            cap *= 2;
        g->buf = realloc(g->buf, cap);
        if (!g->buf)
            abort();
        g->cap = cap;
    }
    memcpy(g->buf + g->n, p, n);
    g->n += n;
}

static void put_u(tracegen *g, uint64_t v)
{
    unsigned char b[10];
    size_t n = 0;
    do {
        b[n] = v & 0x7f;
        v >>= 7;
        if (v)
            b[n] |= 0x80;
        n++;
    } while (v);
    tg_raw(g, b, n);
}

static void put_le(tracegen *g, uint64_t v, unsigned bytes)
{
    for (unsigned i = 0; i < bytes; i++) {
        unsigned char c = (unsigned char)(v >> (8 * i));
        tg_raw(g, &c, 1);
    }
}

void tg_header(tracegen *g, uint32_t pid)
{
    tg_raw(g, TRACE_MAGIC, TRACE_MAGIC_BYTES);
    put_le(g, TRACE_VERSION, 2);
    put_le(g, 8, 1);
    put_le(g, TRACE_LITTLE_ENDIAN, 1);
    put_le(g, TRACE_HEADER_BYTES, 4);
    put_le(g, pid, 4);
    put_le(g, 1, 4);
    put_le(g, 0, 8);
}

void tg_rec(tracegen *g, unsigned tag, const char *fmt, ...)
{
    tracegen payload = {0};
    va_list ap;
    va_start(ap, fmt);
    for (const char *f = fmt; *f; f++) {
        if (*f == 'u') {
            put_u(&payload, va_arg(ap, uint64_t));
        } else {
            const char *s = va_arg(ap, const char *);
            put_u(&payload, strlen(s));
            tg_raw(&payload, s, strlen(s));
        }
    }
    va_end(ap);
    unsigned char t = (unsigned char)tag;
    tg_raw(g, &t, 1);
    put_u(g, payload.n);
    tg_raw(g, payload.buf, payload.n);
    tg_free(&payload);
}

void tg_free(tracegen *g)
{
    free(g->buf);
    g->buf = NULL;
    g->n = g->cap = 0;
}
