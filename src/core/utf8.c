#include "core/utf8.h"

#include <stdint.h>
#include <string.h>

bool utf8_valid_text(const char *str, size_t len)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;
    while (i < len) {
        /* names are mostly ASCII: eight bytes at a time while none has its top bit set and
         * none is NUL */
        while (len - i >= 8) {
            uint64_t w;
            memcpy(&w, s + i, sizeof w);
            uint64_t high = 0x8080808080808080ull;
            if ((w & high) != 0 || ((w - 0x0101010101010101ull) & ~w & high) != 0)
                break;
            i += 8;
        }
        /* the rest byte by byte, up to the next byte that is not ASCII (or is NUL) */
        while (i < len && (unsigned)s[i] - 1u < 0x7Fu)
            i++;
        if (i >= len)
            break;
        unsigned c = s[i];
        if (c == 0)
            return false;
        /* Table 3-7 of the Unicode Standard: the well-formed byte sequences. */
        size_t n;
        unsigned lo = 0x80, hi = 0xBF;
        if (c >= 0xC2 && c <= 0xDF) {
            n = 1;
        } else if (c >= 0xE0 && c <= 0xEF) {
            n = 2;
            if (c == 0xE0)
                lo = 0xA0; /* no overlong forms */
            else if (c == 0xED)
                hi = 0x9F; /* no surrogates */
        } else if (c >= 0xF0 && c <= 0xF4) {
            n = 3;
            if (c == 0xF0)
                lo = 0x90;
            else if (c == 0xF4)
                hi = 0x8F; /* nothing past U+10FFFF */
        } else {
            return false;
        }
        if (len - i <= n)
            return false;
        if (s[i + 1] < lo || s[i + 1] > hi)
            return false;
        for (size_t k = 2; k <= n; k++)
            if (s[i + k] < 0x80 || s[i + k] > 0xBF)
                return false;
        i += n + 1;
    }
    return true;
}

enum { ESC_TEXT, ESC_BACKSLASH, ESC_HEX };

static int hex_value(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Only backslashes start escapes (and JSON allows them only in strings), so the scan jumps
 * from one backslash to the next with memchr: it costs little on plans with few escapes. */
size_t json_escapes_feed(json_escape_scan *s, const char *buf, size_t len)
{
    size_t i = 0;
    while (i < len) {
        unsigned char c = (unsigned char)buf[i];
        switch (s->state) {
        case ESC_TEXT: {
            if (s->pending_high) {
                if (c != '\\')
                    return i; /* a high surrogate not followed by an escape */
                s->state = ESC_BACKSLASH;
                i++;
                break;
            }
            const char *b = memchr(buf + i, '\\', len - i);
            if (!b)
                return SIZE_MAX;
            i = (size_t)(b - buf) + 1;
            s->state = ESC_BACKSLASH;
            break;
        }
        case ESC_BACKSLASH:
            if (c == 'u') {
                s->state = ESC_HEX;
                s->hex_left = 4;
                s->code = 0;
            } else {
                if (s->pending_high)
                    return i; /* a high surrogate followed by another escape */
                s->state = ESC_TEXT;
            }
            i++;
            break;
        case ESC_HEX: {
            int v = hex_value(c);
            if (v < 0) { /* not JSON: the parser will say so */
                s->state = ESC_TEXT;
                s->pending_high = 0;
                break;
            }
            i++;
            s->code = s->code * 16 + (unsigned)v;
            if (--s->hex_left > 0)
                break;
            s->state = ESC_TEXT;
            bool high = s->code >= 0xD800 && s->code <= 0xDBFF;
            bool low = s->code >= 0xDC00 && s->code <= 0xDFFF;
            if (s->pending_high != low)
                return i - 1; /* a low surrogate alone, or a high one not followed by a low */
            s->pending_high = high;
            break;
        }
        }
    }
    return SIZE_MAX;
}

void utf8_trim_partial(char *s)
{
    size_t len = strlen(s);
    size_t i = len, cont = 0;
    while (i > 0 && cont < 4 && ((unsigned char)s[i - 1] & 0xC0) == 0x80) {
        i--;
        cont++;
    }
    if (i == 0)
        return;
    unsigned char lead = (unsigned char)s[i - 1];
    size_t need = lead >= 0xF0 ? 3 : lead >= 0xE0 ? 2 : lead >= 0xC0 ? 1 : 0;
    if (need > cont)
        s[i - 1] = '\0'; /* the last character lost its tail */
}
