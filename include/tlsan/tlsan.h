/*
 * tlsan.h - the engine annotation API of the Tensor Lifetime Sanitizer.
 *
 * An inference engine calls these to tell the runtime shim (libtlsan.so) what its memory
 * means: which arenas it carved, which tensor lives at which bytes and when, which op reads
 * and writes which tensors, on which stream, and how streams synchronise. The shim uses the
 * annotations to checksum tensors around reuse boundaries, to fill released bytes with a
 * sentinel, to report a bad reuse with both tensors' stacks while it happens, and to record
 * the run as a trace that `tlsan replay` checks statically (docs/trace-format.md).
 *
 * Cost when the shim is not loaded: every function below is a static inline wrapper that
 * tests one weak symbol (tlsan_rt_*) and returns. Defining TLSAN_DISABLE before including
 * this header compiles every call out entirely. When the program runs under Valgrind without
 * the shim, the wrappers turn into memcheck client requests instead (an arena is a mempool,
 * a bound tensor a chunk of it, a released tensor becomes no-access), so memcheck flags a
 * read of a released tensor at the faulting instruction. Define TLSAN_NO_VALGRIND to leave
 * those out, or when <valgrind/memcheck.h> is not installed they are left out anyway.
 *
 * Names: tensors, ops and arenas are named by NUL-terminated strings, copied by the shim
 * before the call returns; tensor names are global to the process (as in a plan, where they
 * are unique), a name may be bound again after its release (a new tenant of the same name,
 * e.g. the next run of the graph). Streams and events are small integers chosen by the
 * engine; stream 0 is the host's own queue, called "main" in plans and reports.
 *
 * Thread-safety: every function may be called from any thread at any time. Ops on
 * different streams may run concurrently; the calls of one op (begin, end) may come from
 * different threads.
 *
 * Errors: the functions return nothing the engine must handle. A call the shim cannot make
 * sense of (a release of a tensor never bound, an op end without a begin, a bad plan) is
 * reported once on the shim's log as a usage warning and otherwise ignored; the engine's
 * behaviour never changes because of this API.
 */
#ifndef TLSAN_TLSAN_H
#define TLSAN_TLSAN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Version of this API, for `#if` checks in engines; raised when a call is added or changes.
 *  2: tensor handles (tlsan_bind, tlsan_view, tlsan_bind_inplace, tlsan_release), ops declared
 *  by handle with a source location (tlsan_op_start, TLSAN_OP, TLSAN_OP_SCOPE) and host
 *  accesses (tlsan_host_read, tlsan_host_write). Every call of version 1 works as before. */
#define TLSAN_ANNOTATION_API_VERSION 2

/** Bind flags (tlsan_tensor_bind). */
enum {
    /** A graph input: it holds data before the first op (no read-before-write, at run time
     *  or in the plan). Without it (or TLSAN_BIND_INPLACE), a declared read of bytes of the
     *  tensor that no op declared a write to since this bind is read-before-write. */
    TLSAN_BIND_INPUT = 1u << 0,
    /** A graph output: it stays live until the arena is destroyed. */
    TLSAN_BIND_OUTPUT = 1u << 1,
    /** An in-place output: it takes over the bytes of a live tensor that an op of its
     *  schema consumes in place (the plan's "inplace" pair). Under Valgrind the bytes keep
     *  the chunk of that input instead of opening a new one. */
    TLSAN_BIND_INPLACE = 1u << 2,
};

/** Release flags (tlsan_tensor_release). */
enum {
    /** The tensor's bytes live on in an in-place output bound with TLSAN_BIND_INPLACE:
     *  the shim does not fill them with the sentinel, Valgrind keeps them accessible. */
    TLSAN_RELEASE_HANDOVER = 1u << 0,
};

