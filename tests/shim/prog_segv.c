/* prog_segv: programs of their own SIGSEGV, run natively and under the shim (segv.sh). The
 * shim installs a SIGSEGV handler of its own once it guards a page (a sampled block, a large
 * freed block); the program must not see it, and its own handler must still get its faults.
 * Every mode first makes the shim guard pages (a large block freed, many small blocks: with
 * sample_rate=1 each is sampled), then prints what it observed. */
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static void *volatile sink;
static sigjmp_buf jump;
static volatile sig_atomic_t faults;

static void guard_pages(void)
{
    /* Through a volatile pointer: the compiler may drop a free(malloc(n)) pair. */
    sink = malloc(1 << 20);
    free(sink); /* a large freed block: its pages guarded in quarantine */
    for (int i = 0; i < 64; i++) {
        sink = malloc(24 + (size_t)i); /* sampled blocks, with sample_rate=1 */
        free(sink);
    }
}

static const char *disposition(void (*h)(int))
{
    return h == SIG_DFL ? "SIG_DFL" : h == SIG_IGN ? "SIG_IGN" : "a handler";
}

static void on_fault(int sig, siginfo_t *si, void *uc)
{
    (void)sig, (void)si, (void)uc;
    faults++;
    siglongjmp(jump, 1);
}

static void on_fault_plain(int sig)
{
    (void)sig;
    faults++;
    siglongjmp(jump, 1);
}

/* Touches p; 1 when it could, 0 when it faulted (the program's handler jumped back). */
static int probe(volatile char *p)
{
    if (sigsetjmp(jump, 1))
        return 0;
    *p = 1;
    return 1;
}

/* What a runtime such as Rust's asks before installing its own handler: the disposition. */
static void query(void)
{
    guard_pages();
    struct sigaction cur;
    sigaction(SIGSEGV, NULL, &cur);
    printf("sigaction: %s, flags %#x\n", disposition(cur.sa_handler), (unsigned)cur.sa_flags);
    void (*was)(int) = signal(SIGSEGV, on_fault_plain);
    printf("signal returned %s\n", disposition(was));
    sigaction(SIGSEGV, NULL, &cur);
    printf("now: %s\n", cur.sa_handler == on_fault_plain ? "the program's" : "another");
    was = signal(SIGSEGV, SIG_DFL);
    printf("signal returned %s\n", was == on_fault_plain ? "the program's" : "another");
}

/* A program that probes memory with its own handler, installed after the shim's (`late`)
 * or before: each fault reaches it, each access that works works. */
static void probes(int late)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO;
    if (!late)
        sigaction(SIGSEGV, &sa, NULL);
    guard_pages();
    if (late)
        sigaction(SIGSEGV, &sa, NULL);
    long page = sysconf(_SC_PAGESIZE);
    char *m =
        mmap(NULL, 4 * (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    mprotect(m + page, (size_t)page, PROT_NONE);
    mprotect(m + 3 * page, (size_t)page, PROT_READ);
    for (int i = 0; i < 4; i++)
        printf("%d", probe(m + i * page));
    int null = probe((volatile char *)16);
    printf(" %d faults, null %d\n", (int)faults, null);
}

/* SA_RESETHAND: called once, then the default; the handler installs itself again. */
static void resethand(void)
{
    guard_pages();
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO | SA_RESETHAND;
    sigaction(SIGSEGV, &sa, NULL);
    int first = probe((volatile char *)16);
    struct sigaction cur;
    sigaction(SIGSEGV, NULL, &cur);
    printf("after one fault: %s\n", disposition(cur.sa_handler));
    sigaction(SIGSEGV, &sa, NULL);
    int second = probe((volatile char *)16);
    printf("probes %d %d, %d faults\n", first, second, (int)faults);
}

/* A buggy program with a crash handler of its own, installed after the shim's: a write after
 * free of a (sampled) block is still the shim's to report; natively it goes unnoticed. */
static void late_handler_uaf(void)
{
    guard_pages();
    char *p = malloc(40);
    sink = p;
    signal(SIGSEGV, on_fault_plain);
    free(p);
    if (!sigsetjmp(jump, 1))
        ((volatile char *)sink)[3] = 7; /* late-handler-uaf: written */
    printf("%d faults seen by the program\n", (int)faults);
}

int main(int argc, char **argv)
{
    const char *m = argc > 1 ? argv[1] : "";
    if (strcmp(m, "query") == 0)
        query();
    else if (strcmp(m, "probe-early") == 0)
        probes(0);
    else if (strcmp(m, "probe-late") == 0)
        probes(1);
    else if (strcmp(m, "resethand") == 0)
        resethand();
    else if (strcmp(m, "late-handler-uaf") == 0)
        late_handler_uaf();
    else if (strcmp(m, "die") == 0) {
        guard_pages();
        fflush(stdout);
        *(volatile int *)16 = 1; /* the default action: killed by SIGSEGV */
    } else {
        fprintf(stderr, "usage: prog_segv query|probe-early|probe-late|resethand|"
                        "late-handler-uaf|die\n");
        return 2;
    }
    return 0;
}
