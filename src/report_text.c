/* report_text: findings in the layout sanitizer users know (AddressSanitizer's): a rule,
 * an `ERROR: tlsan: KIND ...` headline, the details, and one `SUMMARY:` line per input. */
#include "report.h"

#include <inttypes.h>
#include <string.h>

#define RULE        "================================================================="
#define COLOR_ERROR "\033[1m\033[31m"
#define COLOR_RESET "\033[0m"

typedef struct text_out {
    FILE *out;
    const char *pid_prefix; /* "" when none */
    bool color;
} text_out;

static uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static const char *plural(uint64_t n, const char *one, const char *many)
{
    return n == 1 ? one : many;
}

/* Where a finding is: "plan 'NAME'", "plans[I]" (unnamed cache entry) or the file label. */
static void put_where(text_out *o, const tlsan_report *r, size_t plan_index, const char *label)
{
    char buf[48];
    const char *name = plan_index < r->n_plans ? tlsan_plan_name(r->plans[plan_index]) : NULL;
    if (name)
        fprintf(o->out, "plan '%s'", name);
    else if (r->is_cache)
        fprintf(o->out, "%s of %s", report_plan_label(r, plan_index, buf, sizeof buf), label);
    else
        fprintf(o->out, "%s", label);
}

static void put_headline(text_out *o, const tlsan_report *r, const tlsan_finding *f,
                         const char *label)
{
    size_t pi = f->plan_index < 0 ? 0 : (size_t)f->plan_index;
    fprintf(o->out, "%s\n%s%sERROR: tlsan: %s", RULE, o->pid_prefix, o->color ? COLOR_ERROR : "",
            tlsan_kind_name(f->kind));
    if (f->kind == TLSAN_KIND_CACHE_KEY_COLLISION && f->other_plan_index >= 0 &&
        (uint64_t)f->other_plan_index < r->n_plans) {
        char b0[48], b1[48];
        const char *l0 = report_plan_label(r, pi, b0, sizeof b0);
        const char *l1 = report_plan_label(r, (size_t)f->other_plan_index, b1, sizeof b1);
        fprintf(o->out, " between plans '%s' and '%s' in %s", l0 ? l0 : "?", l1 ? l1 : "?", label);
    } else {
        if (f->n_tensors == 2)
            fprintf(o->out, " between '%s' and '%s'", f->tensors[0], f->tensors[1]);
        for (size_t i = 0; f->n_tensors != 2 && i < f->n_tensors; i++)
            fprintf(o->out, "%s'%s'", i == 0 ? " on " : ", ", f->tensors[i]);
        fprintf(o->out, " in ");
        put_where(o, r, pi, label);
    }
    fprintf(o->out, "%s\n", o->color ? COLOR_RESET : "");
}

static const char *arena_name(const tlsan_plan *p, const tensor_rec *t)
{
    return plan_str(p, p->arenas[p->tensors[t->root].arena].name);
}

/* "  tensor 'x': arena 'a0', bytes [s, e) (N bytes), lifetime [a, b]" and its stack. */
static void put_tensor(text_out *o, const tlsan_plan *p, uint32_t t, const tlsan_finding *f,
                       size_t i)
{
    const tensor_rec *tr = &p->tensors[t];
    fprintf(o->out, "  tensor '%s': ", plan_str(p, tr->name));
    if (tr->view_of != NO_INDEX)
        fprintf(o->out, "view of '%s' at +%" PRIu64 ", ", plan_str(p, p->tensors[tr->view_of].name),
                tr->offset_bytes);
    fprintf(o->out, "arena '%s', bytes [%" PRIu64 ", %" PRIu64 ") (%" PRIu64 " %s)",
            arena_name(p, tr), tr->abs_offset_bytes, sat_add(tr->abs_offset_bytes, tr->bytes),
            tr->bytes, plural(tr->bytes, "byte", "bytes"));
    if (f && f->has_lifetimes && i < 2)
        fprintf(o->out, ", lifetime [%" PRId64 ", %" PRId64 "]", f->lifetimes[i][0],
                f->lifetimes[i][1]);
    fputc('\n', o->out);
    if (tr->n_stack == 0)
        fprintf(o->out, "    (no stack recorded)\n");
    for (uint32_t k = 0; k < tr->n_stack; k++)
        fprintf(o->out, "    #%" PRIu32 " %s\n", k, plan_str(p, p->id_pool.v[tr->stack_start + k]));
}

/* Does the op's list (reads or writes) touch tensor t, directly or through a view? Returns
 * the tensor it names, or NO_INDEX. */