/** One op as the engine runs it. All pointers are borrowed for the duration of the call. */
typedef struct tlsan_op_info {
    const char *name;           /**< unique per run of the graph, e.g. "matmul_3" */
    int stream;                 /**< the queue it runs on; 0 = the host ("main") */
    const char *const *reads;   /**< names of tensors (roots or views) it reads */
    size_t n_reads;             /**< number of names in reads */
    const char *const *writes;  /**< names of tensors (roots or views) it writes */
    size_t n_writes;            /**< number of names in writes */
    const char *const *inplace; /**< [output, input] name pairs flattened: 2 * n_inplace */
    size_t n_inplace;           /**< number of in-place pairs its schema allows */
} tlsan_op_info;

/** A tensor handle (API version 2): returned by tlsan_bind(), tlsan_bind_inplace() and
 *  tlsan_view(), named in op declarations (tlsan_op_decl), tlsan_release() and the host
 *  accesses. A plain 8-byte value, copied freely; the shim owns what it refers to. The tensor's
 *  name stays what reports and traces show. id 0 is no tensor: what every call returns when
 *  the shim is not loaded or refused the call (with a usage warning); passing it anywhere is
 *  a no-op. A storage root's handle stands for its current tenant: after its release it is
 *  stale. Until the name is bound again, an op or a host access given it reads or writes that
 *  released tenant (`use-after-release`, as by name); once the name is bound again, and in
 *  every other call (release, view, in-place bind), it is refused with a usage warning.
 *  A view's handle follows its base: it stays valid across the root's later binds. */
typedef struct tlsan_tensor {
    uint64_t id;
} tlsan_tensor;

/** A place in the engine's source, shown in reports as the op's location ("FILE:LINE in
 *  FUNC"). The strings are borrowed for the duration of the call (the shim copies them);
 *  file NULL is no location. TLSAN_HERE is the place it is written at. */
typedef struct tlsan_src_loc {
    const char *file; /**< e.g. __FILE__ */
    int line;         /**< e.g. __LINE__, 1-based */
    const char *func; /**< e.g. __func__; may be NULL */
} tlsan_src_loc;

#define TLSAN_HERE ((tlsan_src_loc){__FILE__, __LINE__, __func__})

/** One op declared by handle (tlsan_op_start). All pointers are borrowed for the duration of
 *  the call. In-place pairs need no declaration here: an output bound with
 *  tlsan_bind_inplace() over a tensor the op also reads is the op's in-place pair. */
typedef struct tlsan_op_decl {
    const char *name;           /**< unique per run of the graph, e.g. "matmul_3" */
    int stream;                 /**< the queue it runs on; 0 = the host ("main") */
    const tlsan_tensor *reads;  /**< tensors (roots or views) it reads */
    size_t n_reads;             /**< number of handles in reads */
    const tlsan_tensor *writes; /**< tensors (roots or views) it writes */
    size_t n_writes;            /**< number of handles in writes */
    tlsan_src_loc loc;          /**< where the op is declared (the model's line, say) */
} tlsan_op_decl;

/** Host access modes (tlsan_host_access). */
enum {
    TLSAN_ACCESS_READ = 1u << 0,  /**< the host read the bytes (copying an output out) */
    TLSAN_ACCESS_WRITE = 1u << 1, /**< the host wrote the bytes (filling an input) */
};

/* The shim's entry points. Weak, so that a program not linked against and not preloaded
 * with libtlsan.so still links and runs; each wrapper below calls one only when present. */
#ifndef TLSAN_DISABLE
extern int tlsan_rt_active(void) __attribute__((weak));
extern void tlsan_rt_arena_create(const char *name, const void *base, size_t size_bytes)
    __attribute__((weak));
extern void tlsan_rt_arena_destroy(const void *base) __attribute__((weak));
extern int tlsan_rt_plan_load(const char *plan_json, size_t json_bytes) __attribute__((weak));
extern void tlsan_rt_tensor_bind(const void *arena_base, const char *name, const void *addr,
                                 size_t size_bytes, unsigned flags) __attribute__((weak));
extern void tlsan_rt_view_bind(const char *name, const char *base_name, size_t view_offset_bytes,
                               size_t size_bytes) __attribute__((weak));
extern void tlsan_rt_tensor_release(const void *arena_base, const char *name, const void *addr,
                                    unsigned flags) __attribute__((weak));
