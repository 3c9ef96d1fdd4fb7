/* utf8: strict UTF-8 validation (RFC 3629). yajl's own check lets overlong forms, UTF-16
 * surrogates and code points past U+10FFFF through; every string tlsan takes in is checked
 * here, so that every string it writes out is valid UTF-8 too. */
#ifndef TLSAN_UTF8_H
#define TLSAN_UTF8_H

#include <stdbool.h>
#include <stddef.h>

/* True when the len bytes at s are well-formed UTF-8 with no NUL character. */
bool utf8_valid_text(const char *s, size_t len);

/* Cuts a NUL-terminated string before a multi-byte character that a fixed-size buffer
 * left incomplete at its end (snprintf truncates by bytes). */
void utf8_trim_partial(char *s);

/* JSON \u escapes must pair UTF-16 surrogates correctly: a high surrogate (D800-DBFF)
 * followed at once by a low one (DC00-DFFF), and no low one alone. yajl 2.1 turns a lone
 * or misordered surrogate into '?' or into another character, so two different names
 * could become one; the raw text is scanned before yajl sees it. The scanner keeps its
 * state across chunks. */
typedef struct json_escape_scan {
    unsigned char state; /* in text, after a backslash, or in the hex digits of an escape */
    unsigned char hex_left;
    unsigned char pending_high; /* a high surrogate waits for its low half */
    unsigned code;
} json_escape_scan;

/* Scans len more bytes; returns the offset in this chunk of the byte that completes a bad
 * escape (or ends the string while a high surrogate waits), or SIZE_MAX when all is well.
 * Bytes that are no valid JSON are left to the parser. */
size_t json_escapes_feed(json_escape_scan *s, const char *buf, size_t len);

#endif
