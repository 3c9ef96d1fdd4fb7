/* kernels.h - the engine's compute kernels (float32, row-major) and the dispatcher that runs
 * one op of the graph on the tensors' runtime addresses. Every kernel computes each output
 * element on one thread in a fixed order, so results are bit-identical whichever executor
 * runs them. */
#ifndef ENGINE_KERNELS_H
#define ENGINE_KERNELS_H

#include "graph.h"

#include <stddef.h>

void k_add(float *y, const float *a, const float *b, size_t n, size_t nb, float alpha);
void k_matmul(float *y, const float *x, const float *w, int m, int k, int n);
void k_qkv(float *qkv, const float *x, const float *w, int seq, int hid);
void k_scores(float *s, const float *q, const float *k, int seq, int hdim);
void k_softmax(float *y, float *ws, const float *x, int rows, int cols);
void k_layernorm(float *y, const float *x, const float *g, const float *b, int rows, int cols);
void k_gelu(float *y, const float *x, size_t n);
void k_relu(float *y, const float *x, size_t n);
void k_oproj(float *y, const float *cat, const float *w, int seq, int hid);

/* Runs compute op `o`; `addr[t]` is the address of tensor t (roots and views). */
void kernel_run(const struct graph *g, const struct op *o, float *const *addr);

#endif