extern uint64_t tlsan_rt_op_begin(const tlsan_op_info *op) __attribute__((weak));
extern void tlsan_rt_op_end(uint64_t op_token) __attribute__((weak));
extern void tlsan_rt_event_record(int event, int stream) __attribute__((weak));
extern void tlsan_rt_event_wait(int stream, int event) __attribute__((weak));
extern void tlsan_rt_host_sync(void) __attribute__((weak));
extern uint64_t tlsan_rt_bind(const void *arena_base, const char *name, const void *addr,
                              size_t size_bytes, unsigned flags) __attribute__((weak));
extern uint64_t tlsan_rt_bind_inplace(const char *name, uint64_t input, unsigned flags)
    __attribute__((weak));
extern uint64_t tlsan_rt_view(const char *name, uint64_t base, size_t view_offset_bytes,
                              size_t size_bytes) __attribute__((weak));
extern void tlsan_rt_release(uint64_t tensor) __attribute__((weak));
extern uint64_t tlsan_rt_op_start(const tlsan_op_decl *op) __attribute__((weak));
extern void tlsan_rt_host_access(uint64_t tensor, size_t offset_bytes, size_t size_bytes,
                                 unsigned access, const tlsan_src_loc *loc) __attribute__((weak));
#endif

#if !defined(TLSAN_DISABLE) && !defined(TLSAN_NO_VALGRIND) && defined(__has_include)
#if __has_include(<valgrind/memcheck.h>)
#include <valgrind/memcheck.h>
#define TLSAN_HAVE_VALGRIND_ 1
#endif
#endif

/** 1 when the shim is loaded and tracing, 0 otherwise (not loaded, under Valgrind or ASan,
 *  or stopped after an internal failure). */
static inline int tlsan_active(void)
{
#ifndef TLSAN_DISABLE
    if (tlsan_rt_active)
        return tlsan_rt_active();
#endif
    return 0;
}

/** Declares an arena: `size_bytes` bytes at `base`, owned by the engine, in which tensors
 *  are bound. `name` is the arena's name in plans and reports ("a0"). The base address is
 *  the arena's handle in the other calls. Call it before binding tensors in it and after
 *  the memory is allocated; with fills on, the shim fills the whole arena with the
 *  sentinel so bytes no tensor owns can be checked later. */
static inline void tlsan_arena_create(const char *name, const void *base, size_t size_bytes)
{
#ifndef TLSAN_DISABLE
    if (tlsan_rt_arena_create) {
        tlsan_rt_arena_create(name, base, size_bytes);
        return;
    }
#ifdef TLSAN_HAVE_VALGRIND_
    VALGRIND_CREATE_MEMPOOL(base, 0, 0);
    VALGRIND_MAKE_MEM_NOACCESS(base, size_bytes);
#endif
#endif
    (void)name, (void)base, (void)size_bytes;
}

/** Ends an arena: every tensor still bound in it is released (outputs included). Call it
 *  before the engine frees the arena's memory. */
static inline void tlsan_arena_destroy(const void *base, size_t size_bytes)
{
#ifndef TLSAN_DISABLE
    if (tlsan_rt_arena_destroy) {
        tlsan_rt_arena_destroy(base);
        return;
    }
#ifdef TLSAN_HAVE_VALGRIND_
    VALGRIND_DESTROY_MEMPOOL(base);
    VALGRIND_MAKE_MEM_UNDEFINED(base, size_bytes);
#endif
#endif
    (void)base, (void)size_bytes;
}

/** Hands the shim the engine's planned layout: a plan in the plan format (docs/plan-format.md,
 *  JSON text, `json_bytes` bytes, not necessarily NUL-terminated). The shim checks it at
 *  once, as `tlsan check` would, and reports every finding with the caller's stack, so a bad
 *  reuse on a branch arm that never runs is still found. It is also recorded in the trace.
 *  Returns the number of findings (0 for a correct plan), -1 when the plan is not valid (the
 *  reason is reported), or 0 when the shim is not loaded. */
