/* json_error: see json_error.h. */
#include "core/json_error.h"

#include <stdio.h>
#include <string.h>

void json_syntax_message(yajl_handle h, char *buf, size_t buf_bytes)
{
    if (buf_bytes == 0)
        return;
    unsigned char *msg = yajl_get_error(h, 0, NULL, 0);
    const char *text = msg ? (const char *)msg : "";
    const char *colon = strstr(text, ": ");
    snprintf(buf, buf_bytes, "%s", colon ? colon + 2 : text);
    if (msg)
        yajl_free_error(h, msg);
    size_t n = strlen(buf);
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' ' || buf[n - 1] == '.'))
        buf[--n] = '\0';
    if (n == 0)
        snprintf(buf, buf_bytes, "syntax error");
    else if (strstr(buf, "premature EOF"))
        snprintf(buf, buf_bytes, "the text ends before the JSON value is complete");
}
