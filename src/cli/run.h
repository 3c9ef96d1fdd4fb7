/* run: `tlsan run [OPTIONS] -- CMD ARGS...` (its options: help.c's table)
 * runs a program with libtlsan.so preloaded, lets its reports go to standard error as they
 * happen, then reads the run's traces and prints a summary. Every process of the run (the
 * program and its descendants, wherever they run) writes its trace into the run directory:
 * DIR, or a new ${TMPDIR:-/tmp}/tlsan-run.XXXXXX, removed again when no process recorded
 * anything; the summary names it and counts the findings of every trace in it. With
 * --trace FILE the traces are FILE and FILE.PID beside it. Exit status: the program's own,
 * with the `exitcode` option (default 1) in place of a 0 when the run reported anything; a
 * program killed by a signal makes tlsan die of the same signal after its summary (this
 * function then does not return); 127 when there is no such program, 126 when it cannot be
 * executed; 2 for bad usage, a --trace-dir that already holds traces, when the shim cannot
 * be found or the program not waited for. */
#ifndef TLSAN_RUN_H
#define TLSAN_RUN_H

/* argv holds what follows "run" (the shim is found from /proc/self/exe). */
int run_command(int argc, char **argv);

#endif
