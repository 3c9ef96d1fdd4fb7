/* run: `tlsan run [--trace FILE] [--options KEY=VALUE:...] -- CMD ARGS...` runs a program
 * with libtlsan.so preloaded, lets its reports go to standard error as they happen, then
 * reads the run's trace and prints a summary. Exit status: the `exitcode` option (default 1)
 * when the run reported anything, else the program's own status (128 + N when signal N
 * killed it); 2 for bad usage or when the shim or the program cannot be started. */
#ifndef TLSAN_RUN_H
#define TLSAN_RUN_H

/* argv holds what follows "run" (the shim is found from /proc/self/exe). */
int run_command(int argc, char **argv);

#endif
