#!/usr/bin/env python3
"""The MLP of examples/ggml (graph "mlp") computed in plain Python from the same
deterministic weights and input, compared with the probabilities ggml_graphs printed.

A guard against ABI drift the layout checks could miss: if the headers and the library
disagreed on shapes, strides or op semantics, ggml would compute other numbers. ggml's CPU
GELU goes through a float16 table, so agreement is to 2e-3, not bit for bit.
Usage: ggml_mlp_ref.py OUTPUT_OF_GGML_GRAPHS  (exit 0 when they agree)"""
import math
import struct
import sys

M64 = (1 << 64) - 1


def fill(n, name):
    """graph_fill of examples/ggml/graphs.c: FNV-1a of the name seeds an xorshift stream."""
    s = 1469598103934665603
    for ch in name.encode():
        s = ((s ^ ch) * 1099511628211) & M64
    s = s or 1
    out = []
    for _ in range(n):
        s ^= (s << 13) & M64
        s ^= s >> 7
        s ^= (s << 17) & M64
        out.append(((s >> 40) - (1 << 23)) / float(1 << 23))
    return out


def dense(xs, name, n_in, n_out, act):
    """act(w x + b) per batch vector; ggml's w [n_in, n_out] holds output j's row at j*n_in."""
    w = fill(n_in * n_out, name + ".weight")
    b = fill(n_out, name + ".bias")
    ys = []
    for v in xs:
        y = [sum(w[j * n_in + i] * v[i] for i in range(n_in)) + b[j] for j in range(n_out)]
        if act == "gelu":
            y = [0.5 * t * (1 + math.tanh(math.sqrt(2 / math.pi) * (t + 0.044715 * t**3)))
                 for t in y]
        elif act == "silu":
            y = [t / (1 + math.exp(-t)) for t in y]
        ys.append(y)
    return ys


def main():
    flat = fill(16 * 4, "x")
    x = [flat[k * 16:(k + 1) * 16] for k in range(4)]
    logits = dense(dense(dense(x, "fc1", 16, 32, "gelu"), "fc2", 32, 32, "silu"), "fc3", 32, 8,
                   None)
    want = []
    for v in logits:
        e = [math.exp(t - max(v)) for t in v]
        want += [t / sum(e) for t in e]
    words, on = [], False
    for line in open(sys.argv[1]):
        if line.startswith("run "):
            on = line.startswith("run 0 output probs")
            continue
        if on:
            words += line.split()
    got = [struct.unpack(">f", bytes.fromhex(w))[0] for w in words]
    if len(got) != len(want):
        print(f"expected {len(want)} probabilities, got {len(got)}")
        return 1
    err = max(abs(a - b) for a, b in zip(got, want))
    print(f"mlp: max abs difference from the Python reference {err:.2e}")
    return 0 if err < 2e-3 else 1


if __name__ == "__main__":
    sys.exit(main())
