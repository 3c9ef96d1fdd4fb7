/* executorch_fb: the FlatBuffer of an ExecuTorch program (.pte), verified and copied into
 * plain C records.
 *
 * The only C++ in the checker: src/import/executorch_fb.cc runs the reader flatc generates from
 * src/import/executorch_schema.fbs, whose Verifier checks every offset, vector length, string
 * terminator, nesting depth and table count against the buffer before any field is read
 * (for the fields that schema declares: those read here). What it copies out is the schema's data
 * as it is (indices are not checked against their lists, enums not against their values): the
 * meaning is src/import/executorch.c's concern. Strings point into the caller's buffer
 * (NUL-terminated there; `len` bytes, which may hold a NUL or bytes that are not UTF-8). */
#ifndef TLSAN_EXECUTORCH_FB_PRIV_H
#define TLSAN_EXECUTORCH_FB_PRIV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The union tags of the format (KernelTypes, InstructionArguments in executorch_schema.fbs). */
enum {
    ET_VAL_NONE = 0,
    ET_VAL_NULL = 1,
    ET_VAL_INT = 2,
    ET_VAL_BOOL = 3,
    ET_VAL_DOUBLE = 4,
    ET_VAL_TENSOR = 5,
    ET_VAL_STRING = 6,
    ET_VAL_INT_LIST = 7,
    ET_VAL_DOUBLE_LIST = 8,
    ET_VAL_BOOL_LIST = 9,
    ET_VAL_TENSOR_LIST = 10,
    ET_VAL_OPTIONAL_TENSOR_LIST = 11,
};
enum {
    ET_INSTR_NONE = 0,
    ET_INSTR_KERNEL = 1,
    ET_INSTR_DELEGATE = 2,
    ET_INSTR_MOVE = 3,
    ET_INSTR_JUMP_FALSE = 4,
    ET_INSTR_FREE = 5,
};

typedef struct et_str {
    const char *s; /* NULL when the field is absent */
    size_t len;
} et_str;

/* A range of the program's integer pool. */
typedef struct et_span {
    size_t start, n;
} et_span;

typedef struct et_tensor {
    int8_t scalar_type;
    int32_t storage_offset;
    et_span sizes;
    uint32_t data_buffer_idx;
    bool planned; /* has allocation_info */
    uint32_t memory_id;
    uint64_t offset; /* memory_offset_low + (memory_offset_high << 32) */
    int8_t shape_dynamism;
    bool has_device; /* extra_tensor_info present */
    int8_t device_type, device_index;
} et_tensor;

typedef struct et_value {
    uint8_t type;     /* ET_VAL_*, or an unknown tag */
    bool bool_val;    /* ET_VAL_BOOL */
    size_t tensor;    /* ET_VAL_TENSOR: index into et_program.tensors */
    et_span items;    /* ET_VAL_*_LIST of ints: IntList, TensorList, OptionalTensorList */
    bool has_payload; /* the union's table is present */
} et_value;

typedef struct et_instr {
    uint8_t type; /* ET_INSTR_*, or an unknown tag */
    bool has_payload;
    /* KernelCall: op_index; DelegateCall: delegate_index; MoveCall: move_from, move_to;
     * JumpFalseCall: cond_value_index, destination_instruction; FreeCall: value_index. */
    int32_t a, b;
    et_span args;
} et_instr;

typedef struct et_chain {
    size_t instr_start, n_instr; /* into et_program.instrs */
} et_chain;

typedef struct et_operator {
    et_str name, overload;
} et_operator;

typedef struct et_buffer_device {
    int32_t buffer_idx;
    int8_t device_type, device_index;
} et_buffer_device;

typedef struct et_method {
    et_str name;
    size_t value_start, n_values; /* into et_program.values */
    et_span inputs, outputs;
    size_t chain_start, n_chains;
    size_t operator_start, n_operators;
    size_t delegate_start, n_delegates; /* into et_program.delegate_ids */
    et_span buffer_sizes;               /* non_const_buffer_sizes */
    size_t device_start, n_devices;     /* non_const_buffer_device */
} et_method;

/* One program: every list of every method lives in one array per kind. */
typedef struct et_program {
    et_method *methods;
    size_t n_methods;
    et_value *values;
    et_tensor *tensors;
    et_chain *chains;
    et_instr *instrs;
    et_operator *operators;
    et_str *delegate_ids;
    et_buffer_device *devices;
    int64_t *ints; /* the integer pool of every et_span */
    /* Segments after the FlatBuffer (Program.segments), offsets relative to the segment base. */
    size_t n_segments;
    uint64_t *segment_ends; /* offset + size of each, saturated at UINT64_MAX */
} et_program;

typedef enum et_fb_status {
    ET_FB_OK = 0,
    ET_FB_INVALID, /* why says what is wrong */
    ET_FB_NOMEM,
} et_fb_status;

/* Verifies the `len` bytes at `buf` (a FlatBuffer with identifier ET12; buf aligned to 16
 * bytes, len < 2^31) and copies the program into *out (free with et_program_free()). On
 * ET_FB_INVALID `why` (why_bytes, at least 1) holds one sentence. Thread-safe. */
et_fb_status et_fb_read(const uint8_t *buf, size_t len, et_program **out, char *why,
                        size_t why_bytes);

void et_program_free(et_program *p);

#ifdef __cplusplus
}
#endif
#endif
