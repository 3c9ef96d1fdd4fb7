/* executorch_fb: the verified FlatBuffer of a .pte copied into C records (executorch_fb.h).
 *
 * executorch_schema_generated.h is written at build time by flatc from our
 * src/import/executorch_schema.fbs, which declares only the fields read here. Nothing is read
 * before flatbuffers::Verifier has accepted the whole buffer for those fields (the ones the schema
 * leaves out are not verified, and never read); after that every accessor stays inside it. The copy
 * is done in two passes (count, then fill) with malloc, so this file needs neither exceptions nor
 * the C++ library's containers. */
#include "import/executorch_fb.h"

#include "executorch_schema_generated.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

namespace fb = executorch_flatbuffer;

namespace
{

/* How many records of each kind a program needs. */
struct counts {
    size_t methods, values, tensors, chains, instrs, operators, delegates, devices, ints, segments;
};

template <typename T> size_t len_of(const flatbuffers::Vector<T> *v)
{
    return v ? v->size() : 0;
}

et_str str_of(const flatbuffers::String *s)
{
    et_str r = {NULL, 0};
    if (s) {
        r.s = s->c_str();
        r.len = s->size();
    }
    return r;
}

void count_method(const fb::ExecutionPlan *m, counts *c)
{
    const auto *values = m->values();
    c->values += len_of(values);
    for (size_t i = 0; i < len_of(values); i++) {
        const fb::EValue *v = values->Get((flatbuffers::uoffset_t)i);
        switch (v->val_type()) {
        case fb::KernelTypes_Tensor:
            if (const fb::Tensor *t = v->val_as_Tensor()) {
                c->tensors++;
                c->ints += len_of(t->sizes());
            }
            break;
        case fb::KernelTypes_IntList:
            if (const fb::IntList *l = v->val_as_IntList())
                c->ints += len_of(l->items());
            break;
        case fb::KernelTypes_TensorList:
            if (const fb::TensorList *l = v->val_as_TensorList())
                c->ints += len_of(l->items());
            break;
        case fb::KernelTypes_OptionalTensorList:
            if (const fb::OptionalTensorList *l = v->val_as_OptionalTensorList())
                c->ints += len_of(l->items());
            break;
        default:
            break;
        }
    }
    c->ints += len_of(m->inputs()) + len_of(m->outputs()) + len_of(m->non_const_buffer_sizes());
    const auto *chains = m->chains();
    c->chains += len_of(chains);
    for (size_t i = 0; i < len_of(chains); i++) {
        const auto *instrs = chains->Get((flatbuffers::uoffset_t)i)->instructions();
        c->instrs += len_of(instrs);
        for (size_t k = 0; k < len_of(instrs); k++) {
            const fb::Instruction *in = instrs->Get((flatbuffers::uoffset_t)k);
            if (const fb::KernelCall *kc = in->instr_args_as_KernelCall())
                c->ints += len_of(kc->args());
            else if (const fb::DelegateCall *dc = in->instr_args_as_DelegateCall())
                c->ints += len_of(dc->args());
        }
    }
    c->operators += len_of(m->operators());
    c->delegates += len_of(m->delegates());
    c->devices += len_of(m->non_const_buffer_device());
}

/* Appends a vector of integers to the pool. The verifier (flatbuffers 2.0.8) aligns a
 * vector's length field but not its elements, and flatc 2.0.8 itself writes vectors of
 * 8-byte integers at 4-byte alignment; Vector::Get() would load them through a misaligned
 * pointer, so the elements are copied byte-wise (FlatBuffers is little-endian, as is every
 * host tlsan builds on: flatbuffers/base.h refuses others unless told). */
template <typename T>
et_span put_ints(et_program *p, size_t *n_ints, const flatbuffers::Vector<T> *v)
{
    et_span s = {*n_ints, len_of(v)};
    const uint8_t *data = s.n ? reinterpret_cast<const uint8_t *>(v->Data()) : NULL;
    for (size_t i = 0; i < s.n; i++) {
        T x;
        memcpy(&x, data + i * sizeof(T), sizeof(T));
        p->ints[(*n_ints)++] = (int64_t)flatbuffers::EndianScalar(x);
    }
    return s;
}

struct filler {
    et_program *p;
    counts at; /* records filled so far */
};

void fill_value(filler *f, const fb::EValue *v, et_value *out)
{
    out->type = (uint8_t)v->val_type();
    switch (v->val_type()) {
    case fb::KernelTypes_Bool:
        if (const fb::Bool *b = v->val_as_Bool()) {
            out->has_payload = true;
            out->bool_val = b->bool_val();
        }
        break;
    case fb::KernelTypes_Tensor:
        if (const fb::Tensor *t = v->val_as_Tensor()) {
            out->has_payload = true;
            out->tensor = f->at.tensors;
            et_tensor *e = &f->p->tensors[f->at.tensors++];
            e->scalar_type = (int8_t)t->scalar_type();
            e->storage_offset = t->storage_offset();
            e->sizes = put_ints(f->p, &f->at.ints, t->sizes());
            e->data_buffer_idx = t->data_buffer_idx();
            if (const fb::AllocationDetails *a = t->allocation_info()) {
                e->planned = true;
                e->memory_id = a->memory_id();
                e->offset =
                    (uint64_t)a->memory_offset_low() | ((uint64_t)a->memory_offset_high() << 32);
            }
            e->shape_dynamism = (int8_t)t->shape_dynamism();
            if (const fb::ExtraTensorInfo *x = t->extra_tensor_info()) {
                e->has_device = true;
                e->device_type = (int8_t)x->device_type();
                e->device_index = x->device_index();
            }
        }
        break;
    case fb::KernelTypes_IntList:
        if (const fb::IntList *l = v->val_as_IntList()) {
            out->has_payload = true;
            out->items = put_ints(f->p, &f->at.ints, l->items());
        }
        break;
    case fb::KernelTypes_TensorList:
        if (const fb::TensorList *l = v->val_as_TensorList()) {
            out->has_payload = true;
            out->items = put_ints(f->p, &f->at.ints, l->items());
        }
        break;
    case fb::KernelTypes_OptionalTensorList:
        if (const fb::OptionalTensorList *l = v->val_as_OptionalTensorList()) {
            out->has_payload = true;
            out->items = put_ints(f->p, &f->at.ints, l->items());
        }
        break;
    case fb::KernelTypes_NONE:
        break;
    default:
        out->has_payload = v->val() != NULL;
        break;
    }
}

void fill_instr(filler *f, const fb::Instruction *in, et_instr *out)
{
    out->type = (uint8_t)in->instr_args_type();
    if (const fb::KernelCall *kc = in->instr_args_as_KernelCall()) {
        out->has_payload = true;
        out->a = kc->op_index();
        out->args = put_ints(f->p, &f->at.ints, kc->args());
    } else if (const fb::DelegateCall *dc = in->instr_args_as_DelegateCall()) {
        out->has_payload = true;
        out->a = dc->delegate_index();
        out->args = put_ints(f->p, &f->at.ints, dc->args());
    } else if (const fb::MoveCall *mc = in->instr_args_as_MoveCall()) {
        out->has_payload = true;
        out->a = mc->move_from();
        out->b = mc->move_to();
    } else if (const fb::JumpFalseCall *jc = in->instr_args_as_JumpFalseCall()) {
        out->has_payload = true;
        out->a = jc->cond_value_index();
        out->b = jc->destination_instruction();
    } else if (const fb::FreeCall *fc = in->instr_args_as_FreeCall()) {
        out->has_payload = true;
        out->a = fc->value_index();
    } else {
        out->has_payload = in->instr_args() != NULL;
    }
}

void fill_method(filler *f, const fb::ExecutionPlan *m, et_method *out)
{
    et_program *p = f->p;
    out->name = str_of(m->name());
    const auto *values = m->values();
    out->value_start = f->at.values;
    out->n_values = len_of(values);
    for (size_t i = 0; i < out->n_values; i++)
        fill_value(f, values->Get((flatbuffers::uoffset_t)i), &p->values[f->at.values++]);
    out->inputs = put_ints(p, &f->at.ints, m->inputs());
    out->outputs = put_ints(p, &f->at.ints, m->outputs());
    out->buffer_sizes = put_ints(p, &f->at.ints, m->non_const_buffer_sizes());

    const auto *chains = m->chains();
    out->chain_start = f->at.chains;
    out->n_chains = len_of(chains);
    for (size_t c = 0; c < out->n_chains; c++) {
        const auto *instrs = chains->Get((flatbuffers::uoffset_t)c)->instructions();
        et_chain *ch = &p->chains[f->at.chains++];
        ch->instr_start = f->at.instrs;
        ch->n_instr = len_of(instrs);
        for (size_t k = 0; k < ch->n_instr; k++)
            fill_instr(f, instrs->Get((flatbuffers::uoffset_t)k), &p->instrs[f->at.instrs++]);
    }
    const auto *ops = m->operators();
    out->operator_start = f->at.operators;
    out->n_operators = len_of(ops);
    for (size_t i = 0; i < out->n_operators; i++) {
        const fb::Operator *o = ops->Get((flatbuffers::uoffset_t)i);
        et_operator *e = &p->operators[f->at.operators++];
        e->name = str_of(o->name());
        e->overload = str_of(o->overload());
    }
    const auto *dels = m->delegates();
    out->delegate_start = f->at.delegates;
    out->n_delegates = len_of(dels);
    for (size_t i = 0; i < out->n_delegates; i++)
        p->delegate_ids[f->at.delegates++] = str_of(dels->Get((flatbuffers::uoffset_t)i)->id());
    const auto *devs = m->non_const_buffer_device();
    out->device_start = f->at.devices;
    out->n_devices = len_of(devs);
    for (size_t i = 0; i < out->n_devices; i++) {
        const fb::NonConstBufferDevice *d = devs->Get((flatbuffers::uoffset_t)i);
        et_buffer_device *e = &p->devices[f->at.devices++];
        e->buffer_idx = d->buffer_idx();
        e->device_type = (int8_t)d->device_type();
        e->device_index = d->device_index();
    }
}

/* calloc that never returns NULL for an empty list, so NULL always means out of memory. */
template <typename T> bool alloc(T **out, size_t n)
{
    *out = static_cast<T *>(calloc(n ? n : 1, sizeof(T)));
    return *out != NULL;
}

} // namespace

