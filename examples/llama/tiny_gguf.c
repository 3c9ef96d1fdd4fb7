/* tiny_gguf: writes a tiny random-weight llama model as GGUF, with ggml's gguf API, for the
 * llama.cpp decode under tlsan (decode.c, tests/shim/llama.sh).
 *
 * Architecture "llama": 2 blocks, model width 64, 4 query heads and 2 key/value heads of 16
 * (grouped-query attention), feed-forward width 128 (SwiGLU), context 256, float32 weights.
 * Vocabulary of 300 in the SentencePiece ("llama") layout llama.cpp expects: <unk>, <s>, </s>,
 * the 256 byte tokens <0x00>..<0xFF> (it looks up <0x0A> for the newline), then 41 words.
 * Weights come from a fixed xorshift stream, so the file is the same bytes on every run.
 *
 * Usage: tiny_gguf OUT.gguf. Exit status 0, 1 on failure. */
#include <ggml.h>
#include <gguf.h>

#include <stdint.h>
#include <stdio.h>
#include <string.h>

enum {
    N_EMBD = 64,
    N_LAYER = 2,
    N_FF = 128,
    N_HEAD = 4,
    N_HEAD_KV = 2,
    N_VOCAB = 300,
    N_CTX = 256,
    HEAD_DIM = N_EMBD / N_HEAD,
};

struct writer {
    struct ggml_context *ctx; /* holds the tensors and their data until the file is written */
    struct gguf_context *gguf;
    uint64_t state;
};

static float next_value(struct writer *w)
{
    w->state ^= w->state << 13;
    w->state ^= w->state >> 7;
    w->state ^= w->state << 17;
    return (float)((int32_t)(w->state >> 40) - (1 << 23)) / (float)(1 << 23);
}

/* A float32 tensor of ne0 (x ne1) values bias + scale * uniform[-1, 1). */
static void add_tensor(struct writer *w, const char *name, int64_t ne0, int64_t ne1, float scale,
                       float bias)
{
    struct ggml_tensor *t = ne1 ? ggml_new_tensor_2d(w->ctx, GGML_TYPE_F32, ne0, ne1)
                                : ggml_new_tensor_1d(w->ctx, GGML_TYPE_F32, ne0);
    ggml_set_name(t, name);
    float *data = ggml_get_data(t);
    for (int64_t i = 0; i < ggml_nelements(t); i++)
        data[i] = bias + scale * next_value(w);
    gguf_add_tensor(w->gguf, t);
}

static void add_metadata(struct gguf_context *g)
{
    gguf_set_val_str(g, "general.architecture", "llama");
    gguf_set_val_str(g, "general.name", "tlsan-tiny-llama");
    gguf_set_val_u32(g, "llama.context_length", N_CTX);
    gguf_set_val_u32(g, "llama.embedding_length", N_EMBD);
    gguf_set_val_u32(g, "llama.block_count", N_LAYER);
    gguf_set_val_u32(g, "llama.feed_forward_length", N_FF);
    gguf_set_val_u32(g, "llama.attention.head_count", N_HEAD);
    gguf_set_val_u32(g, "llama.attention.head_count_kv", N_HEAD_KV);
    gguf_set_val_f32(g, "llama.attention.layer_norm_rms_epsilon", 1e-5f);
    gguf_set_val_u32(g, "llama.rope.dimension_count", HEAD_DIM);
    gguf_set_val_u32(g, "llama.vocab_size", N_VOCAB);
}

/* Token types of llama.cpp's SentencePiece vocabulary: 1 normal, 2 unknown, 3 control,
 * 6 byte. */
