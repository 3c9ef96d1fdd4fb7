/* reader: the streaming JSON reader of plans and plan caches (plan-format.md).
 *
 * yajl's event parser drives a small state machine: one frame per open JSON object or
 * list, a descriptor filled while inside an arena, tensor or op object and handed to the
 * plan builder (plan.c) when the object ends. No document tree is built, so memory follows
 * the plan model plus the largest single object, not the file. */
#ifndef TLSAN_READER_PRIV_H
#define TLSAN_READER_PRIV_H

#include "tlsan/plan.h"

#include <stdbool.h>
#include <stdio.h>
#include <yajl/yajl_common.h>

typedef struct reader_options {
    /* Allocator for the parser, the reader's own state and the cache (not the plans, which
     * plan.c allocates with malloc). NULL: malloc. Tests pass one that fails on demand. */
    const yajl_alloc_funcs *alloc;
    bool allow_plan;    /* accept a single plan */
    bool allow_cache;   /* accept a plan cache */
    size_t chunk_bytes; /* bytes handed to yajl at a time; 0: 64 KiB */
} reader_options;

/* Reads a plan or a cache from memory (see tlsan_read_buffer) with explicit options.
 * `label` goes to err->file. */
tlsan_status reader_read_buffer(const char *json, size_t json_bytes, const char *label,
                                const reader_options *opt, tlsan_plan **plan_out,
                                tlsan_cache **cache_out, tlsan_error *err);

/* Same from an open stream; `label` names it in errors. The stream is not closed. */
tlsan_status reader_read_stream(FILE *in, const char *label, const reader_options *opt,
                                tlsan_plan **plan_out, tlsan_cache **cache_out, tlsan_error *err);

#endif
