/* trace_format: the numbers of the tlsan trace format (docs/trace-format.md), in one place for
 * the writer (shim/trace.c), the reader (src/replay/trace_read.c) and the tests that write or
 * decode traces by hand. Constants only: no code, no allocation, so the shim can include it.
 *
 * A new record kind is one line in TLSAN_TRACE_TAGS (a new number, never a reused one) and
 * one row in docs/trace-format.md; readers skip tags they do not know. */
#ifndef TLSAN_CORE_TRACE_FORMAT_H
#define TLSAN_CORE_TRACE_FORMAT_H

/* The first 8 bytes of every trace (ASCII, no NUL). */
#define TRACE_MAGIC       "TLSANTRC"
#define TRACE_MAGIC_BYTES 8
/* The version this tree writes and the only one it reads. */
#define TRACE_VERSION 1

/* The header: little-endian integers at these byte offsets. A reader skips to
 * TRACE_HEADER_AT_HEADER_BYTES's value, which is at least TRACE_HEADER_BYTES. */
#define TRACE_HEADER_BYTES           32
#define TRACE_HEADER_AT_VERSION      8  /* 2 bytes */
#define TRACE_HEADER_AT_POINTER_SIZE 10 /* 1 byte: bytes in a pointer of the recording process */
#define TRACE_HEADER_AT_BYTE_ORDER   11 /* 1 byte: TRACE_LITTLE_ENDIAN or TRACE_BIG_ENDIAN */
#define TRACE_HEADER_AT_HEADER_BYTES 12 /* 4 bytes */
#define TRACE_HEADER_AT_PID          16 /* 4 bytes */
#define TRACE_HEADER_AT_PARENT_PID   20 /* 4 bytes */
#define TRACE_HEADER_AT_START_NS     24 /* 8 bytes: CLOCK_REALTIME nanoseconds */
#define TRACE_LITTLE_ENDIAN          1
#define TRACE_BIG_ENDIAN             2

/* A varint (unsigned LEB128) is at most this many bytes. */
#define TRACE_VARINT_MAX_BYTES 10

/* Record tags: X(NAME, number). Tag 0 is not a record: it ends the trace. */
#define TLSAN_TRACE_TAGS(X)                                                                        \
    X(STRING, 1)                                                                                   \
    X(MODULE, 2)                                                                                   \
    X(STACK, 3)                                                                                    \
    X(ARENA, 4)                                                                                    \
    X(ARENA_END, 5)                                                                                \
    X(BIND, 6)                                                                                     \
    X(VIEW, 7)                                                                                     \
    X(RELEASE, 8)                                                                                  \
    X(OP, 9)                                                                                       \
    X(OP_END, 10)                                                                                  \
    X(RECORD, 11)                                                                                  \
    X(WAIT, 12)                                                                                    \
    X(SYNC, 13)                                                                                    \
    X(PLAN, 14)                                                                                    \
    X(FINDING, 15)                                                                                 \
    X(END, 16)

/* FINDING's flags field. */
#define TRACE_FINDING_SUPPRESSED 1u

#define TLSAN_TRACE_TAG_ENUM(name, number) TRACE_##name = number,
enum trace_tag { TLSAN_TRACE_TAGS(TLSAN_TRACE_TAG_ENUM) };
#undef TLSAN_TRACE_TAG_ENUM

#endif
