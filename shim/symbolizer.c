/* symbolizer.c - in-process symbolization at report time (symbolizer.h). */
#include "symbolizer.h"

#include "depot.h"
#include "lock.h"
#include "modules.h"
#include "out.h"
#include "replay/symbolize_libdw.h"
#include "shim.h"
#include "symheap.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <stdbool.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

/* The most frames of a symbolized stack (inlined ones included). */
#define REPORT_STACK_FRAMES 128

enum { LIBDW_UNTRIED, LIBDW_READY, LIBDW_MISSING };

static shim_lock g_lock = SHIM_LOCK_INIT;
static int g_state = LIBDW_UNTRIED;  /* under the lock */
static struct symbolize_libdw g_api; /* found in libdw.so.1 */
static symbolizer *g_sym;            /* its sessions live as long as the process */
static __thread int t_busy __attribute__((tls_model("initial-exec"))); /* inside libdw */

/* libdwfl keeps each module file and debug file open for as long as it holds the module (the
 * symbolizer keeps them all, or every report would read the debug info again: 45 ms a report
 * with glibc's). Those descriptors are moved where the program's open() does not reach, close
 * on exec, as the trace's (out_fd_park): the shim opens the module files itself, and the
 * debug files libdwfl finds come back through this wrapper of its search. */
static __typeof__(dwfl_report_elf) *g_real_report_elf;
static __typeof__(dwfl_standard_find_debuginfo) *g_real_find_debuginfo;

static int park(int fd)
{
    struct out_fd_id id;
    return fd < 0 ? fd : out_fd_park(fd, &id);
}

static Dwfl_Module *report_elf_parked(Dwfl *dwfl, const char *name, const char *file_name, int fd,
                                      GElf_Addr base, bool add_p_vaddr)
{
    if (fd < 0 && (fd = park(open(file_name, O_RDONLY | O_CLOEXEC))) < 0)
        return NULL;
    return g_real_report_elf(dwfl, name, file_name, fd, base, add_p_vaddr);
}

static int find_debuginfo_parked(Dwfl_Module *mod, void **userdata, const char *module_name,
                                 Dwarf_Addr base, const char *file_name, const char *debuglink_file,
                                 GElf_Word debuglink_crc, char **debuginfo_file_name)
{
    return park(g_real_find_debuginfo(mod, userdata, module_name, base, file_name, debuglink_file,
                                      debuglink_crc, debuginfo_file_name));
}

/* Loads libdw and makes the symbolizer, once. Lock held, inside a symheap section: dlopen's
 * own allocations (the loader keeps them) and libdw's go to the symbolizer's heap. */
