#!/usr/bin/env python3
"""Writes a tiny whisper.cpp model, for running whisper.node without a real one.

The file is whisper.cpp's own model format (read by whisper_model_load in whisper.cpp's
src/whisper.cpp): the magic "ggml" as a little-endian uint32, eleven int32 hyper-parameters,
the mel filter bank (n_mel, n_fft, floats), the vocabulary (a count, then each word as a
uint32 length and its bytes), then every tensor as n_dims, name length, type (0: f32), the
dimensions (ggml order, ne[0] first), the name and the data. The shapes are the ones
whisper_model_load creates for these hyper-parameters; the weights are deterministic
pseudo-random values, so the file is the same bytes every time and the transcript (noise:
the weights are not trained) is the same on every run.

Usage: whisper_tiny_model.py OUT.bin
"""

import struct
import sys
from array import array

HPARAMS = [
    ("n_vocab", 51864),  # English-only: no language detection
    ("n_audio_ctx", 1500),  # whisper pads its input to 30 s: 3000 mel frames, 1500 after conv2
    ("n_audio_state", 32),
    ("n_audio_head", 2),
    ("n_audio_layer", 1),
    ("n_text_ctx", 64),
    ("n_text_state", 32),
    ("n_text_head", 2),
    ("n_text_layer", 1),
    ("n_mels", 80),
    ("ftype", 0),  # all f32
]
N_FFT = 201
N_WORDS = 50256  # ordinary tokens; whisper.cpp names the special ones itself


def values(n, seed, scale):
    """n floats in [-scale, scale), from a 32-bit LCG seeded by `seed`."""
    out = array("f", bytes(4 * n))
    x = seed & 0xFFFFFFFF
    k = 2.0 * scale / 4294967296.0
    for i in range(n):
        x = (x * 1664525 + 1013904223) & 0xFFFFFFFF
        out[i] = x * k - scale
    return out


def tensors(h):
    s, ctx, tctx, mels = h["n_audio_state"], h["n_audio_ctx"], h["n_text_ctx"], h["n_mels"]
    out = [
        ("encoder.positional_embedding", [s, ctx]),
        ("encoder.conv1.weight", [3, mels, s]),
        ("encoder.conv1.bias", [1, s]),
        ("encoder.conv2.weight", [3, s, s]),
        ("encoder.conv2.bias", [1, s]),
        ("encoder.ln_post.weight", [s]),
        ("encoder.ln_post.bias", [s]),
    ]
    block = [
        ("mlp_ln.weight", [s]),
        ("mlp_ln.bias", [s]),
        ("mlp.0.weight", [s, 4 * s]),
        ("mlp.0.bias", [4 * s]),
        ("mlp.2.weight", [4 * s, s]),
        ("mlp.2.bias", [s]),
        ("attn_ln.weight", [s]),
        ("attn_ln.bias", [s]),
        ("attn.query.weight", [s, s]),
        ("attn.query.bias", [s]),
        ("attn.key.weight", [s, s]),
        ("attn.value.weight", [s, s]),
        ("attn.value.bias", [s]),
        ("attn.out.weight", [s, s]),
        ("attn.out.bias", [s]),
    ]
    for i in range(h["n_audio_layer"]):
        out += [("encoder.blocks.%d.%s" % (i, n), d) for n, d in block]
    out += [
        ("decoder.positional_embedding", [s, tctx]),
        ("decoder.token_embedding.weight", [s, h["n_vocab"]]),
        ("decoder.ln.weight", [s]),
        ("decoder.ln.bias", [s]),
    ]
    cross = [(n.replace("attn", "cross_attn", 1), d) for n, d in block if "attn" in n]
    for i in range(h["n_text_layer"]):
        out += [("decoder.blocks.%d.%s" % (i, n), d) for n, d in block + cross]
    return out


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: whisper_tiny_model.py OUT.bin")
    h = dict(HPARAMS)
    with open(sys.argv[1], "wb") as f:
        f.write(struct.pack("<I", 0x67676D6C))
        f.write(struct.pack("<11i", *[v for _, v in HPARAMS]))
        f.write(struct.pack("<ii", h["n_mels"], N_FFT))
        values(h["n_mels"] * N_FFT, 1, 0.05).tofile(f)
        f.write(struct.pack("<i", N_WORDS))
        for i in range(N_WORDS):
            # Token 0 is " ": whisper.cpp looks it up by text to suppress a blank start.
            word = (" t%d" % i if i else " ").encode()
            f.write(struct.pack("<I", len(word)) + word)
        for k, (name, dims) in enumerate(tensors(h)):
            n = 1
            for d in dims:
                n *= d
            raw = name.encode()
            f.write(struct.pack("<iii", len(dims), len(raw), 0))
            f.write(struct.pack("<%di" % len(dims), *dims) + raw)
            values(n, 1000 + k, 0.5).tofile(f)


if __name__ == "__main__":
    main()
