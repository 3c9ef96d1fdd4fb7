/* prog_crash: an annotated run that dies mid-run. It places tensor b on the bytes of tensor
 * a while a is still to be read, runs the ops, then, before releasing anything, crashes
 * (segv: SIGSEGV) or is ended by the kernel with status 0 (exit: the exit_group system call
 * made directly: nothing in the process runs at its end, as when it is killed, whereas
 * libc's _exit lets the shim close the trace). Either way its trace ends without an END
 * record.
 *
 * usage: prog_crash segv|exit */
#include "tlsan/tlsan.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "segv";
    static float arena[256];
    tlsan_arena_create("a0", arena, sizeof arena);
    float *a = arena, *b = arena; /* the planner's mistake: b on a's bytes */
    tlsan_tensor_bind(arena, "a", a, 64 * sizeof(float), 0);
    const char *wa[] = {"a"}, *wb[] = {"b"}, *rb[] = {"a", "b"};
    tlsan_op_info op1 = {.name = "make_a", .writes = wa, .n_writes = 1};
    uint64_t k = tlsan_op_begin(&op1);
    for (int i = 0; i < 64; i++)
        a[i] = (float)i;
    tlsan_op_end(k);
    tlsan_tensor_bind(arena, "b", b, 64 * sizeof(float), 0);
    tlsan_op_info op2 = {.name = "make_b", .writes = wb, .n_writes = 1};
    k = tlsan_op_begin(&op2);
    for (int i = 0; i < 64; i++)
        b[i] = -1.0f;
    tlsan_op_end(k);
    tlsan_op_info op3 = {.name = "use_both", .reads = rb, .n_reads = 2};
    k = tlsan_op_begin(&op3);
    float sum = 0;
    for (int i = 0; i < 64; i++)
        sum += a[i] + b[i];
    tlsan_op_end(k);
    printf("sum %.1f\n", (double)sum);
    fflush(stdout);
    if (strcmp(mode, "exit") == 0)
        syscall(SYS_exit_group, 0);
    raise(SIGSEGV);
    return 0;
}
