/* Tests of the ExecuTorch importer (src/import/executorch.c, src/import/executorch_fb.cc).
 *
 * Our own programs (the JSON files of tests/executorch, written as .pte by flatc at build time)
 * import to exactly the plans in its PROGRAM.plan.json files, which were checked by hand against
 * the mapping of docs/executorch.md: out-variant returns, scratch arguments, an elided view,
 * tensor lists, optional tensor lists, a delegate, a mutable buffer, several methods, moves,
 * jumps (if/else and a loop) and frees. Planted placements give exactly the right findings;
 * bad files are refused with the right message; every truncation and thousands of bit flips
 * of every program give a plan or a refusal, never a crash (this suite also runs under
 * ASan+UBSan). The real programs of ../shared/real/executorch are checked when present. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "import/executorch.h"
#include "tlsan/check.h"
#include "tlsan/executorch.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REAL_DIR   TLSAN_SHARED_DIR "/real/executorch"
#define GOLDEN_DIR TLSAN_SOURCE_DIR "/tests/executorch"

/* ---- helpers ---- */

static uint8_t *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    uint8_t *buf = NULL;
    size_t cap = 0, n = 0;
    for (;;) {
        if (n == cap) {
            cap = cap ? cap * 2 : 65536;
            buf = realloc(buf, cap);
            assert_non_null(buf);
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0)
            break;
    }
    fclose(f);
    *len = n;
    return buf;
}

static uint8_t *our_pte(const char *stem, size_t *len)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s.pte", TLSAN_TEST_PTE_DIR, stem);
    uint8_t *b = slurp(path, len);
    if (!b)
        fail_msg("cannot read %s (written by flatc at build time)", path);
    return b;
}

/* The plans as the importer writes them (import executorch -o). */
static char *plans_json(tlsan_plan **plans, size_t n)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    assert_int_equal(tlsan_executorch_write(plans, n, f, true), TLSAN_OK);
    fclose(f);
    return text;
}

typedef struct imported {
    tlsan_plan **plans;
    size_t n;
    tlsan_error err;
    tlsan_status st;
} imported;

static imported import_ex(const uint8_t *b, size_t len, const char *label, const char *method,
                          const et_import_options *opt)
{
    imported r = {0};
    r.st = et_import_buffer_ex(b, len, label, method, opt, &r.plans, &r.n, &r.err);
    return r;
}

/* The findings of one plan as "kind:t1,t2" lines, sorted by the checker's order. */
static char *findings_of(const tlsan_plan *plan)
{
    tlsan_report *rep = NULL;
    assert_int_equal(tlsan_check(plan, NULL, &rep), TLSAN_OK);
    char *out = calloc(1, 4096);
    assert_non_null(out);
    size_t at = 0;
    for (size_t i = 0; i < tlsan_report_count(rep); i++) {
        const tlsan_finding *f = tlsan_report_finding(rep, i);
        at += (size_t)snprintf(out + at, 4096 - at, "%s:", tlsan_kind_name(f->kind));
        for (size_t k = 0; k < f->n_tensors; k++)
            at += (size_t)snprintf(out + at, 4096 - at, "%s%s", k ? "," : "", f->tensors[k]);
        at += (size_t)snprintf(out + at, 4096 - at, "\n");
    }
    tlsan_report_free(rep);
    return out;
}

static void assert_golden(const char *stem, tlsan_plan **plans, size_t n)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s.plan.json", GOLDEN_DIR, stem);
    size_t len;
    char *want = (char *)slurp(path, &len);
    assert_non_null(want);
    want = realloc(want, len + 1);
    want[len] = '\0';
    char *got = plans_json(plans, n);
    if (strcmp(got, want) != 0) {
        fprintf(stderr, "imported plan of %s.pte:\n%s\n", stem, got);
        fail_msg("%s.pte does not import to %s", stem, path);
    }
    free(got);
    free(want);
}

/* ---- our own programs ---- */

static void tiny_imports_exactly(void **state)
{
    (void)state;
    size_t len;
    uint8_t *b = our_pte("tiny", &len);
    imported r = import_ex(b, len, "dir/tiny.pte", NULL, NULL);
    assert_int_equal(r.st, TLSAN_OK);
    assert_int_equal(r.n, 1);
    assert_string_equal(tlsan_plan_name(r.plans[0]), "tiny:forward");
    assert_golden("tiny", r.plans, r.n);
    char *f = findings_of(r.plans[0]);
    assert_string_equal(f, "");
    free(f);
    tlsan_executorch_plans_free(r.plans, r.n);
    free(b);
}

