#!/usr/bin/env python3
"""tests/reference/random_eagle3_head: a random-weight EAGLE-3 head for a given target GGUF, in
llama.cpp's `eagle3` layout (specs/drafters.md §8.1), for tests of the drafting path on real models.

Its drafts are random, so they are almost never accepted: it exercises drafting, verification and
rollback, not acceptance (the trained heads in drafters/ do that). Deterministic for a seed.

    python3 tests/reference/random_eagle3_head.py --target models/X.gguf --out head.gguf [--draft-vocab N]
"""
import argparse

import gguf
import numpy as np


def target_shape(path):
    r = gguf.GGUFReader(path)
    arch = bytes(r.fields["general.architecture"].parts[-1]).decode()

    def u(key):
        f = r.fields[f"{arch}.{key}"]
        return int(f.parts[f.data[0]][0])

    n_vocab = len(r.fields["tokenizer.ggml.tokens"].data)
    return u("embedding_length"), u("block_count"), n_vocab


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--target", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--width", type=int, default=64, help="the head's hidden size H")
    ap.add_argument("--draft-vocab", type=int, default=512, help="compact vocabulary size (0: the target's)")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    ht, n_layer, n_vocab = target_shape(a.target)
    rng = np.random.default_rng(a.seed)
    H, n_head, n_head_kv, n_ff = a.width, 4, 2, 2 * a.width
    hd = H // n_head
    n_out = a.draft_vocab or n_vocab
    f32 = lambda x: np.ascontiguousarray(x, dtype=np.float32)
    mat = lambda rows, cols: f32(rng.standard_normal((rows, cols)) / np.sqrt(cols))
    norm = lambda n: f32(1.0 + 0.1 * rng.standard_normal(n))
    w = gguf.GGUFWriter(a.out, "eagle3")
    for key, val in [("block_count", 1), ("embedding_length", H), ("feed_forward_length", n_ff),
                     ("attention.head_count", n_head), ("attention.head_count_kv", n_head_kv),
                     ("context_length", 8192), ("vocab_size", n_vocab), ("rope.dimension_count", hd),
                     ("target_hidden_size", ht)]:
        w.add_uint32(f"eagle3.{key}", val)
    w.add_float32("eagle3.rope.freq_base", 10000.0)
    w.add_float32("eagle3.attention.layer_norm_rms_epsilon", 1e-5)
    w.add_array("eagle3.target_layers", [2, n_layer // 2, n_layer - 3])
    w.add_tensor("token_embd.weight", f32(rng.standard_normal((n_vocab, H))))
    w.add_tensor("fc.weight", mat(H, 3 * ht))
    if a.draft_vocab:
        w.add_tensor("d2t", np.sort(rng.choice(n_vocab, n_out, replace=False)).astype(np.int64))
    w.add_tensor("blk.0.attn_norm.weight", norm(H))
    w.add_tensor("blk.0.attn_norm_2.weight", norm(H))
    w.add_tensor("blk.0.attn_q.weight", mat(n_head * hd, 2 * H))
    w.add_tensor("blk.0.attn_k.weight", mat(n_head_kv * hd, 2 * H))
    w.add_tensor("blk.0.attn_v.weight", mat(n_head_kv * hd, 2 * H))
    w.add_tensor("blk.0.attn_output.weight", mat(H, n_head * hd))
    w.add_tensor("blk.0.ffn_norm.weight", norm(H))
    w.add_tensor("blk.0.ffn_gate.weight", mat(n_ff, H))
    w.add_tensor("blk.0.ffn_up.weight", mat(n_ff, H))
    w.add_tensor("blk.0.ffn_down.weight", mat(H, n_ff))
    w.add_tensor("output_norm.weight", norm(H))
    w.add_tensor("output.weight", mat(n_out, H) * 4.0)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    main()
