/* Tests of text positions (src/core/text_pos.c): columns count UTF-8 characters, lines
 * restart them, an error sits on the last non-blank character read. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "core/text_pos.h"

static void assert_pos(text_pos got, int line, int column)
{
    assert_int_equal(got.line, line);
    assert_int_equal(got.column, column);
}

static void test_advance_counts_characters(void **state)
{
    (void)state;
    const char *ascii = "abc";
    assert_pos(text_pos_advance(TEXT_POS_START, ascii, 3), 1, 4);
    const char *greek = "\xce\xb1\xce\xb2"; /* two characters, four bytes */
    assert_pos(text_pos_advance(TEXT_POS_START, greek, 4), 1, 3);
    const char *lines = "ab\n\xe6\xbc\xa2x\n";
    assert_pos(text_pos_advance(TEXT_POS_START, lines, 6), 2, 2);
    assert_pos(text_pos_advance(TEXT_POS_START, lines, 7), 2, 3);
    assert_pos(text_pos_advance(TEXT_POS_START, lines, strlen(lines)), 3, 1);
    /* from a position other than the start, and in pieces: the same as in one go */
    text_pos half = text_pos_advance(TEXT_POS_START, lines, 4); /* inside the CJK character */
    assert_pos(text_pos_advance(half, lines + 4, 2), 2, 2);
    assert_pos(text_pos_advance((text_pos){7, 9}, "xy", 2), 7, 11);
}

static void test_error_on_last_token_character(void **state)
{
    (void)state;
    const char *text = "[1 x  ";
    assert_pos(text_pos_of_error(TEXT_POS_START, text, 4), 1, 4);
    assert_pos(text_pos_of_error(TEXT_POS_START, text, 6), 1, 4);    /* blanks after it */
    assert_pos(text_pos_of_error(TEXT_POS_START, "  \n ", 4), 2, 2); /* all blank */
    assert_pos(text_pos_of_error(TEXT_POS_START, "\xce\xb1\xce\xb2!", 5), 1, 3);
    assert_pos(text_pos_of_error(TEXT_POS_START, "a\n\tb", 4), 2, 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_advance_counts_characters),
        cmocka_unit_test(test_error_on_last_token_character),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