static uint32_t op_touches(const tlsan_plan *p, uint32_t start, uint32_t n, uint32_t t)
{
    for (uint32_t k = 0; k < n; k++) {
        uint32_t x = p->id_pool.v[start + k];
        if (x == t || (p->tensors[x].root == t && p->tensors[t].root == t))
            return x;
    }
    return NO_INDEX;
}

static void put_access(text_out *o, const tlsan_plan *p, const char *verb, uint32_t via, uint32_t t,
                       bool *first)
{
    fprintf(o->out, "%s%s '%s'", *first ? " " : ", ", verb, plan_str(p, p->tensors[t].name));
    if (via != t)
        fprintf(o->out, " (through view '%s')", plan_str(p, p->tensors[via].name));
    *first = false;
}

/* "  step S: op 'NAME' writes 'c', reads 'a'" for one colliding step; the input and output
 * steps name the finding's tensors that are inputs or outputs. */
static void put_step(text_out *o, const tlsan_report *r, const tlsan_finding *f, int64_t step)
{
    const tlsan_plan *p = report_plan_of(r, f);
    uint32_t ts[2] = {NO_INDEX, NO_INDEX};
    size_t nt = f->n_tensors < 2 ? f->n_tensors : 2;
    for (size_t i = 0; i < nt; i++)
        ts[i] = report_tensor_of(r, f, i, p);
    bool first = true;
    if (step < 0 || (uint64_t)step >= p->n_ops) {
        bool in = step < 0;
        fprintf(o->out, "  step %" PRId64 " (%s):", step,
                in ? "inputs written before the first op" : "outputs read after the last op");
        unsigned flag = in ? TLSAN_TENSOR_INPUT : TLSAN_TENSOR_OUTPUT;
        for (size_t i = 0; i < nt; i++) {
            if (ts[i] == NO_INDEX || !(p->root_flags[p->tensors[ts[i]].root] & flag))
                continue;
            fprintf(o->out, "%s'%s' is %s", first ? " " : ", ", f->tensors[i],
                    in ? "an input" : "an output");
            first = false;
        }
        fputc('\n', o->out);
        return;
    }
    const op_rec *op = &p->ops[step];
    fprintf(o->out, "  step %" PRId64 ": op '%s'", step, plan_str(p, op->name));
    for (size_t i = 0; i < nt; i++) {
        if (ts[i] == NO_INDEX)
            continue;
        uint32_t w = op_touches(p, op->writes_start, op->n_writes, ts[i]);
        uint32_t rd = op_touches(p, op->reads_start, op->n_reads, ts[i]);
        if (w != NO_INDEX)
            put_access(o, p, "writes", w, ts[i], &first);
        if (rd != NO_INDEX)
            put_access(o, p, "reads", rd, ts[i], &first);
    }
    fputc('\n', o->out);
}

static void put_op_ref(text_out *o, const tlsan_plan *p, int64_t op)
{
    fprintf(o->out, "op '%s' (step %" PRId64, plan_str(p, p->ops[op].name), op);
    if (p->schedule == TLSAN_SCHEDULE_SEQUENTIAL && p->n_streams > 1)
        fprintf(o->out, ", stream '%s'", plan_str(p, p->ops[op].stream));
    fputc(')', o->out);
}

static bool valid_op(const tlsan_plan *p, int64_t op)
{
    return op >= 0 && (uint64_t)op < p->n_ops;
}