extern "C" et_fb_status et_fb_read(const uint8_t *buf, size_t len, et_program **out, char *why,
                                   size_t why_bytes)
{
    *out = NULL;
    if (len < 8 || !flatbuffers::BufferHasIdentifier(buf, fb::ProgramIdentifier())) {
        snprintf(why, why_bytes, "not an ExecuTorch program (no FlatBuffer with identifier %s)",
                 fb::ProgramIdentifier());
        return ET_FB_INVALID;
    }
    /* Depth: a Program nests 7 tables deep; 64 is the library's default. Tables: enough for
     * any real program, while bounding the work a hostile file can ask for. */
    flatbuffers::Verifier verifier(buf, len, 64, 1u << 24);
    if (!fb::VerifyProgramBuffer(verifier)) {
        snprintf(why, why_bytes,
                 "the FlatBuffer does not verify against ExecuTorch's schema (an offset, "
                 "length or string outside the file, misaligned, or nested too deep)");
        return ET_FB_INVALID;
    }
    const fb::Program *prog = fb::GetProgram(buf);
    counts c = {};
    const auto *plans = prog->execution_plan();
    c.methods = len_of(plans);
    for (size_t i = 0; i < c.methods; i++)
        count_method(plans->Get((flatbuffers::uoffset_t)i), &c);
    c.segments = len_of(prog->segments());

    et_program *p = static_cast<et_program *>(calloc(1, sizeof *p));
    if (!p || !alloc(&p->methods, c.methods) || !alloc(&p->values, c.values) ||
        !alloc(&p->tensors, c.tensors) || !alloc(&p->chains, c.chains) ||
        !alloc(&p->instrs, c.instrs) || !alloc(&p->operators, c.operators) ||
        !alloc(&p->delegate_ids, c.delegates) || !alloc(&p->devices, c.devices) ||
        !alloc(&p->ints, c.ints) || !alloc(&p->segment_ends, c.segments)) {
        et_program_free(p);
        return ET_FB_NOMEM;
    }
    filler f = {p, {}};
    p->n_methods = c.methods;
    for (size_t i = 0; i < c.methods; i++)
        fill_method(&f, plans->Get((flatbuffers::uoffset_t)i), &p->methods[i]);
    p->n_segments = c.segments;
    for (size_t i = 0; i < c.segments; i++) {
        const fb::DataSegment *s = prog->segments()->Get((flatbuffers::uoffset_t)i);
        uint64_t end = s->offset() + s->size();
        p->segment_ends[i] = end < s->offset() ? UINT64_MAX : end;
    }
    *out = p;
    return ET_FB_OK;
}

extern "C" void et_program_free(et_program *p)
{
    if (!p)
        return;
    free(p->methods);
    free(p->values);
    free(p->tensors);
    free(p->chains);
    free(p->instrs);
    free(p->operators);
    free(p->delegate_ids);
    free(p->devices);
    free(p->ints);
    free(p->segment_ends);
    free(p);
}
