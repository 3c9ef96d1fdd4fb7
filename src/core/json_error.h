/* json_error: the one wording of a JSON syntax error, for every reader of JSON (plan files,
 * TVM graphs, plan-cache keys). yajl says "lexical error: invalid char in json text.\n" or
 * "parse error: premature EOF\n"; tlsan says "invalid char in json text" after its own prefix
 * ("malformed JSON: ..."), the same whichever reader met it. Positions: core/text_pos.h. */
#ifndef TLSAN_CORE_JSON_ERROR_H
#define TLSAN_CORE_JSON_ERROR_H

#include <stddef.h>
#include <yajl/yajl_parse.h>

/* Writes yajl's message for the error h stopped at into buf (buf_bytes, NUL-terminated, cut
 * if longer), without yajl's "lexical error: "/"parse error: " prefix and trailing blanks and
 * dots; "the text ends before the JSON value is complete" for yajl's "premature EOF";
 * "syntax error" when yajl has no message. Allocates and frees yajl's message. */
void json_syntax_message(yajl_handle h, char *buf, size_t buf_bytes);

#endif
