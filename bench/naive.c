/* tlsan_naive_check: the all-pairs baseline the checker is measured against.
 *
 *   tlsan_naive_check [--max-roots N] [--pairs] PLAN.json
 *
 * Reads the compact root list tlsan_gen_plan writes beside a plan (PLAN.json.roots: the
 * roots' arena, byte range and derived lifetime, from the generator's own derivation) and
 * compares every pair of roots with the seed rule: two roots conflict when they are in the
 * same arena, their byte ranges intersect and NOT (a.last_read < b.first_write ||
 * b.last_read < a.first_write). Only the pair loop is timed; parsing is not. It covers the
 * generator's plans only (one stream, no branches, loops or views of its own), which is
 * what makes it a fair baseline for the conflict search alone.
 *
 * Prints one line: "roots N pairs P conflicts C seconds S ns_per_pair X", and with --pairs
 * every conflicting pair ("a b", names in byte order) before it. Refuses plans of more than
 * --max-roots roots (default 100000): all pairs of 10^6 roots would take minutes.
 * Exit status: 0 done, 2 bad arguments or unreadable input, 3 refused as too large. */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct naive_root {
    uint64_t offset_bytes, end_bytes;
    int64_t first_write, last_read;
    int arena;
} naive_root;

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    uint64_t max_roots = 100000;
    bool print_pairs = false;
    const char *plan_path = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--pairs")) {
            print_pairs = true;
        } else if (!strcmp(argv[i], "--max-roots") && i + 1 < argc) {
            char *end;
            max_roots = strtoull(argv[++i], &end, 10);
            if (*end || argv[i][0] == '-') {
                fprintf(stderr, "tlsan_naive_check: bad --max-roots '%s'\n", argv[i]);
                return 2;
            }
        } else if (argv[i][0] != '-' && !plan_path) {
            plan_path = argv[i];
        } else {
            fputs("usage: tlsan_naive_check [--max-roots N] [--pairs] PLAN.json\n", stderr);
            return 2;
        }
    }
    if (!plan_path) {
        fputs("usage: tlsan_naive_check [--max-roots N] [--pairs] PLAN.json\n", stderr);
        return 2;
    }

    int status = 2;
    naive_root *roots = NULL;
    char(*names)[32] = NULL;
    uint32_t *hits = NULL;
    int64_t *arena = NULL, *first = NULL, *last = NULL;
    uint64_t *start = NULL, *end = NULL;
    size_t n_hits = 0, cap_hits = 0;
    size_t path_bytes = strlen(plan_path) + 8;
    char *roots_path = malloc(path_bytes);
    FILE *f = NULL;
    if (!roots_path)
        goto cleanup;
    snprintf(roots_path, path_bytes, "%s.roots", plan_path);
    f = fopen(roots_path, "r");
    if (!f) {
        fprintf(stderr, "tlsan_naive_check: cannot open %s (written by tlsan_gen_plan): %s\n",
                roots_path, strerror(errno));
        goto cleanup;
    }
    size_t n = 0, n_ops = 0;
    if (fscanf(f, "%zu %zu", &n, &n_ops) != 2) {
        fprintf(stderr, "tlsan_naive_check: %s:1: expected \"N_ROOTS N_OPS\"\n", roots_path);
        goto cleanup;
    }
    if (n > max_roots) {
        fprintf(stderr,
                "tlsan_naive_check: %zu roots is more than --max-roots %" PRIu64
                " (%.3g pairs); refused\n",
                n, max_roots, (double)n * (double)(n - 1) / 2);
        status = 3;
        goto cleanup;
    }
    roots = calloc(n ? n : 1, sizeof(*roots));
    names = calloc(n ? n : 1, sizeof(*names));
    arena = calloc(n ? n : 1, sizeof(*arena));
    first = calloc(n ? n : 1, sizeof(*first));
    last = calloc(n ? n : 1, sizeof(*last));
    start = calloc(n ? n : 1, sizeof(*start));
    end = calloc(n ? n : 1, sizeof(*end));
    if (!roots || !names || !arena || !first || !last || !start || !end) {
        fputs("tlsan_naive_check: out of memory\n", stderr);
        goto cleanup;
    }
    for (size_t i = 0; i < n; i++) {
        naive_root *r = &roots[i];
        uint64_t bytes;
        if (fscanf(f, "%31s %d %" SCNu64 " %" SCNu64 " %" SCNd64 " %" SCNd64, names[i], &r->arena,
                   &r->offset_bytes, &bytes, &r->first_write, &r->last_read) != 6) {
            fprintf(stderr, "tlsan_naive_check: %s:%zu: malformed root line\n", roots_path, i + 2);
            goto cleanup;
        }
        r->end_bytes = r->offset_bytes + bytes;
    }

    /* Struct of arrays and a branch-free test per pair: a fair baseline is a fast one, so
     * the ratio against the checker measures the algorithm, not a sloppy loop. */
    for (size_t i = 0; i < n; i++) {
        arena[i] = roots[i].arena;
        start[i] = roots[i].offset_bytes;
        end[i] = roots[i].end_bytes;
        first[i] = roots[i].first_write;
        last[i] = roots[i].last_read;
    }
    double t0 = now_seconds();
    for (size_t i = 0; i < n; i++) {
        const int64_t a_arena = arena[i], a_first = first[i], a_last = last[i];
        const uint64_t a_start = start[i], a_end = end[i];
        for (size_t j = i + 1; j < n; j++) {
            /* the seed rule, negated: lifetimes meet unless one ends before the other starts */
            int hit = (arena[j] == a_arena) & (start[j] < a_end) & (a_start < end[j]) &
                      !(a_last < first[j] || last[j] < a_first);
            if (!hit)
                continue;
            if (n_hits + 2 > cap_hits) {
                size_t new_cap = cap_hits ? cap_hits * 2 : 64;
                uint32_t *p = realloc(hits, new_cap * sizeof(*hits));
                if (!p) {
                    fputs("tlsan_naive_check: out of memory\n", stderr);
                    goto cleanup;
                }
                hits = p;
                cap_hits = new_cap;
            }
            hits[n_hits++] = (uint32_t)i;
            hits[n_hits++] = (uint32_t)j;
        }
    }
    double seconds = now_seconds() - t0;

    double n_pairs = (double)n * (double)(n ? n - 1 : 0) / 2;
    if (print_pairs) {
        for (size_t h = 0; h < n_hits; h += 2) {
            const char *a = names[hits[h]], *b = names[hits[h + 1]];
            if (strcmp(a, b) > 0) {
                const char *t = a;
                a = b;
                b = t;
            }
            printf("%s %s\n", a, b);
        }
    }
    printf("roots %zu pairs %.0f conflicts %zu seconds %.6f ns_per_pair %.3f\n", n, n_pairs,
           n_hits / 2, seconds, n_pairs > 0 ? seconds * 1e9 / n_pairs : 0.0);
    status = 0;
cleanup:
    if (f)
        fclose(f);
    free(roots_path);
    free(roots);
    free(names);
    free(hits);
    free(arena);
    free(first);
    free(last);
    free(start);
    free(end);
    return status;
}