/* Lines only single-tensor kinds have: what rule the layout breaks, with the numbers. */
static void put_layout_details(text_out *o, const tlsan_plan *p, const tlsan_finding *f, uint32_t t)
{
    const tensor_rec *tr = &p->tensors[t];
    const arena_rec *ar = &p->arenas[p->tensors[tr->root].arena];
    const char *arena = plan_str(p, ar->name);
    switch (f->kind) {
    case TLSAN_KIND_OUT_OF_BOUNDS:
        if (tr->view_of == NO_INDEX) {
            uint64_t end = sat_add(tr->offset_bytes, tr->bytes);
            fprintf(o->out,
                    "  arena '%s' has %" PRIu64 " bytes; the tensor ends at %" PRIu64 ", %" PRIu64
                    " bytes past its end\n",
                    arena, ar->bytes, end, end > ar->bytes ? end - ar->bytes : 0);
        } else {
            const tensor_rec *b = &p->tensors[tr->view_of];
            uint64_t end = sat_add(tr->offset_bytes, tr->bytes);
            fprintf(o->out,
                    "  base '%s' has %" PRIu64 " bytes; the view covers [%" PRIu64 ", %" PRIu64
                    ") of it, %" PRIu64 " bytes past its end\n",
                    plan_str(p, b->name), b->bytes, tr->offset_bytes, end,
                    end > b->bytes ? end - b->bytes : 0);
        }
        break;
    case TLSAN_KIND_MISALIGNED: {
        uint64_t off = tr->abs_offset_bytes;
        bool said = false;
        if (tr->view_of == NO_INDEX && off % ar->alignment_bytes) {
            fprintf(o->out,
                    "  offset %" PRIu64 " in arena '%s' is not a multiple of the arena's "
                    "alignment %" PRIu64 " (remainder %" PRIu64 ")\n",
                    off, arena, ar->alignment_bytes, off % ar->alignment_bytes);
            said = true;
        }
        if (tensor_x(p, tr)->alignment_bytes > 1 && off % tensor_x(p, tr)->alignment_bytes) {
            fprintf(o->out,
                    "  offset %" PRIu64 " in arena '%s' is not a multiple of the tensor's "
                    "alignment %" PRIu64 " (remainder %" PRIu64 ")\n",
                    off, arena, tensor_x(p, tr)->alignment_bytes,
                    off % tensor_x(p, tr)->alignment_bytes);
            said = true;
        }
        if (!said)
            fprintf(o->out,
                    "  offset %" PRIu64 " in arena '%s'; arena alignment %" PRIu64
                    ", tensor alignment %" PRIu64 "\n",
                    off, arena, ar->alignment_bytes,
                    tensor_x(p, tr)->alignment_bytes ? tensor_x(p, tr)->alignment_bytes : 1);
        break;
    }
    case TLSAN_KIND_MEMORY_KIND_MISMATCH:
        fprintf(o->out, "  the tensor needs memory '%s'; arena '%s' is '%s'\n",
                tensor_x(p, tr)->memory == STRTAB_NONE ? "?" : plan_str(p, tensor_x(p, tr)->memory),
                arena, plan_str(p, ar->memory));
        break;
    case TLSAN_KIND_SIZE_MISMATCH: {
        uint64_t need = plan_needed_bytes(p, tr);
        fprintf(o->out, "  dtype %s, shape [", tlsan_dtype_name((tlsan_dtype)tr->dtype));
        for (uint32_t k = 0; k < tr->n_shape; k++)
            fprintf(o->out, "%s%" PRIu64, k ? ", " : "", p->shape_pool.v[tr->shape_start + k]);
        fprintf(o->out, "]: needs %" PRIu64 " bytes, has %" PRIu64 " (%" PRIu64 " short)\n", need,
                tr->bytes, need > tr->bytes ? need - tr->bytes : 0);
        break;
    }
    case TLSAN_KIND_LIFETIME_TOO_SHORT:
        fprintf(o->out, "  declared lifetime [%" PRId64 ", %" PRId64 "]",
                tensor_x(p, tr)->lifetime[0], tensor_x(p, tr)->lifetime[1]);
        if (f->has_lifetimes)
            fprintf(o->out, ", derived from the ops [%" PRId64 ", %" PRId64 "]", f->lifetimes[0][0],
                    f->lifetimes[0][1]);
        fputc('\n', o->out);
        break;
    default:
        break;
    }
}

/* cache-key-collision: each differing tensor's layout in both plans. */
static void put_collision(text_out *o, const tlsan_report *r, const tlsan_finding *f)
{
    const tlsan_plan *pl[2] = {report_plan_of(r, f), NULL};
    if (f->other_plan_index < 0 || (uint64_t)f->other_plan_index >= r->n_plans)
        return;
    pl[1] = r->plans[f->other_plan_index];
    const int64_t idx[2] = {f->plan_index < 0 ? 0 : f->plan_index, f->other_plan_index};
    for (size_t i = 0; i < f->n_tensors; i++) {
        fprintf(o->out, "  tensor '%s':", f->tensors[i]);
        for (int k = 0; k < 2; k++) {
            char buf[48];
            const char *label = report_plan_label(r, (size_t)idx[k], buf, sizeof buf);
            uint32_t t = report_tensor_of(r, f, i, pl[k]);
            fprintf(o->out, "%s in '%s' ", k ? ";" : "", label ? label : "?");
            if (t == NO_INDEX) {
                fprintf(o->out, "absent");
                continue;
            }
            const tensor_rec *tr = &pl[k]->tensors[t];
            if (tr->view_of != NO_INDEX)
                fprintf(o->out, "view of '%s' at +%" PRIu64 ", ",
                        plan_str(pl[k], pl[k]->tensors[tr->view_of].name), tr->offset_bytes);
            fprintf(o->out, "arena '%s' bytes [%" PRIu64 ", %" PRIu64 ")", arena_name(pl[k], tr),
                    tr->abs_offset_bytes, sat_add(tr->abs_offset_bytes, tr->bytes));
        }
        fputc('\n', o->out);
    }
}

