/* prog_fork: many short-lived forked children, for run.sh to count what they leave behind.
 *
 * usage: prog_fork N clean|double
 *   Forks N children one after the other. Each allocates and frees a block; with `double`
 *   it frees it a second time (a double free under libtlsan.so). Every child then leaves by
 *   _exit(0), which skips the shim's exit handling, as a crashing or exec-failing child
 *   would. The parent waits for each, prints "fork N ok" and exits 0. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
#pragma GCC diagnostic ignored "-Wuse-after-free"
#endif

static void *volatile sink;

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 0;
    int twice = argc > 2 && strcmp(argv[2], "double") == 0;
    for (int i = 0; i < n; i++) {
        pid_t pid = fork();
        if (pid < 0) {
            perror("fork");
            return 1;
        }
        if (pid == 0) {
            sink = malloc(24);
            free(sink);
            if (twice)
                free(sink);
            _exit(0);
        }
        int status;
        if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            fprintf(stderr, "prog_fork: child %d failed (status %#x)\n", i, status);
            return 1;
        }
    }
    printf("fork %d ok\n", n);
    return 0;
}
