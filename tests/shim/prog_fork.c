/* prog_fork: many short-lived forked children, for run.sh to count what they leave behind.
 *
 * usage: prog_fork N clean|double
 *   Forks N children one after the other. Each allocates and frees a block. With `clean`
 *   it then leaves by _exit(0), as a child that has nothing more to do. With `double` it
 *   frees the block a second time (a double free under libtlsan.so) and dies of SIGKILL, as
 *   a crashing or killed child would: no exit handling of the shim's runs, so its trace is
 *   left as it was when it died. The parent waits for each, checks that it ended so, prints
 *   "fork N ok" and exits 0. */
#include <signal.h>
#include <stdbool.h>
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
            if (!twice)
                _exit(0);
            free(sink);
            kill(getpid(), SIGKILL);
            _exit(1); /* not reached */
        }
        int status;
        if (waitpid(pid, &status, 0) != pid) {
            perror("waitpid");
            return 1;
        }
        bool ended_so = twice ? WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL
                              : WIFEXITED(status) && WEXITSTATUS(status) == 0;
        if (!ended_so) {
            fprintf(stderr, "prog_fork: child %d failed (status %#x)\n", i, status);
            return 1;
        }
    }
    printf("fork %d ok\n", n);
    return 0;
}
