/* help: the text of `tlsan --help` and of each command's --help, printed from one table
 * (help.c) so that each command's usage lines, description and options are written once: the
 * overview shows the same usage lines its commands' --help show. */
#ifndef TLSAN_CLI_HELP_H
#define TLSAN_CLI_HELP_H

#include <stdio.h>

/* The exit status of bad usage (and of an invalid input), as plan-format.md gives it. */
enum { HELP_EXIT_USAGE = 2 };

/* Prints `tlsan COMMAND --help`: its usage lines, what it does, "Options:" with one entry per
 * option it takes, and its exit statuses. COMMAND is a first word after `tlsan`: check,
 * replay, view, import, export or run. Returns 0, or -1 (nothing printed) for a command the
 * table does not hold. */
int help_print_command(FILE *out, const char *command);

/* Prints `tlsan --help`: the usage lines of every command, what each does, and that each
 * command's --help lists its options. */
void help_print_overview(FILE *out);

/* Reports bad usage on standard error as one line, "tlsan: error: " then FMT with ARG (one
 * %s) and a hint at --help. Returns HELP_EXIT_USAGE. */
int help_usage_error(const char *fmt, const char *arg);

#endif