static inline int tlsan_plan_load(const char *plan_json, size_t json_bytes)
{
#ifndef TLSAN_DISABLE
    if (tlsan_rt_plan_load)
        return tlsan_rt_plan_load(plan_json, json_bytes);
#endif
    (void)plan_json, (void)json_bytes;
    return 0;
}

/** A tensor becomes live: `name` now owns `size_bytes` bytes at `addr`, inside the arena
 *  whose base is `arena_base` (a storage root). Flags: TLSAN_BIND_*. With fills on, the
 *  shim first verifies that the bytes still hold the sentinel their last tenant left
 *  (`stale-write` otherwise). Bind a name again only after releasing it. */
static inline void tlsan_tensor_bind(const void *arena_base, const char *name, const void *addr,
                                     size_t size_bytes, unsigned flags)
{
#ifndef TLSAN_DISABLE
    if (tlsan_rt_tensor_bind) {
        tlsan_rt_tensor_bind(arena_base, name, addr, size_bytes, flags);
        return;
    }
#ifdef TLSAN_HAVE_VALGRIND_
    if (!(flags & TLSAN_BIND_INPLACE))
        VALGRIND_MEMPOOL_ALLOC(arena_base, addr, size_bytes);
#endif
#endif
    (void)arena_base, (void)name, (void)addr, (void)size_bytes, (void)flags;
}

/** Declares a view: `name` is `size_bytes` bytes starting `view_offset_bytes` bytes into the
 *  tensor `base_name` (a root or another view), sharing its storage (a reshape, a slice, a
 *  concat destination). A view needs no release: it ends with its storage root. */
static inline void tlsan_view_bind(const char *name, const char *base_name,
                                   size_t view_offset_bytes, size_t size_bytes)
{
#ifndef TLSAN_DISABLE
    if (tlsan_rt_view_bind)
        tlsan_rt_view_bind(name, base_name, view_offset_bytes, size_bytes);
#endif
    (void)name, (void)base_name, (void)view_offset_bytes, (void)size_bytes;
}

/** A tensor stops being live: its bytes may be reused. `addr` is the address it was bound
 *  at (for Valgrind, and checked by the shim). The shim verifies its checksum a last time,
 *  then (with fills on and without TLSAN_RELEASE_HANDOVER) fills the bytes no other live
 *  tensor owns with the sentinel. An op that reads it afterwards is `use-after-release`, and
 *  so is an op begun on another thread that reads or writes it and has not ended yet. */
static inline void tlsan_tensor_release(const void *arena_base, const char *name, const void *addr,
                                        unsigned flags)
{
#ifndef TLSAN_DISABLE
    if (tlsan_rt_tensor_release) {
        tlsan_rt_tensor_release(arena_base, name, addr, flags);
        return;
    }
#ifdef TLSAN_HAVE_VALGRIND_
    if (!(flags & TLSAN_RELEASE_HANDOVER))
        VALGRIND_MEMPOOL_FREE(arena_base, addr);
#endif
#endif
    (void)arena_base, (void)name, (void)addr, (void)flags;
}

/** An op starts executing (on the thread that runs its kernel). The shim verifies the
 *  checksum of every tensor it reads, reports a read of a released tensor and a read of
 *  bytes no op wrote since the tensor's bind (read-before-write; its reads come before its
 *  writes, so an op reading and writing a tensor first reads it unwritten), and records the
 *  op. Returns a token for tlsan_op_end() (0 when the shim is not loaded). */
static inline uint64_t tlsan_op_begin(const tlsan_op_info *op)
{
#ifndef TLSAN_DISABLE
    if (tlsan_rt_op_begin)
        return tlsan_rt_op_begin(op);
#endif
    (void)op;
    return 0;
}

/** The op of `op_token` finished: the shim hashes every tensor it wrote and checks the bytes
 *  just past each (`slot-overflow`); with checksum=all it also verifies every other live
 *  tensor, so that bytes changed with no declared write are laid at this op. */
