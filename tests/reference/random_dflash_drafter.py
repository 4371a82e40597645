#!/usr/bin/env python3
"""tests/reference/random_dflash_drafter: a random-weight DFlash drafter for a given target GGUF, in llama.cpp's
`dflash` layout or the fork's `dflash-draft` one (specs/drafters.md §2.3, §8.2), for tests of the drafting
path on real models.

Its drafts are random, so they are almost never accepted: it exercises drafting, verification and
rollback, not acceptance. It uses the target's token embeddings; its head is the target's, or its own over a
compact vocabulary (d2t). Deterministic for a seed.

    python3 tests/reference/random_dflash_drafter.py --target models/X.gguf --out drafter.gguf
        [--dialect dflash|dflash-draft] [--draft-vocab N] [--block-size B]
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
    ap.add_argument("--dialect", choices=["dflash", "dflash-draft"], default="dflash")
    ap.add_argument("--draft-vocab", type=int, default=0, help="compact vocabulary size (0: the target's head)")
    ap.add_argument("--block-size", type=int, default=16)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    H, n_layer, n_vocab = target_shape(a.target)
    rng = np.random.default_rng(a.seed)
    n_head, n_head_kv, hd, n_ff = 4, 2, 64, 2 * H
    hf_ids = [1, n_layer // 2, n_layer - 3]  # HF layer outputs; llama.cpp stores them + 1 (layer inputs)
    f32 = lambda x: np.ascontiguousarray(x, dtype=np.float32)
    mat = lambda rows, cols: f32(rng.standard_normal((rows, cols)) / np.sqrt(cols))
    norm = lambda n: f32(1.0 + 0.1 * rng.standard_normal(n))
    fork = a.dialect == "dflash-draft"
    p = a.dialect
    w = gguf.GGUFWriter(a.out, p)
    for key, val in [("block_count", 1), ("embedding_length", H), ("feed_forward_length", n_ff),
                     ("attention.head_count", n_head), ("attention.head_count_kv", n_head_kv),
                     ("attention.key_length", hd), ("attention.value_length", hd), ("context_length", 8192)]:
        w.add_uint32(f"{p}.{key}", val)
    w.add_float32(f"{p}.rope.freq_base", 1e6)
    w.add_float32(f"{p}.attention.layer_norm_rms_epsilon", 1e-6)
    mask = n_vocab - 1
    if fork:
        w.add_uint32(f"{p}.dflash.block_size", a.block_size)
        w.add_uint32(f"{p}.dflash.mask_token_id", mask)
        w.add_array(f"{p}.dflash.target_layer_ids", hf_ids)
        w.add_uint32(f"{p}.dflash.n_target_features", len(hf_ids) * H)
        w.add_bool(f"{p}.attention.causal", False)
    else:
        w.add_uint32(f"{p}.block_size", a.block_size)
        w.add_mask_token_id(mask)
        w.add_array(f"{p}.target_layers", [i + 1 for i in hf_ids])
    w.add_tensor("dflash_fc.weight" if fork else "fc.weight", mat(H, len(hf_ids) * H))
    w.add_tensor("dflash_hidden_norm.weight" if fork else "enc.output_norm.weight", norm(H))
    w.add_tensor("output_norm.weight", norm(H))
    if a.draft_vocab:
        w.add_tensor("output.weight", mat(a.draft_vocab, H) * 4.0)
        w.add_tensor("d2t", np.sort(rng.choice(n_vocab, a.draft_vocab, replace=False)).astype(np.int64))
    b = "blk.0."
    w.add_tensor(b + "attn_norm.weight", norm(H))
    w.add_tensor(b + "attn_q.weight", mat(n_head * hd, H))
    w.add_tensor(b + "attn_k.weight", mat(n_head_kv * hd, H))
    w.add_tensor(b + "attn_v.weight", mat(n_head_kv * hd, H))
    w.add_tensor(b + "attn_output.weight", mat(H, n_head * hd))
    w.add_tensor(b + "attn_q_norm.weight", norm(hd))
    w.add_tensor(b + "attn_k_norm.weight", norm(hd))
    w.add_tensor(b + ("post_attention_norm.weight" if fork else "ffn_norm.weight"), norm(H))
    w.add_tensor(b + "ffn_gate.weight", mat(n_ff, H))
    w.add_tensor(b + "ffn_up.weight", mat(n_ff, H))
    w.add_tensor(b + "ffn_down.weight", mat(H, n_ff))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    main()
