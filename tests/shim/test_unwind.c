/* unwind: the descriptor-free validated read answers readable, unmapped, PROT_NONE and NULL
 * addresses right (both ways: process_vm_readv and the rt_sigprocmask probe) and leaves errno
 * alone; unwind_setup leaves no descriptor open that was not open before (libunwind's pipe is
 * closed), and stacks are still captured afterwards, without a descriptor appearing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "depot.h"
#include "shim.h"
#include "unwind.h"

/* The open descriptors below 4096, as a bit set of the first 4096 numbers. */
static void open_fds(unsigned char set[512])
{
    memset(set, 0, 512);
    char path[64], target[256];
    for (int fd = 0; fd < 4096; fd++) {
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
        if (readlink(path, target, sizeof target) >= 0)
            set[fd / 8] |= (unsigned char)(1u << (fd % 8));
    }
}

static void reads(bool (*read_word)(uintptr_t, uint64_t *))
{
    uint64_t word = 0x1122334455667788u, got = 0;
    errno = 1234;
    assert_true(read_word((uintptr_t)&word, &got));
    assert_int_equal(got, 0x1122334455667788u);
    assert_int_equal(errno, 1234);
    assert_false(read_word(0, &got));
    assert_false(read_word(8, &got));
    assert_int_equal(errno, 1234);

    long page = sysconf(_SC_PAGESIZE);
    unsigned char *m =
        mmap(NULL, (size_t)page * 3, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(m != MAP_FAILED);
    memset(m, 0xab, (size_t)page * 3);
    assert_int_equal(mprotect(m + page, (size_t)page, PROT_NONE), 0);
    assert_int_equal(munmap(m + 2 * page, (size_t)page), 0);
    got = 0;
    assert_true(read_word((uintptr_t)m + (uintptr_t)page - 8, &got));
    assert_int_equal(got, 0xababababababababu);
    assert_false(read_word((uintptr_t)m + (uintptr_t)page - 4, &got)); /* straddles PROT_NONE */
    assert_false(read_word((uintptr_t)m + (uintptr_t)page, &got));     /* PROT_NONE */
    assert_false(read_word((uintptr_t)m + 2 * (uintptr_t)page, &got)); /* unmapped */
    assert_int_equal(errno, 1234);
    munmap(m, (size_t)page * 2);
}

static void read_word_vm(void **state)
{
    (void)state;
    reads(unwind_read_word);
}

static void read_word_probe(void **state)
{
    (void)state;
    reads(unwind_probe_word);
    /* The probe never changes the signal mask. */
    sigset_t before, after;
    sigemptyset(&before);
    sigemptyset(&after);
    sigprocmask(SIG_SETMASK, NULL, &before);
    uint64_t v, all = ~(uint64_t)0;
    assert_true(unwind_probe_word((uintptr_t)&all, &v));
    sigprocmask(SIG_SETMASK, NULL, &after);
    for (int s = 1; s < 65; s++)
        assert_int_equal(sigismember(&before, s), sigismember(&after, s));
}

static __attribute__((noinline)) uint32_t capture_here(void)
{
    uint32_t id = depot_capture(0);
    __asm__ volatile("" : "+r"(id)::"memory");
    return id;
}

static void setup_holds_no_fd(void **state)
{
    (void)state;
    shim_opts_mut()->stack_depth = 16;
    unsigned char before[512], after[512];
    open_fds(before);
    assert_true(unwind_setup());
    assert_true(unwind_setup()); /* once only */
    open_fds(after);
    assert_memory_equal(before, after, sizeof before);
    const uintptr_t *frames;
    uint32_t id = capture_here();
    assert_true(depot_get(id, &frames) >= 2); /* this test and cmocka's runner at least */
    open_fds(after);
    assert_memory_equal(before, after, sizeof before);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(read_word_vm),
        cmocka_unit_test(read_word_probe),
        cmocka_unit_test(setup_holds_no_fd),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