static inline void tlsan_op_end(uint64_t op_token)
{
#ifndef TLSAN_DISABLE
    if (tlsan_rt_op_end)
        tlsan_rt_op_end(op_token);
#endif
    (void)op_token;
}

/** Stream `stream` records event `event` (after everything it has run so far). Call it when
 *  the stream reaches the record, i.e. on the thread that runs the stream. */
static inline void tlsan_event_record(int event, int stream)
{
#ifndef TLSAN_DISABLE
    if (tlsan_rt_event_record)
        tlsan_rt_event_record(event, stream);
#endif
    (void)event, (void)stream;
}

/** Stream `stream` waits for the latest record of `event`. Call it once the wait is
 *  satisfied, on the thread that runs the stream. */
static inline void tlsan_event_wait(int stream, int event)
{
#ifndef TLSAN_DISABLE
    if (tlsan_rt_event_wait)
        tlsan_rt_event_wait(stream, event);
#endif
    (void)stream, (void)event;
}

/** The host waited for every stream to drain (a device synchronise): joins all streams. */
static inline void tlsan_host_sync(void)
{
#ifndef TLSAN_DISABLE
    if (tlsan_rt_host_sync)
        tlsan_rt_host_sync();
#endif
}

/* ==== API version 2: handles, host accesses, op locations, scoped ops ====
 * The calls below return or take tlsan_tensor handles instead of names; they mix freely with
 * the calls above (a tensor bound by name can be released by name, one bound here by handle
 * or by name). What they add over version 1: no name arrays built per op, release without
 * repeating the arena and address, a view declared once for every later bind of its root,
 * in-place from one declaration, host accesses outside ops, and each op's source location.
 * Thread-safety and errors as above: any thread, any time; a call the shim cannot make sense
 * of is a usage warning on its log and a no-op (a refused call returns the handle 0). */

/** tlsan_tensor_bind() that returns the tensor's handle (valid until its release). `name`,
 *  `size_bytes` (bytes) and `flags` (TLSAN_BIND_*) as there. Returns the handle 0 when the shim
 *  is not loaded or refused the bind. Every view declared with tlsan_view() on this name (or on
 *  a view of it) is declared again on the new tenant, with its offset and size. */
static inline tlsan_tensor tlsan_bind(const void *arena_base, const char *name, const void *addr,
                                      size_t size_bytes, unsigned flags)
{
    tlsan_tensor t = {0};
#ifndef TLSAN_DISABLE
    if (tlsan_rt_bind) {
        t.id = tlsan_rt_bind(arena_base, name, addr, size_bytes, flags);
        return t;
    }
#ifdef TLSAN_HAVE_VALGRIND_
    if (!(flags & TLSAN_BIND_INPLACE))
        VALGRIND_MEMPOOL_ALLOC(arena_base, addr, size_bytes);
#endif
#endif
    (void)arena_base, (void)name, (void)addr, (void)size_bytes, (void)flags;
    return t;
}

/** An in-place output in one declaration: `name` is bound over the bytes of the live storage
 *  root `input` (same arena, address and size) with TLSAN_BIND_INPLACE added to `flags`; an op
 *  that writes it and reads `input` is declared with the in-place pair (output, input); and
 *  tlsan_release(input) while `name` is bound hands the bytes over (TLSAN_RELEASE_HANDOVER).
 *  `input` must be a root's handle (a view's is refused). Returns the output's handle, 0 when
 *  refused or the shim is not loaded. (Under Valgrind without the shim this is a no-op: the
 *  bytes keep the input's chunk, as for TLSAN_BIND_INPLACE.) */
static inline tlsan_tensor tlsan_bind_inplace(const char *name, tlsan_tensor input, unsigned flags)
{
    tlsan_tensor t = {0};
#ifndef TLSAN_DISABLE
    if (tlsan_rt_bind_inplace)
        t.id = tlsan_rt_bind_inplace(name, input.id, flags);
#endif
    (void)name, (void)input, (void)flags;
    return t;
}

