/* utf8: strict UTF-8 validation (RFC 3629). yajl's own check lets overlong forms, UTF-16
 * surrogates and code points past U+10FFFF through; every string tlsan takes in is checked
 * here, so that every string it writes out is valid UTF-8 too. */
#ifndef TLSAN_UTF8_H
#define TLSAN_UTF8_H

#include <stdbool.h>
#include <stddef.h>

/* True when the len bytes at s are well-formed UTF-8 with no NUL character. */
bool utf8_valid_text(const char *s, size_t len);

#endif
