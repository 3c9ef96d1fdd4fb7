/* main.c - the engine's command line: builds the graph, plans it, writes the plan (and hands
 * it to tlsan), runs it and prints the outputs bit-exactly.
 *
 *   engine [--exec seq|pool] [--inject BUG] [--use-bias] [--dump FILE] [--no-plan]
 *          [--emit-plan FILE] [--layout] [--seq S] [--hidden H] [--repeat N]
 */
#include "exec.h"
#include "graph.h"
#include "plan_json.h"
#include "planner.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f, "usage: engine [--exec seq|pool] [--inject BUG] [--use-bias] [--dump FILE]\n"
               "              [--no-plan] [--emit-plan FILE] [--layout]\n"
               "              [--seq S] [--hidden H] [--repeat N]\n"
               "  --exec       executor: seq (default) or pool (two streams; the default for\n"
               "               missing-event and stale-async-write, which need it)\n"
               "  --inject     plant one bug:");
    for (int b = 0; b < BUG_COUNT_; b++)
        fprintf(f, " %s", bug_names[b]);
    fprintf(f, "\n  --use-bias   take the branch arm \"bias\" (default: \"proj\")\n"
               "  --dump FILE  write the raw bytes of the outputs y, conf, kv_cache to FILE\n"
               "  --no-plan    do not hand the plan to tlsan (tlsan_plan_load)\n"
               "  --emit-plan FILE  write the plan JSON to FILE ('-': stdout) and exit\n"
               "  --layout     print the planner's layout (offsets, lifetimes) first\n"
               "  --seq S      tokens (default 8); --hidden H: features (default 32, even)\n"
               "  --repeat N   run the graph N times in the same arenas (default 1)\n");
}

static uint64_t fnv1a(const void *p, size_t n)
{
    const unsigned char *c = p;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ c[i]) * 1099511628211ull;
    return h;
}

static void print_output(const char *name, const float *v, size_t bytes)
{
    size_t n = bytes / sizeof(float);
    printf("%s: %zu floats, fnv1a64 %016llx, first:", name, n, (unsigned long long)fnv1a(v, bytes));
    for (size_t i = 0; i < n && i < 4; i++) {
        uint32_t bits;
        memcpy(&bits, &v[i], sizeof(bits));
        printf(" %08x", bits);
    }
    printf("\n");
}

/* The planner's decisions, one root a line (--layout). */
static void print_layout(const struct graph *g)
{
    printf("%-10s %-7s %6s %6s %5s %5s %s\n", "root", "arena", "offset", "bytes", "first", "free",
           "notes");
    for (int i = 0; i < g->nt; i++) {
        const struct tensor *t = &g->t[i];
        if (t->view_of >= 0 || t->arena == ARENA_WEIGHTS)
            continue;
        printf("%-10s %-7s %6zu %6zu %5d %5d%s%s%s\n", t->name, arena_names[t->arena], t->offset,
               t->bytes, t->first, t->free_step, t->per_iter ? " per-iteration" : "",
               t->inplace_of >= 0 ? " in-place over " : "",
               t->inplace_of >= 0 ? g->t[t->inplace_of].name : "");
    }
    for (int s = 0; s < g->nops; s++)
        printf("step %2d %-10s%s\n", s, g->ops[s].name, g->ops[s].dropped ? " (dropped)" : "");
}

static int write_file(const char *path, const void *p, size_t n)
{
    FILE *f = strcmp(path, "-") ? fopen(path, "wb") : stdout;
    if (!f) {
        perror(path);
        return -1;
    }
    int ok = fwrite(p, 1, n, f) == n;
    if (f != stdout)
        ok &= fclose(f) == 0;
    else
        ok &= fflush(f) == 0;
    if (!ok)
        perror(path);
    return ok ? 0 : -1;
}