static void put_finding(text_out *o, const tlsan_report *r, const tlsan_finding *f,
                        const char *label)
{
    const tlsan_plan *p = report_plan_of(r, f);
    put_headline(o, r, f, label);
    fprintf(o->out, "%s\n", f->message);

    if (f->kind == TLSAN_KIND_CACHE_KEY_COLLISION) {
        put_collision(o, r, f);
        return;
    }
    /* Bytes and steps of a pair are where the two collide; a single tensor's are its own
     * range and the kind's own interval, which its detail lines below already give. */
    bool pair = f->n_tensors == 2;
    if (pair && f->has_bytes)
        fprintf(o->out, "  shared bytes: [%" PRIu64 ", %" PRIu64 ") (%" PRIu64 " %s)\n",
                f->bytes[0], f->bytes[1], f->bytes[1] - f->bytes[0],
                plural(f->bytes[1] - f->bytes[0], "byte", "bytes"));
    if (pair && f->has_steps) {
        put_step(o, r, f, f->steps[0]);
        if (f->steps[1] != f->steps[0])
            put_step(o, r, f, f->steps[1]);
    }
    if (f->kind == TLSAN_KIND_BAD_INPLACE && valid_op(p, f->op_index)) {
        fprintf(o->out, "  ");
        put_op_ref(o, p, f->op_index);
        fprintf(o->out, " declares them an in-place pair\n");
    } else if (f->kind == TLSAN_KIND_UNORDERED_REUSE && valid_op(p, f->op_index)) {
        fprintf(o->out, "  ");
        if (valid_op(p, f->op_index2)) {
            put_op_ref(o, p, f->op_index2);
            fprintf(o->out, " is not ordered before ");
        } else {
            fprintf(o->out, "the earlier tenant is not ordered before ");
        }
        put_op_ref(o, p, f->op_index);
        fprintf(o->out, ", the later tenant's first access\n");
    }
    if (f->n_path) {
        fprintf(o->out, "  path:");
        for (size_t i = 0; i < f->n_path; i++)
            fprintf(o->out, "%s%s=%s", i ? ", " : " ", f->path[i].if_name, f->path[i].arm);
        fputc('\n', o->out);
    }
    for (size_t i = 0; i < f->n_tensors; i++) {
        uint32_t t = report_tensor_of(r, f, i, p);
        if (t == NO_INDEX) {
            fprintf(o->out, "  tensor '%s'\n", f->tensors[i]);
            continue;
        }
        put_tensor(o, p, t, f, i);
        if (f->n_tensors == 1)
            put_layout_details(o, p, f, t);
    }
    if (f->approximate)
        fprintf(o->out, "  note: too many branch paths to enumerate; judged on the union of all "
                        "paths (conservative)\n");
}

static void put_summary(text_out *o, const tlsan_report *r, const char *label)
{
    if (r->n_findings == 0) {
        fprintf(o->out, "SUMMARY: tlsan: no findings in %s\n", label);
        return;
    }
    fprintf(o->out, "SUMMARY: tlsan: %zu %s (", r->n_findings,
            plural(r->n_findings, "finding", "findings"));
    bool first = true;
    for (int k = 0; k < TLSAN_KIND_COUNT_; k++) {
        size_t n = tlsan_report_count_kind(r, (tlsan_kind)k);
        if (n == 0)
            continue;
        fprintf(o->out, "%s%s x%zu", first ? "" : ", ", tlsan_kind_name((tlsan_kind)k), n);
        first = false;
    }
    fprintf(o->out, ") in %s\n", label);
}

/* One note per report when any plan was judged on the union of paths somewhere. */
static void put_paths_note(text_out *o, const tlsan_report *r, const char *label)
{
    bool first = true;
    for (size_t i = 0; i < r->n_plans; i++) {
        if (!r->stats[i].paths_approximate)
            continue;
        if (first)
            fprintf(o->out, "%sNOTE: tlsan: too many branch paths in ", o->pid_prefix);
        else
            fprintf(o->out, ", ");
        put_where(o, r, i, label);
        first = false;
    }
    if (!first)
        fprintf(o->out, ": some pairs were judged on the union of all paths (conservative: "
                        "findings there may not occur on any single path)\n");
}

int report_write_text(const tlsan_report *r, const char *label, const report_text_options *opt,
                      FILE *out)
{
    if (!r || !out)
        return -1;
    text_out o = {out, "", false};
    if (opt) {
        o.pid_prefix = opt->pid_prefix ? opt->pid_prefix : "";
        o.color = opt->color;
    }
    if (!label)
        label = "<plan>";
    for (size_t i = 0; i < r->n_findings; i++)
        put_finding(&o, r, &r->findings[i], label);
    if (r->n_findings)
        fputc('\n', out);
    put_paths_note(&o, r, label);
    put_summary(&o, r, label);
    return ferror(out) ? -1 : 0;
}
