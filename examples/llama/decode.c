/* llama_decode_tiny: a real llama.cpp decode on the prebuilt libllama. Loads a GGUF model
 * (tiny_gguf.c writes one), evaluates a prompt of token ids and decodes greedily, printing the
 * tokens and an FNV-1a hash of every step's logits (bit-exact comparison of runs). It knows
 * nothing of tlsan: under `tlsan run` the shim checks each graph llama.cpp computes.
 *
 * The parameter structs. libllama (from @node-llama-cpp/linux-x64) and llama.h (from
 * @fugood/llama.node) come from different llama.cpp commits, and the structs passed by value
 * differ between them: llama_model_params is 72 bytes in llama.h but the library writes 80
 * (fields added and reordered), llama_context_params is 160 in both with fields moved. So
 * this driver never uses the header's layout of those two: it takes the library's defaults as
 * opaque bytes of the library's size and hands them back, changing only n_ctx, the first field
 * of llama_context_params in every version. The sizes are measured at start (on x86-64 a
 * struct over 16 bytes is returned through a hidden pointer, so calling the defaults function
 * with a pre-filled buffer shows how much it writes) and the run is refused if they differ
 * from what is assumed here. The four functions taking or returning those structs are
 * resolved with dlsym and called through the opaque types. Everything else used (the batch,
 * decode, logits, vocabulary size) has kept its layout.
 *
 * Usage: llama_decode_tiny MODEL.gguf [--tokens N] [--backend-dir DIR]
 * Exit status 0; 1 on a failure; 2 on usage; 3 when the library's structs are not the assumed
 * ones. */
#include "backend.h"

#include <ggml.h>
#include <llama.h>

#include <dlfcn.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if !defined(__x86_64__)
#error "the parameter probe relies on the x86-64 System V calling convention"
#endif

#define MODEL_PARAMS_BYTES   80  /* the library's llama_model_params */
#define CONTEXT_PARAMS_BYTES 160 /* the library's llama_context_params */
#define N_CTX                256 /* the tiny model's context */

typedef struct {
    _Alignas(8) unsigned char b[MODEL_PARAMS_BYTES];
} lib_model_params;
typedef struct {
    _Alignas(8) unsigned char b[CONTEXT_PARAMS_BYTES];
} lib_context_params;

static struct {
    lib_model_params (*model_defaults)(void);
    lib_context_params (*context_defaults)(void);
    struct llama_model *(*load)(const char *path, lib_model_params params);
    struct llama_context *(*init)(struct llama_model *model, lib_context_params params);
} L;

static int resolve(void)
{
    *(void **)&L.model_defaults = dlsym(RTLD_DEFAULT, "llama_model_default_params");
    *(void **)&L.context_defaults = dlsym(RTLD_DEFAULT, "llama_context_default_params");
    *(void **)&L.load = dlsym(RTLD_DEFAULT, "llama_model_load_from_file");
    *(void **)&L.init = dlsym(RTLD_DEFAULT, "llama_init_from_model");
    return L.model_defaults && L.context_defaults && L.load && L.init ? 0 : -1;
}

/* How many bytes a defaults function writes through its hidden result pointer. */
static size_t written_bytes(const char *name)
{
    void (*fn)(void *);
    *(void **)&fn = dlsym(RTLD_DEFAULT, name);
    static unsigned char a[1024], b[1024];
    memset(a, 0xAA, sizeof a);
    memset(b, 0x55, sizeof b);
    fn(a);
    fn(b);
    size_t last = 0;
    for (size_t i = 0; i < sizeof a; i++)
        if (a[i] != 0xAA || b[i] != 0x55)
            last = i + 1;
    return last;
}

static int probe_structs(void)
{
    size_t m = written_bytes("llama_model_default_params");
    size_t c = written_bytes("llama_context_default_params");
    lib_context_params cp = L.context_defaults();
    uint32_t n_ctx;
    memcpy(&n_ctx, cp.b, sizeof n_ctx);
    /* The last field may be a bool or two short of the padded size. */
    if (m > MODEL_PARAMS_BYTES || m + 8 <= MODEL_PARAMS_BYTES || c > CONTEXT_PARAMS_BYTES ||
        c + 8 <= CONTEXT_PARAMS_BYTES || n_ctx != 512) {
        fprintf(stderr,
                "llama_decode_tiny: libllama's parameter structs are not the ones assumed "
                "(model params %zu bytes, context params %zu, default n_ctx %" PRIu32 ")\n",
                m, c, n_ctx);
        return -1;
    }
    return 0;
}

static void quiet_log(enum ggml_log_level level, const char *text, void *user)
{
    (void)user;
    if (level == GGML_LOG_LEVEL_WARN || level == GGML_LOG_LEVEL_ERROR)
        fputs(text, stderr);
}

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

int main(int argc, char **argv)
{
    const char *path = NULL, *backend_dir = NULL;
    int n_new = 8;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--tokens") == 0 && i + 1 < argc)
            n_new = atoi(argv[++i]);
        else if (strcmp(argv[i], "--backend-dir") == 0 && i + 1 < argc)
            backend_dir = argv[++i];
        else if (!path && argv[i][0] != '-')
            path = argv[i];
        else
            path = NULL, i = argc;
    }
    if (!path || n_new < 1 || n_new > 64) {
        fprintf(stderr, "usage: llama_decode_tiny MODEL.gguf [--tokens N] [--backend-dir DIR]\n");
        return 2;
    }
    llama_log_set(quiet_log, NULL);
    ggml_log_set(quiet_log, NULL);
    if (resolve() != 0 || probe_structs() != 0)
        return 3;
    int rc = 1;
    struct llama_model *model = NULL;
    struct llama_context *ctx = NULL;
    llama_backend_init();
    if (example_load_backends(backend_dir) != 0)
        goto done;
    model = L.load(path, L.model_defaults());
    if (!model) {
        fprintf(stderr, "llama_decode_tiny: cannot load %s\n", path);
        goto done;
    }
    lib_context_params cp = L.context_defaults();
    uint32_t n_ctx = N_CTX;
    memcpy(cp.b, &n_ctx, sizeof n_ctx);
    ctx = L.init(model, cp);
    if (!ctx) {
        fprintf(stderr, "llama_decode_tiny: cannot create a context\n");
        goto done;
    }
    int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));

    /* <s> and four words, then the greedy continuation. */
    llama_token tokens[5 + 64] = {1, 260, 270, 280, 290};
    int n = 5;
    struct llama_batch batch = llama_batch_get_one(tokens, n);
    printf("prompt: 1 260 270 280 290\n");
    for (int step = 0; step < n_new; step++) {
        if (llama_decode(ctx, batch) != 0) {
            fprintf(stderr, "llama_decode_tiny: llama_decode failed at step %d\n", step);
            goto done;
        }
        const float *logits = llama_get_logits_ith(ctx, -1);
        int best = 0;
        for (int i = 1; i < n_vocab; i++)
            if (logits[i] > logits[best])
                best = i;
        printf("step %d: token %d, logits fnv %016" PRIx64 "\n", step, best,
               fnv(1469598103934665603ull, logits, (size_t)n_vocab * sizeof *logits));
        tokens[n] = best;
        batch = llama_batch_get_one(&tokens[n], 1);
        n++;
    }
    rc = 0;
done:
    if (ctx)
        llama_free(ctx);
    if (model)
        llama_model_free(model);
    llama_backend_free();
    return rc;
}