static void add_vocabulary(struct gguf_context *g)
{
    static char text[N_VOCAB][16];
    const char *tokens[N_VOCAB];
    float scores[N_VOCAB];
    int32_t types[N_VOCAB];
    for (int i = 0; i < N_VOCAB; i++) {
        if (i == 0) {
            snprintf(text[i], sizeof text[i], "<unk>");
            types[i] = 2;
        } else if (i <= 2) {
            snprintf(text[i], sizeof text[i], i == 1 ? "<s>" : "</s>");
            types[i] = 3;
        } else if (i < 3 + 256) {
            snprintf(text[i], sizeof text[i], "<0x%02X>", i - 3);
            types[i] = 6;
        } else {
            /* U+2581, SentencePiece's word-start mark, then a word. */
            snprintf(text[i], sizeof text[i], "\xe2\x96\x81w%d", i - 259);
            types[i] = 1;
        }
        tokens[i] = text[i];
        scores[i] = -(float)i;
    }
    gguf_set_val_str(g, "tokenizer.ggml.model", "llama");
    gguf_set_arr_str(g, "tokenizer.ggml.tokens", tokens, N_VOCAB);
    gguf_set_arr_data(g, "tokenizer.ggml.scores", GGUF_TYPE_FLOAT32, scores, N_VOCAB);
    gguf_set_arr_data(g, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, types, N_VOCAB);
    gguf_set_val_u32(g, "tokenizer.ggml.unknown_token_id", 0);
    gguf_set_val_u32(g, "tokenizer.ggml.bos_token_id", 1);
    gguf_set_val_u32(g, "tokenizer.ggml.eos_token_id", 2);
}

/* llama.cpp's tensor names for the llama architecture. Norm weights scatter around 1. */
static void add_weights(struct writer *w)
{
    add_tensor(w, "token_embd.weight", N_EMBD, N_VOCAB, 0.5f, 0);
    add_tensor(w, "output_norm.weight", N_EMBD, 0, 0.1f, 1);
    add_tensor(w, "output.weight", N_EMBD, N_VOCAB, 0.3f, 0);
    static const struct {
        const char *name;
        int64_t ne0, ne1;
        float scale, bias;
    } block[] = {
        {"attn_norm.weight", N_EMBD, 0, 0.1f, 1},
        {"attn_q.weight", N_EMBD, N_EMBD, 0.3f, 0},
        {"attn_k.weight", N_EMBD, HEAD_DIM * N_HEAD_KV, 0.3f, 0},
        {"attn_v.weight", N_EMBD, HEAD_DIM * N_HEAD_KV, 0.3f, 0},
        {"attn_output.weight", N_EMBD, N_EMBD, 0.3f, 0},
        {"ffn_norm.weight", N_EMBD, 0, 0.1f, 1},
        {"ffn_gate.weight", N_EMBD, N_FF, 0.3f, 0},
        {"ffn_up.weight", N_EMBD, N_FF, 0.3f, 0},
        {"ffn_down.weight", N_FF, N_EMBD, 0.3f, 0},
    };
    for (int l = 0; l < N_LAYER; l++)
        for (size_t k = 0; k < sizeof block / sizeof block[0]; k++) {
            char name[GGML_MAX_NAME];
            snprintf(name, sizeof name, "blk.%d.%s", l, block[k].name);
            add_tensor(w, name, block[k].ne0, block[k].ne1, block[k].scale, block[k].bias);
        }
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: tiny_gguf OUT.gguf\n");
        return 2;
    }
    int rc = 1;
    struct writer w = {.state = 88172645463325252ull};
    struct ggml_init_params params = {.mem_size = 8u << 20, .no_alloc = false};
    w.ctx = ggml_init(params);
    w.gguf = gguf_init_empty();
    if (!w.ctx || !w.gguf)
        goto done;
    add_metadata(w.gguf);
    add_vocabulary(w.gguf);
    add_weights(&w);
    if (!gguf_write_to_file(w.gguf, argv[1], false)) {
        fprintf(stderr, "tiny_gguf: cannot write %s\n", argv[1]);
        goto done;
    }
    rc = 0;
done:
    if (w.gguf)
        gguf_free(w.gguf);
    if (w.ctx)
        ggml_free(w.ctx);
    return rc;
}