static void several_methods_are_several_plans(void **state)
{
    (void)state;
    size_t len;
    uint8_t *b = our_pte("multi", &len);
    imported r = import_ex(b, len, "multi.pte", NULL, NULL);
    assert_int_equal(r.st, TLSAN_OK);
    assert_int_equal(r.n, 2);
    assert_string_equal(tlsan_plan_name(r.plans[0]), "multi:encode");
    assert_string_equal(tlsan_plan_name(r.plans[1]), "multi:decode");
    assert_golden("multi", r.plans, r.n);
    char *f0 = findings_of(r.plans[0]), *f1 = findings_of(r.plans[1]);
    assert_string_equal(f0, "");
    assert_string_equal(f1, "live-overlap:v0,v2\n"); /* decode places its output on its input */
    free(f0);
    free(f1);

    /* The cache the importer writes reads back as two plans keyed by method. */
    char *text = plans_json(r.plans, r.n);
    tlsan_plan *plan = NULL;
    tlsan_cache *cache = NULL;
    tlsan_error err;
    assert_int_equal(tlsan_read_buffer(text, strlen(text), "multi.plan.json", &plan, &cache, &err),
                     TLSAN_OK);
    assert_null(plan);
    assert_int_equal(tlsan_cache_n_plans(cache), 2);
    tlsan_report *rep = NULL;
    assert_int_equal(tlsan_check_cache(cache, NULL, &rep), TLSAN_OK);
    assert_int_equal(tlsan_report_count(rep), 1);
    tlsan_report_free(rep);
    tlsan_cache_free(cache);
    free(text);
    tlsan_executorch_plans_free(r.plans, r.n);

    r = import_ex(b, len, "multi.pte", "decode", NULL);
    assert_int_equal(r.st, TLSAN_OK);
    assert_int_equal(r.n, 1);
    assert_string_equal(tlsan_plan_name(r.plans[0]), "multi:decode");
    tlsan_executorch_plans_free(r.plans, r.n);

    r = import_ex(b, len, "multi.pte", "forward", NULL);
    assert_int_equal(r.st, TLSAN_ERR_INVALID);
    assert_null(r.plans);
    assert_string_equal(r.err.what, "the program has no method 'forward' (it has: encode, decode)");
    assert_string_equal(r.err.file, "multi.pte");
    free(b);
}

static void control_flow(void **state)
{
    (void)state;
    size_t len;
    uint8_t *b = our_pte("flow", &len);
    imported r = import_ex(b, len, "flow.pte", NULL, NULL);
    assert_int_equal(r.st, TLSAN_OK);
    assert_int_equal(r.n, 2);
    assert_golden("flow", r.plans, r.n);
    /* Known approximation (docs/executorch.md): after both arms moved a tensor into v6, the
     * consumer reads both sources on every path, so each is read where its arm did not run
     * and, as they share bytes, they overlap at that step. */
    char *f0 = findings_of(r.plans[0]), *f1 = findings_of(r.plans[1]);
    assert_string_equal(f0, "live-overlap:v2,v3\nread-before-write:v2\nread-before-write:v3\n");
    assert_string_equal(f1, "");
    free(f0);
    free(f1);
    tlsan_executorch_plans_free(r.plans, r.n);
    free(b);
}

/* Planted placements in tiny.pte (see tiny.plan.json for the lifetimes: v4 1..2 with its
 * view v6, v8 2..3, v9 3..5, v14 4..5). */
static void planted_placements(void **state)
{
    (void)state;
    size_t len;
    uint8_t *b = our_pte("tiny", &len);
    static const struct {
        size_t value;
        uint32_t memory_id;
        uint64_t offset;
        const char *findings;
    } cases[] = {
        {14, 1, 64, "live-overlap:v9,v14\n"}, /* onto v9, live at 4..5 too */
        {8, 1, 0, "live-overlap:v4,v8\n"},    /* onto v4, whose view is read as v8 is written */
        {14, 1, 32, ""},                      /* onto v8, dead after step 3 */
        {13, 2, 0, "live-overlap:v13,v5\n"},  /* the input index onto the scratch buffer */
        {5, 2, 16, "live-overlap:v13,v5\n"},  /* the scratch buffer (bytes) onto it: no view */
        {12, 1, 160, "out-of-bounds:v12\n"},  /* past the end of mem1 */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        et_placement_override o = {0, cases[i].value, cases[i].memory_id, cases[i].offset};
        et_import_options opt = {&o, 1};
        imported r = import_ex(b, len, "tiny.pte", NULL, &opt);
        assert_int_equal(r.st, TLSAN_OK);
        char *f = findings_of(r.plans[0]);
        if (strcmp(f, cases[i].findings) != 0)
            fail_msg("v%zu at mem%u+%llu: findings '%s', want '%s'", cases[i].value,
                     cases[i].memory_id, (unsigned long long)cases[i].offset, f, cases[i].findings);
        free(f);
        tlsan_executorch_plans_free(r.plans, r.n);
    }
    /* A memory id without a planned buffer is refused, naming the field. */
    et_placement_override bad[] = {{0, 2, 3, 0}, {0, 2, 0, 0}};
    for (size_t i = 0; i < 2; i++) {
        et_import_options opt = {&bad[i], 1};
        imported r = import_ex(b, len, "tiny.pte", NULL, &opt);
        assert_int_equal(r.st, TLSAN_ERR_INVALID);
        assert_string_equal(r.err.where, "execution_plan[0].values[2].allocation_info");
        char want[200];
        snprintf(want, sizeof want,
                 "memory_id %u names no planned buffer (the method has 2: memory ids 1..2; 0 "
                 "is reserved)",
                 bad[i].memory_id);
        assert_string_equal(r.err.what, want);
    }
    /* An override of something that is no planned tensor is a caller error. */
    et_placement_override arg = {0, 1, 1, 0};
    et_import_options opt = {&arg, 1};
    imported r = import_ex(b, len, "tiny.pte", NULL, &opt);
    assert_int_equal(r.st, TLSAN_ERR_ARG);
    free(b);
}