int main(int argc, char **argv)
{
    int exec_given = 0, use_bias = 0, no_plan = 0, layout = 0;
    long seq = DEFAULT_SEQ, hid = DEFAULT_HID, repeat = 1;
    enum exec_mode mode = EXEC_SEQ;
    enum bug bug = BUG_NONE;
    const char *dump = NULL, *emit = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--exec") && val) {
            if (!strcmp(val, "seq"))
                mode = EXEC_SEQ;
            else if (!strcmp(val, "pool"))
                mode = EXEC_POOL;
            else
                goto bad;
            exec_given = 1;
            i++;
        } else if (!strcmp(a, "--inject") && val) {
            int found = 0;
            for (int b = 0; b < BUG_COUNT_; b++)
                if (!strcmp(val, bug_names[b])) {
                    bug = (enum bug)b;
                    found = 1;
                }
            if (!found)
                goto bad;
            i++;
        } else if (!strcmp(a, "--dump") && val) {
            dump = argv[++i];
        } else if (!strcmp(a, "--emit-plan") && val) {
            emit = argv[++i];
        } else if (!strcmp(a, "--use-bias")) {
            use_bias = 1;
        } else if ((!strcmp(a, "--seq") || !strcmp(a, "--hidden") || !strcmp(a, "--repeat")) &&
                   val) {
            char *end;
            long v = strtol(val, &end, 10);
            if (*end || v < 1 || v > 1000000)
                goto bad;
            *(a[2] == 's' ? &seq : a[2] == 'h' ? &hid : &repeat) = v;
            i++;
        } else if (!strcmp(a, "--layout")) {
            layout = 1;
        } else if (!strcmp(a, "--no-plan")) {
            no_plan = 1;
        } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else {
            goto bad;
        }
    }
    int needs_pool = bug == BUG_MISSING_EVENT || bug == BUG_STALE_ASYNC_WRITE;
    if (hid % HEADS) {
        fprintf(stderr, "engine: --hidden must be a multiple of %d\n", HEADS);
        return 2;
    }
    if (needs_pool && !exec_given)
        mode = EXEC_POOL;
    if (needs_pool && mode != EXEC_POOL) {
        fprintf(stderr, "engine: --inject %s needs --exec pool\n", bug_names[bug]);
        return 2;
    }

    static struct graph g;
    graph_build(&g, mode, bug, use_bias, (int)seq, (int)hid);
    planner_run(&g);
    if (layout)
        print_layout(&g);
    size_t len = 0;
    char *plan = plan_json(&g, &len);
    if (!plan) {
        fprintf(stderr, "engine: out of memory\n");
        return 3;
    }
    if (emit) {
        int rc = write_file(emit, plan, len);
        free(plan);
        return rc ? 3 : 0;
    }
    struct runtime *rt = exec_setup(&g, no_plan ? NULL : plan, len);
    free(plan);
    if (!rt) {
        fprintf(stderr, "engine: out of memory\n");
        return 3;
    }
    static const char *const outputs[] = {"y", "conf", "kv_cache"};
    enum { NOUT = sizeof(outputs) / sizeof(outputs[0]) };
    uint64_t first_hash[NOUT] = {0};
    int rc = 0;
    for (long run = 0; run < repeat && !rc; run++) {
        if (exec_run(rt)) {
            fprintf(stderr, "engine: the executor failed\n");
            rc = 3;
            break;
        }
        for (int i = 0; i < NOUT; i++) {
            size_t bytes = 0;
            const float *v = exec_tensor(rt, outputs[i], &bytes);
            uint64_t hsh = fnv1a(v, bytes);
            if (run == 0)
                first_hash[i] = hsh;
            else if (hsh != first_hash[i])
                fprintf(stderr, "engine: run %ld: %s differs from run 1\n", run + 1, outputs[i]);
        }
        if (run + 1 < repeat)
            exec_end_run(rt);
    }
    if (rc) {
        exec_teardown(rt);
        return rc;
    }
    printf("engine: exec %s, inject %s, arm %s, seq %ld, hidden %ld, runs %ld\n",
           mode == EXEC_POOL ? "pool" : "seq", bug_names[bug], use_bias ? "bias" : "proj", seq, hid,
           repeat);
    FILE *df = NULL;
    if (dump && !(df = fopen(dump, "wb")))
        perror(dump);
    for (int i = 0; i < NOUT; i++) {
        size_t bytes = 0;
        const float *v = exec_tensor(rt, outputs[i], &bytes);
        print_output(outputs[i], v, bytes);
        if (df && fwrite(v, 1, bytes, df) != bytes)
            rc = 3;
    }
    if (df && fclose(df))
        rc = 3;
    if (dump && (!df || rc)) {
        fprintf(stderr, "engine: could not write %s\n", dump);
        rc = 3;
    }
    fflush(stdout);
    exec_teardown(rt);
    return rc;
bad:
    usage(stderr);
    return 2;
}
