/* How an engine's own unit test uses tlsan without JSON: build the plan its memory planner
 * produced, check it, and fail the test on any finding.
 *
 * The plan below is a two-op chain whose planner forgot that `h` has a second consumer
 * (the residual add at step 2), so it gave `g` the bytes of `h` at step 1. */
#include <tlsan/check.h>

#include <stdio.h>

int main(void)
{
    tlsan_error err;
    tlsan_plan *plan = tlsan_plan_create();
    if (!plan)
        return 2;
    tlsan_plan_set_name(plan, "residual-block");

    tlsan_arena_desc arena = {.name = "scratch", .bytes = 3 * 4096, .alignment_bytes = 64};
    tlsan_tensor_desc tensors[] = {
        {.name = "x",
         .bytes = 4096,
         .arena = "scratch",
         .offset_bytes = 0,
         .flags = TLSAN_TENSOR_INPUT},
        {.name = "h", .bytes = 4096, .arena = "scratch", .offset_bytes = 4096},
        {.name = "g", .bytes = 4096, .arena = "scratch", .offset_bytes = 4096},
        {.name = "y",
         .bytes = 4096,
         .arena = "scratch",
         .offset_bytes = 8192,
         .flags = TLSAN_TENSOR_OUTPUT},
    };
    const char *mm_r[] = {"x"}, *mm_w[] = {"h"};
    const char *gelu_r[] = {"h"}, *gelu_w[] = {"g"};
    const char *add_r[] = {"g", "h"}, *add_w[] = {"y"};
    tlsan_op_desc ops[] = {
        {.name = "matmul", .reads = mm_r, .n_reads = 1, .writes = mm_w, .n_writes = 1},
        {.name = "gelu", .reads = gelu_r, .n_reads = 1, .writes = gelu_w, .n_writes = 1},
        {.name = "residual_add", .reads = add_r, .n_reads = 2, .writes = add_w, .n_writes = 1},
    };

    tlsan_status st = tlsan_plan_add_arena(plan, &arena, &err);
    for (size_t i = 0; st == TLSAN_OK && i < sizeof tensors / sizeof *tensors; i++)
        st = tlsan_plan_add_tensor(plan, &tensors[i], &err);
    for (size_t i = 0; st == TLSAN_OK && i < sizeof ops / sizeof *ops; i++)
        st = tlsan_plan_add_op(plan, &ops[i], &err);
    if (st == TLSAN_OK)
        st = tlsan_plan_finalize(plan, &err);
    if (st != TLSAN_OK) {
        char msg[1024];
        fprintf(stderr, "plan refused: %s\n", tlsan_error_format(&err, msg, sizeof msg));
        tlsan_plan_free(plan);
        return 2;
    }

    tlsan_report *report = NULL;
    if (tlsan_check(plan, NULL, &report) != TLSAN_OK) {
        tlsan_plan_free(plan);
        return 2;
    }
    for (size_t i = 0; i < tlsan_report_count(report); i++) {
        const tlsan_finding *f = tlsan_report_finding(report, i);
        printf("%s:", tlsan_kind_name(f->kind));
        for (size_t k = 0; k < f->n_tensors; k++)
            printf(" %s", f->tensors[k]);
        if (f->has_steps)
            printf(" steps %lld..%lld", (long long)f->steps[0], (long long)f->steps[1]);
        if (f->has_bytes)
            printf(" bytes [%llu, %llu)", (unsigned long long)f->bytes[0],
                   (unsigned long long)f->bytes[1]);
        printf("\n");
    }
    int status = tlsan_report_count(report) ? 1 : 0;
    tlsan_report_free(report);
    tlsan_plan_free(plan);
    return status;
}
