/* kernels.c - straightforward single-threaded kernels: every reduction runs in a fixed order
 * (ascending index), so an output element's bits depend only on the inputs. */
#include "kernels.h"

#include <math.h>
#include <string.h>

void k_add(float *y, const float *a, const float *b, size_t n, size_t nb, float alpha)
{
    for (size_t i = 0; i < n; i++)
        y[i] = a[i] + alpha * b[i % nb];
}

void k_matmul(float *y, const float *x, const float *w, int m, int k, int n)
{
    /* Row by row, the reduction index ascending for every element (the same additions in
     * the same order as a dot product per element), walking w row-major for the cache. */
    for (int i = 0; i < m; i++) {
        float *yr = y + (size_t)i * n;
        for (int j = 0; j < n; j++)
            yr[j] = 0.0f;
        for (int p = 0; p < k; p++) {
            const float xv = x[(size_t)i * k + p];
            const float *wr = w + (size_t)p * n;
            for (int j = 0; j < n; j++)
                yr[j] += xv * wr[j];
        }
    }
}

void k_qkv(float *qkv, const float *x, const float *w, int seq, int hid)
{
    /* Output head-major, [3][HEADS][seq][hdim], so q/k/v and each head are contiguous slices
     * the attention reads through views. Column c of x w goes to part c / hid, head
     * (c % hid) / hdim, feature c % hdim. */
    const int hdim = hid / HEADS, cols = 3 * hid;
    for (int s = 0; s < seq; s++) {
        for (int c = 0; c < cols; c++)
            qkv[((size_t)(c / hdim) * seq + s) * hdim + c % hdim] = 0.0f;
        for (int p = 0; p < hid; p++) {
            const float xv = x[(size_t)s * hid + p];
            const float *wr = w + (size_t)p * cols;
            for (int c = 0; c < cols; c++)
                qkv[((size_t)(c / hdim) * seq + s) * hdim + c % hdim] += xv * wr[c];
        }
    }
}

void k_scores(float *s, const float *q, const float *k, int seq, int hdim)
{
    const float scale = 1.0f / sqrtf((float)hdim);
    for (int i = 0; i < seq; i++)
        for (int j = 0; j < seq; j++) {
            float acc = 0.0f;
            for (int d = 0; d < hdim; d++)
                acc += q[i * hdim + d] * k[j * hdim + d];
            s[i * seq + j] = acc * scale;
        }
}

void k_softmax(float *y, float *ws, const float *x, int rows, int cols)
{
    /* y may be x (in place): each row is only written after its max and sum are known. */
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * cols;
        float *yr = y + (size_t)r * cols;
        float mx = xr[0];
        for (int c = 1; c < cols; c++)
            mx = xr[c] > mx ? xr[c] : mx;
        float sum = 0.0f;
        for (int c = 0; c < cols; c++)
            sum += expf(xr[c] - mx);
        ws[2 * r] = mx;
        ws[2 * r + 1] = sum;
        for (int c = 0; c < cols; c++)
            yr[c] = expf(xr[c] - ws[2 * r]) / ws[2 * r + 1];
    }
}

void k_layernorm(float *y, const float *x, const float *g, const float *b, int rows, int cols)
{
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * cols;
        float mean = 0.0f, var = 0.0f;
        for (int c = 0; c < cols; c++)
            mean += xr[c];
        mean /= (float)cols;
        for (int c = 0; c < cols; c++)
            var += (xr[c] - mean) * (xr[c] - mean);
        var /= (float)cols;
        float inv = 1.0f / sqrtf(var + 1e-5f);
        for (int c = 0; c < cols; c++)
            y[(size_t)r * cols + c] = (xr[c] - mean) * inv * g[c] + b[c];
    }
}

void k_gelu(float *y, const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        float v = x[i];
        y[i] = 0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v)));
    }
}

void k_relu(float *y, const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

void k_oproj(float *y, const float *cat, const float *w, int seq, int hid)
{
    /* cat is [HEADS][seq][hdim]: row s of the merged heads is (head, feature) ascending. */
    const int hdim = hid / HEADS;
    for (int s = 0; s < seq; s++) {
        float *yr = y + (size_t)s * hid;
        for (int j = 0; j < hid; j++)
            yr[j] = 0.0f;
        for (int h = 0; h < HEADS; h++)
            for (int d = 0; d < hdim; d++) {
                const float cv = cat[((size_t)h * seq + s) * hdim + d];
                const float *wr = w + (size_t)(h * hdim + d) * hid;
                for (int j = 0; j < hid; j++)
                    yr[j] += cv * wr[j];
            }
    }
}

void kernel_run(const struct graph *g, const struct op *o, float *const *addr)
{
    const struct tensor *t = g->t;
    const int *r = o->reads, *w = o->writes;
    switch (o->kind) {
    case K_ADD:
        k_add(addr[w[0]], addr[r[0]], addr[r[1]], graph_elems(&t[w[0]]), graph_elems(&t[r[1]]),
              o->alpha);
        break;
    case K_MATMUL: {
        const struct tensor *x = &t[r[0]], *wt = &t[r[1]];
        k_matmul(addr[w[0]], addr[r[0]], addr[r[1]], x->shape[0], x->shape[1], wt->shape[1]);
        break;
    }
    case K_QKV:
        k_qkv(addr[w[0]], addr[r[0]], addr[r[1]], g->seq, g->hid);
        break;
    case K_SCORES:
        k_scores(addr[w[0]], addr[r[0]], addr[r[1]], g->seq, g->hdim);
        break;
    case K_SOFTMAX:
        k_softmax(addr[w[0]], addr[w[1]], addr[r[0]], t[r[0]].shape[0], t[r[0]].shape[1]);
        break;
    case K_LAYERNORM:
        k_layernorm(addr[w[0]], addr[r[0]], addr[r[1]], addr[r[2]], t[r[0]].shape[0],
                    t[r[0]].shape[1]);
        break;
    case K_GELU:
        k_gelu(addr[w[0]], addr[r[0]], graph_elems(&t[r[0]]));
        break;
    case K_RELU:
        k_relu(addr[w[0]], addr[r[0]], graph_elems(&t[r[0]]));
        break;
    case K_OPROJ:
        k_oproj(addr[w[0]], addr[r[0]], addr[r[1]], g->seq, g->hid);
        break;
    case K_CONCAT:
        if (o->n_writes == o->n_reads) {
            for (int i = 0; i < o->n_reads; i++)
                memmove(addr[w[i]], addr[r[i]], t[r[i]].bytes);
        } else {
            char *dst = (char *)addr[w[0]];
            for (int i = 0; i < o->n_reads; i++) {
                memmove(dst, addr[r[i]], t[r[i]].bytes);
                dst += t[r[i]].bytes;
            }
        }
        break;
    case K_SYNC_RECORD:
    case K_SYNC_WAIT:
    case K_SYNC_ALL:
        break;
    }
}