/** tlsan_view_bind() by handle, declared once: `name` is `size_bytes` bytes starting
 *  `view_offset_bytes` bytes into `base` (a root's or a view's handle, live now). The view
 *  follows its storage root: each later tlsan_bind() of the root's name declares it again, so
 *  the returned handle stays valid across runs. Declaring `name` again replaces it. Returns
 *  the view's handle, 0 when refused or the shim is not loaded. */
static inline tlsan_tensor tlsan_view(const char *name, tlsan_tensor base, size_t view_offset_bytes,
                                      size_t size_bytes)
{
    tlsan_tensor t = {0};
#ifndef TLSAN_DISABLE
    if (tlsan_rt_view)
        t.id = tlsan_rt_view(name, base.id, view_offset_bytes, size_bytes);
#endif
    (void)name, (void)base, (void)view_offset_bytes, (void)size_bytes;
    return t;
}

/** tlsan_tensor_release() by handle: the arena, address and handover flag come from the bind
 *  (TLSAN_RELEASE_HANDOVER when an in-place output bound with tlsan_bind_inplace() over it is
 *  live). `tensor` must be a storage root's current handle (a view's, or a stale one, is
 *  refused with a usage warning). Under Valgrind without the shim this is a no-op (the handle
 *  carries no address): use tlsan_tensor_release() where memcheck should see the release. */
static inline void tlsan_release(tlsan_tensor tensor)
{
#ifndef TLSAN_DISABLE
    if (tlsan_rt_release)
        tlsan_rt_release(tensor.id);
#endif
    (void)tensor;
}

/** tlsan_op_begin() for an op declared by handle, with its source location (op->loc, shown in
 *  reports as "op 'NAME' (FILE:LINE in FUNC)"; the latest location given for a name is the
 *  one shown). The same checks; end it with tlsan_op_end(). Returns the token, 0 when the shim
 *  is not loaded. A handle of a released tenant whose name is not bound again is that tenant
 *  (use-after-release); another stale handle is left out with a usage warning. */
static inline uint64_t tlsan_op_start(const tlsan_op_decl *op)
{
#ifndef TLSAN_DISABLE
    if (tlsan_rt_op_start)
        return tlsan_rt_op_start(op);
#endif
    (void)op;
    return 0;
}

/** The host accessed bytes of a tensor outside any op: `size_bytes` bytes from
 *  `offset_bytes` into `tensor` (a root or a view; SIZE_MAX: to its end), `access` a mask of
 *  TLSAN_ACCESS_*. Checked as an op on stream 0 named "host_read(NAME)" or "host_write(NAME)"
 *  ("host_access(NAME)" for both) that begins and ends here, at `loc`: a read of a released,
 *  clobbered or unwritten tensor is reported; a write counts as written. A part of the
 *  tensor is accessed through a view named "NAME[OFFSET,+SIZE]". Call it after a host write
 *  (the bytes are hashed at its end) and before a host read. Usually called through the
 *  macros tlsan_host_read() and tlsan_host_write(), which pass the caller's location. */
static inline void tlsan_host_access(tlsan_tensor tensor, size_t offset_bytes, size_t size_bytes,
                                     unsigned access, tlsan_src_loc loc)
{
#ifndef TLSAN_DISABLE
    if (tlsan_rt_host_access)
        tlsan_rt_host_access(tensor.id, offset_bytes, size_bytes, access, &loc);
#endif
    (void)tensor, (void)offset_bytes, (void)size_bytes, (void)access, (void)loc;
}

/** The host read, or wrote, the whole tensor T (a tlsan_tensor), here. */
#define tlsan_host_read(T)  tlsan_host_access((T), 0, SIZE_MAX, TLSAN_ACCESS_READ, TLSAN_HERE)
#define tlsan_host_write(T) tlsan_host_access((T), 0, SIZE_MAX, TLSAN_ACCESS_WRITE, TLSAN_HERE)
/** The host read, or wrote, SIZE bytes from OFFSET bytes into T, here. */
#define tlsan_host_read_range(T, OFFSET, SIZE)                                                     \
    tlsan_host_access((T), (OFFSET), (SIZE), TLSAN_ACCESS_READ, TLSAN_HERE)