static void bad_files_are_refused(void **state)
{
    (void)state;
    static const struct {
        const char *bytes;
        size_t len;
        const char *where, *what;
    } cases[] = {
        {"", 0, "", "not an ExecuTorch program: 0 bytes, too short for a FlatBuffer (at least 8)"},
        {"\x08\0\0\0ET13\0\0\0\0", 12, "",
         "not an ExecuTorch program: the FlatBuffer file identifier (bytes 4-7) is not \"ET12\""},
        {"\x08\0\0\0ET12eh00\x18\0\0\0", 16, "extended header",
         "truncated: the file ends inside the extended header (16 bytes)"},
        {"\x20\0\0\0ET12eh00\x18\0\0\0\x00\x01\0\0\0\0\0\0\0\0\0\0\0\0\0\0", 32, "extended header",
         "truncated: the program's FlatBuffer is 256 bytes, the file has 32"},
        {"\x20\0\0\0ET12eh00\x04\0\0\0\x00\x01\0\0\0\0\0\0\0\0\0\0\0\0\0\0", 32, "extended header",
         "damaged: its length 4 is not between 24 and the 24 bytes after the identifier"},
        {"\x0c\0\0\0ET12\0\0\0\0\xff\xff\xff\xff", 16, "",
         "the FlatBuffer does not verify against ExecuTorch's schema (an offset, length or "
         "string outside the file, misaligned, or nested too deep)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        imported r =
            import_ex((const uint8_t *)cases[i].bytes, cases[i].len, "bad.pte", NULL, NULL);
        assert_int_equal(r.st, TLSAN_ERR_INVALID);
        assert_null(r.plans);
        assert_int_equal(r.n, 0);
        assert_string_equal(r.err.file, "bad.pte");
        assert_string_equal(r.err.where, cases[i].where);
        assert_string_equal(r.err.what, cases[i].what);
    }
    tlsan_plan **plans = (tlsan_plan **)&plans;
    size_t n = 7;
    tlsan_error err;
    assert_int_equal(tlsan_import_executorch_file("/nonexistent/x.pte", NULL, &plans, &n, &err),
                     TLSAN_ERR_IO);
    assert_null(plans);
    assert_int_equal(n, 0);
    assert_string_equal(err.what, "cannot read: No such file or directory");
    assert_int_equal(tlsan_import_executorch_buffer(NULL, 1, NULL, NULL, &plans, &n, &err),
                     TLSAN_ERR_ARG);
}

/* ---- mutations: any bytes give a plan or a refusal ---- */

/* xorshift64*: a fixed sequence, so a failure can be replayed. */
static uint64_t next_random(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ull;
}

typedef struct mutation_counts {
    size_t refused, imported;
} mutation_counts;

/* Imports `len` bytes; a plan must then be checkable. */
static void import_any(const uint8_t *b, size_t len, const char *label, mutation_counts *mc)
{
    imported r = import_ex(b, len, label, NULL, NULL);
    if (r.st != TLSAN_OK && r.st != TLSAN_ERR_INVALID)
        fail_msg("%s (%zu bytes): status %d", label, len, (int)r.st);
    if (r.st == TLSAN_ERR_INVALID) {
        assert_true(r.err.what[0] != '\0');
        mc->refused++;
    } else {
        mc->imported++;
    }
    for (size_t i = 0; i < r.n; i++) {
        tlsan_report *rep = NULL;
        tlsan_check_options opt = {.max_paths = 64};
        assert_int_equal(tlsan_check(r.plans[i], &opt, &rep), TLSAN_OK);
        tlsan_report_free(rep);
    }
    tlsan_executorch_plans_free(r.plans, r.n);
}

/* Every truncation (or `max_cuts` evenly spread ones), then `flips` single-bit flips. */
static mutation_counts mutate(const uint8_t *b, size_t len, const char *label, size_t max_cuts,
                              size_t flips, uint64_t seed, mutation_counts *cuts)
{
    mutation_counts mc = {0};
    size_t step = len > max_cuts ? len / max_cuts : 1;
    for (size_t cut = 0; cut < len; cut += step)
        import_any(b, cut, label, cuts);
    uint8_t *m = malloc(len);
    assert_non_null(m);
    /* Flips land in the FlatBuffer: the extended header gives its size; the data segments
     * after it are not read. */
    size_t span = len;
    if (len >= 24 && memcmp(b + 8, "eh00", 4) == 0) {
        uint64_t program = 0;
        for (int k = 7; k >= 0; k--)
            program = program << 8 | b[16 + k];
        span = program < len ? (size_t)program : len;
    }
    for (size_t i = 0; i < flips && span; i++) {
        memcpy(m, b, len);
        size_t bit = (size_t)(next_random(&seed) % (span * 8));
        m[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        import_any(m, len, label, &mc);
    }
    free(m);
    return mc;
}

static void mutations_of_our_programs(void **state)
{
    (void)state;
    static const char *const stems[] = {"tiny", "multi", "flow"};
    for (size_t i = 0; i < 3; i++) {
        size_t len;
        uint8_t *b = our_pte(stems[i], &len);
        mutation_counts cuts = {0};
        mutation_counts flips =
            mutate(b, len, stems[i], SIZE_MAX, 3000, 0x9E3779B97F4A7C15ull + i, &cuts);
        printf("%s.pte: %zu truncations (%zu refused), 3000 bit flips (%zu refused, %zu "
               "imported)\n",
               stems[i], cuts.refused + cuts.imported, cuts.refused, flips.refused, flips.imported);
        /* flatc ends the buffer with padding, so only cuts into data must be refused: at
         * least every cut short of the last 8 bytes. */
        assert_true(cuts.refused + 8 >= len);
        free(b);
    }
}

/* ---- the real programs (../shared/real/executorch) ---- */

static int real_files(char names[][256], size_t max)
{
    DIR *d = opendir(REAL_DIR);
    if (!d)
        return -1;
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < max) {
        size_t l = strlen(e->d_name);
        if (l > 4 && strcmp(e->d_name + l - 4, ".pte") == 0)
            snprintf(names[n++], 256, "%s", e->d_name);
    }
    closedir(d);
    return (int)n;
}

static void real_programs(void **state)
{
    (void)state;
    char names[64][256];
    int n = real_files(names, 64);
    if (n < 0) {
        printf("SKIP: %s is absent (the shared corpus is not beside this clone)\n", REAL_DIR);
        skip();
    }
    assert_int_equal(n, 17); /* 16 programs and the damaged file */
    for (int i = 0; i < n; i++) {
        char path[600];
        snprintf(path, sizeof path, "%s/%s", REAL_DIR, names[i]);
        size_t len;
        uint8_t *b = slurp(path, &len);
        assert_non_null(b);
        bool corrupt = strstr(names[i], "corrupt") != NULL;
        imported r = import_ex(b, len, names[i], NULL, NULL);
        if (corrupt) {
            assert_int_equal(r.st, TLSAN_ERR_INVALID);
            assert_string_equal(r.err.what, "not an ExecuTorch program: the FlatBuffer file "
                                            "identifier (bytes 4-7) is not \"ET12\"");
        } else {
            if (r.st != TLSAN_OK)
                fail_msg("%s: %s: %s", names[i], r.err.where, r.err.what);
            assert_int_equal(r.n, 1);
            char *f = findings_of(r.plans[0]);
            if (f[0])
                fail_msg("%s has findings:\n%s", names[i], f);
            free(f);
        }
        tlsan_executorch_plans_free(r.plans, r.n);

        /* Programs with an extended header say how long they are: every truncation is
         * refused. The others end with FlatBuffers padding, which a cut may remove. */
        bool header = len >= 12 && memcmp(b + 8, "eh00", 4) == 0;
        mutation_counts cuts = {0};
        mutation_counts flips =
            mutate(b, len, names[i], 16384, 2000, 0xC0FFEEull + (uint64_t)i, &cuts);
        if (header && cuts.imported)
            fail_msg("%s: %zu truncations imported", names[i], cuts.imported);
        printf("%s: %zu truncations (%zu refused), 2000 bit flips (%zu refused, %zu imported)\n",
               names[i], cuts.refused + cuts.imported, cuts.refused, flips.refused, flips.imported);
        free(b);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(tiny_imports_exactly),
        cmocka_unit_test(several_methods_are_several_plans),
        cmocka_unit_test(control_flow),
        cmocka_unit_test(planted_placements),
        cmocka_unit_test(bad_files_are_refused),
        cmocka_unit_test(mutations_of_our_programs),
        cmocka_unit_test(real_programs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
