/* text_pos: see text_pos.h. */
#include "core/text_pos.h"

#include <stdbool.h>
#include <string.h>

/* A byte that continues a UTF-8 sequence (10xxxxxx) does not start a character. */
static bool starts_character(unsigned char c)
{
    return (c & 0xC0) != 0x80;
}

text_pos text_pos_advance(text_pos at, const char *p, size_t n)
{
    const char *end = p + n, *nl;
    while ((nl = memchr(p, '\n', (size_t)(end - p))) != NULL) {
        at.line++;
        at.column = 1;
        p = nl + 1;
    }
    for (; p < end; p++)
        if (starts_character((unsigned char)*p))
            at.column++;
    return at;
}

text_pos text_pos_of_error(text_pos at, const char *p, size_t n)
{
    text_pos last = at;
    bool found = false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c == '\n') {
            at.line++;
            at.column = 1;
            continue;
        }
        if (!starts_character(c))
            continue;
        if (c != ' ' && c != '\t' && c != '\r') {
            last = at;
            found = true;
        }
        at.column++;
    }
    return found ? last : at;
}
