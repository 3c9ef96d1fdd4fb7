/* corpus: locations of the test corpora (see corpus.h). */
#include "support/corpus.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *corpus_own_cases(void)
{
    return TLSAN_SOURCE_DIR "/tests/cases";
}

const char *corpus_own_tvm(void)
{
    return TLSAN_SOURCE_DIR "/tests/tvm";
}

const char *corpus_shared_dir(void)
{
    const char *env = getenv("TLSAN_SHARED_DIR");
    return env && *env ? env : TLSAN_SHARED_DIR;
}

bool corpus_shared_sub(const char *sub, char *buf, size_t size)
{
    snprintf(buf, size, "%s/%s", corpus_shared_dir(), sub);
    DIR *d = opendir(buf);
    if (!d)
        return false;
    closedir(d);
    return true;
}

bool corpus_have_shared(const char *sub)
{
    char dir[1024];
    if (corpus_shared_sub(sub, dir, sizeof dir))
        return true;
    fprintf(stderr, "note: no shared corpus at %s; the additional check against it did not run\n",
            dir);
    return false;
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

size_t corpus_list_json(const char *dir, char ***names)
{
    *names = NULL;
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    size_t n = 0, cap = 0;
    char **v = NULL;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        size_t len = strlen(e->d_name);
        if (len < 6 || strcmp(e->d_name + len - 5, ".json") != 0)
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            char **nv = realloc(v, cap * sizeof *nv);
            assert_non_null(nv);
            v = nv;
        }
        v[n] = strdup(e->d_name);
        assert_non_null(v[n]);
        n++;
    }
    closedir(d);
    if (n)
        qsort(v, n, sizeof *v, cmp_name);
    *names = v;
    return n;
}

void corpus_free_list(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}
