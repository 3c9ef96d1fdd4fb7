/* prog_plan_load.c - hands the plan file argv[1] to tlsan_plan_load, as an engine hands its
 * plan to the shim; plan_text.sh compares the shim's reports with `tlsan check` of the same
 * file. Prints "prog_plan_load: N findings" (N from tlsan_plan_load) and exits 0; exit 2 when
 * the file cannot be read (under the shim, the exit status is 1 once findings were reported). */
#include "tlsan/tlsan.h"

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: prog_plan_load PLAN.json\n");
        return 2;
    }
    FILE *f = fopen(argv[1], "rb");
    if (!f) {
        perror(argv[1]);
        return 2;
    }
    char *json = NULL;
    size_t len = 0, cap = 0;
    int rc = 2;
    for (;;) {
        if (len == cap) {
            size_t new_cap = cap ? cap * 2 : 4096;
            char *grown = realloc(json, new_cap);
            if (!grown)
                goto done;
            json = grown;
            cap = new_cap;
        }
        size_t got = fread(json + len, 1, cap - len, f);
        len += got;
        if (got == 0)
            break;
    }
    if (ferror(f)) {
        perror(argv[1]);
        goto done;
    }
    printf("prog_plan_load: %d findings\n", tlsan_plan_load(json, len));
    rc = 0;
done:
    free(json);
    fclose(f);
    return rc;
}
