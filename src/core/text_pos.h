/* text_pos: positions in a text input, for error messages. One rule for every reader (plan
 * JSON, TVM graphs): lines count from 1 at each '\n', columns count characters from 1, where a
 * character is one UTF-8 sequence (so a name in Greek or a CJK comment moves the column by one
 * per character, as an editor shows it), not bytes. */
#ifndef TLSAN_CORE_TEXT_POS_H
#define TLSAN_CORE_TEXT_POS_H

#include <stddef.h>

typedef struct text_pos {
    int line, column; /* 1-based */
} text_pos;

#define TEXT_POS_START ((text_pos){1, 1})

/* The position after the n bytes at p, read from `at`. */
text_pos text_pos_advance(text_pos at, const char *p, size_t n);

/* Where a parser that stopped after consuming n bytes of p (read from `at`) found its error:
 * the last character that is not blank among them (the offending token, or its end), or the
 * position after them when all are blank. */
text_pos text_pos_of_error(text_pos at, const char *p, size_t n);

#endif