static void load_locked(void)
{
    g_state = LIBDW_MISSING;
    void *dw = dlopen("libdw.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!dw) {
        if (shim_opts()->verbosity >= 1)
            out_printf("tlsan: symbolize: cannot load libdw.so.1 (%s); frames keep "
                       "module+offset\n",
                       dlerror());
        return;
    }
#define FIND(field, name)                                                                          \
    if (!(g_api.field = (__typeof__(name) *)dlsym(dw, #name))) {                                   \
        out_printf("tlsan: symbolize: libdw.so.1 has no %s; frames keep module+offset\n", #name);  \
        return;                                                                                    \
    }
    SYMBOLIZE_LIBDW_FUNCTIONS(FIND)
#undef FIND
    g_real_report_elf = g_api.report_elf;
    g_real_find_debuginfo = g_api.standard_find_debuginfo;
    g_api.report_elf = report_elf_parked;
    g_api.standard_find_debuginfo = find_debuginfo_parked;
    g_sym = symbolizer_create_with(&g_api);
    if (g_sym)
        g_state = LIBDW_READY;
}

/* The symbolizer runs on a stack of its own. libdw's line tables and dlopen need some 170
 * KiB of stack, and a report may be made on a thread with a small stack or on a signal
 * stack of 16 or 64 KiB (sigaltstack): there it once went past the stack's end, into the
 * guard page (SIGSEGV instead of the report) or, past it, into the program's memory. One
 * stack serves every thread: it is used under g_lock only. Mapped at the first
 * symbolization, with a guard page below; if that fails, the caller's stack is used. */
#define SYM_STACK_BYTES ((size_t)1 << 20)

static struct {
    unsigned char *stack; /* SYM_STACK_BYTES, above its guard page */
    bool tried;
    ucontext_t caller, callee;
    /* the call made on it */
    const symbol_raw_frame *raw;
    size_t n_raw, max, n;
    bool exact_first;
} g_run; /* under g_lock */

static symbol_stack_frame g_frames[REPORT_STACK_FRAMES]; /* under g_lock */

/* Loads libdw when not tried yet and symbolizes g_run's frames into g_frames. Lock held.
 * On the symbolizer's stack, its return goes back to g_run.caller (uc_link). */
static void symbolize_locked(void)
{
    if (g_state == LIBDW_UNTRIED)
        load_locked();
    g_run.n = symbolizer_stack_frames(g_state == LIBDW_READY ? g_sym : NULL, g_run.raw, g_run.n_raw,
                                      g_run.exact_first, g_frames, g_run.max);
}

/* symbolize_locked, on the symbolizer's stack when it can be had. Lock held. */
static void symbolize_switched(void)
{
    if (!g_run.tried) {
        g_run.tried = true;
        size_t page = (size_t)sysconf(_SC_PAGESIZE);
        void *m = mmap(NULL, SYM_STACK_BYTES + page, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
        if (m != MAP_FAILED) {
            mprotect(m, page, PROT_NONE); /* the guard: an overflow faults */
            g_run.stack = (unsigned char *)m + page;
        }
    }
    if (!g_run.stack || getcontext(&g_run.callee) != 0) {
        symbolize_locked();
        return;
    }
    g_run.callee.uc_stack.ss_sp = g_run.stack;
    g_run.callee.uc_stack.ss_size = SYM_STACK_BYTES;
    g_run.callee.uc_link = &g_run.caller;
    makecontext(&g_run.callee, symbolize_locked, 0);
    if (swapcontext(&g_run.caller, &g_run.callee) != 0)
        symbolize_locked();
}

size_t symbolizer_stack(uint32_t stack_id, bool exact_first, struct shim_frame *out, size_t max)
{
    const uintptr_t *pcs;
    unsigned n_pcs = depot_get(stack_id, &pcs);
    symbol_raw_frame raw[DEPOT_MAX_FRAMES];
    const struct shim_module *mods[DEPOT_MAX_FRAMES];
    for (unsigned i = 0; i < n_pcs && i < DEPOT_MAX_FRAMES; i++) {
        /* A return address may be the first byte after a call at the end of a function
         * (noreturn callees): the module is the one of the byte before it. */
        uintptr_t pc = pcs[i], call = i == 0 && exact_first ? pc : pc - (pc > 0);
        mods[i] = modules_find(call);
        raw[i] = mods[i] ? (symbol_raw_frame){mods[i]->path, mods[i]->base, pc - mods[i]->base}
                         : (symbol_raw_frame){NULL, 0, pc};
    }
    /* libdw runs on the symbolizer's heap; t_busy keeps a report made from inside it (a
     * broken free in libdw) from symbolizing again. */
    bool symbolize = shim_opts()->symbolize && !t_busy && symheap_enter();
    if (max > REPORT_STACK_FRAMES)
        max = REPORT_STACK_FRAMES;
    size_t n = 0;
    if (symbolize) {
        t_busy = 1;
        shim_lock_take(&g_lock);
        g_run.raw = raw;
        g_run.n_raw = n_pcs;
        g_run.exact_first = exact_first;
        g_run.max = max;
        symbolize_switched();
        n = g_run.n;
        for (size_t i = 0; i < n; i++) {
            const symbol_raw_frame *r = &raw[g_frames[i].raw];
            out[i] = (struct shim_frame){pcs[g_frames[i].raw], r->module_path,
                                         r->module_path ? r->offset : 0, g_frames[i].sym};
        }
        shim_lock_drop(&g_lock);
        t_busy = 0;
        symheap_leave();
        return n;
    }
    /* Nothing looked up: one frame each, on the caller's stack (a few hundred bytes). */
    symbol_stack_frame frames[DEPOT_MAX_FRAMES];
    if (max > DEPOT_MAX_FRAMES)
        max = DEPOT_MAX_FRAMES;
    n = symbolizer_stack_frames(NULL, raw, n_pcs, exact_first, frames, max);
    for (size_t i = 0; i < n; i++) {
        const symbol_raw_frame *r = &raw[frames[i].raw];
        out[i] = (struct shim_frame){pcs[frames[i].raw], r->module_path,
                                     r->module_path ? r->offset : 0, frames[i].sym};
    }
    return n;
}

void symbolizer_lock(void)
{
    shim_lock_take(&g_lock);
}

void symbolizer_unlock(void)
{
    shim_lock_drop(&g_lock);
}

void symbolizer_reinit_in_child(void)
{
    shim_lock_reset(&g_lock);
    t_busy = 0;
}