#define tlsan_host_write_range(T, OFFSET, SIZE)                                                    \
    tlsan_host_access((T), (OFFSET), (SIZE), TLSAN_ACCESS_WRITE, TLSAN_HERE)

/** Members of a tlsan_op_decl initializer (C only: compound literals): the handles an op
 *  reads or writes, one or more, e.g. TLSAN_READS(x, w), TLSAN_WRITES(h). An op without reads
 *  or without writes leaves the macro out. */
#define TLSAN_READS(...)                                                                           \
    .reads = (const tlsan_tensor[]){__VA_ARGS__},                                                  \
    .n_reads = sizeof((tlsan_tensor[]){__VA_ARGS__}) / sizeof(tlsan_tensor)
#define TLSAN_WRITES(...)                                                                          \
    .writes = (const tlsan_tensor[]){__VA_ARGS__},                                                 \
    .n_writes = sizeof((tlsan_tensor[]){__VA_ARGS__}) / sizeof(tlsan_tensor)

/** Begins op NAME on STREAM declared here (its location is this line), the rest of the
 *  arguments members of its tlsan_op_decl (TLSAN_READS, TLSAN_WRITES). An expression: the token
 *  for tlsan_op_end(), e.g.
 *      uint64_t op = TLSAN_OP("add_3", 0, TLSAN_READS(h1, h2), TLSAN_WRITES(h3));
 *      add(h3_data, h1_data, h2_data);
 *      tlsan_op_end(op); */
#define TLSAN_OP(NAME, STREAM, ...)                                                                \
    tlsan_op_start(&(const tlsan_op_decl){                                                         \
        .name = (NAME), .stream = (STREAM), .loc = TLSAN_HERE, __VA_ARGS__})

#define TLSAN_CAT2_(a, b) a##b
#define TLSAN_CAT_(a, b)  TLSAN_CAT2_(a, b)

/** A scoped op: the statement (or block) that follows runs between the begin of op NAME on
 *  STREAM, declared here (arguments as TLSAN_OP), and its end, e.g.
 *      TLSAN_OP_SCOPE("add_3", 0, TLSAN_READS(h1, h2), TLSAN_WRITES(h3)) {
 *          add(h3_data, h1_data, h2_data);
 *      }
 *  A one-pass for loop (C11, any compiler): leave the block by its end, not by break, return
 *  or goto, or the op never ends (a usage error the shim cannot see until the tensors'
 *  release). Scopes nest when written on different lines. */
#define TLSAN_OP_SCOPE(NAME, STREAM, ...)                                                          \
    for (uint64_t TLSAN_CAT_(tlsan_op_token_, __LINE__) = TLSAN_OP(NAME, STREAM, __VA_ARGS__),     \
                                              TLSAN_CAT_(tlsan_op_once_, __LINE__) = 1;            \
         TLSAN_CAT_(tlsan_op_once_, __LINE__);                                                     \
         tlsan_op_end(TLSAN_CAT_(tlsan_op_token_, __LINE__)),                                      \
                                              TLSAN_CAT_(tlsan_op_once_, __LINE__) = 0)

/** TLSAN_OP_SCOPE for a descriptor the engine built (a generic executor, whose ops carry
 *  their own location): DESC is a `const tlsan_op_decl *`. */
#define TLSAN_OP_SCOPE_DESC(DESC)                                                                  \
    for (uint64_t TLSAN_CAT_(tlsan_op_token_, __LINE__) = tlsan_op_start(DESC),                    \
                                              TLSAN_CAT_(tlsan_op_once_, __LINE__) = 1;            \
         TLSAN_CAT_(tlsan_op_once_, __LINE__);                                                     \
         tlsan_op_end(TLSAN_CAT_(tlsan_op_token_, __LINE__)),                                      \
                                              TLSAN_CAT_(tlsan_op_once_, __LINE__) = 0)

#ifdef __cplusplus
}
#endif

#endif /* TLSAN_TLSAN_H */
