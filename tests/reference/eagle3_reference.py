#!/usr/bin/env python3
"""tests/reference/eagle3_reference: tiny random EAGLE-3 heads in llama.cpp's `eagle3` GGUF layout, and
the outputs of an independent float64 numpy forward written from the EAGLE-3 reference (HF layout,
rotate-half rope), for tests/unit/spec/test_eagle3_reference.cpp.

For each case it writes OUT/<case>.head.gguf (the head: Q/K rows permuted as llama.cpp's
converter does, d2t as i64 absolute ids) and OUT/<case>.io.gguf (inputs and expected outputs).
Deterministic: run it again and the files are identical. The heads are random weights, so they are
written at test time and never committed. Needs numpy and the gguf package only.

    python3 tests/reference/eagle3_reference.py --out build/eagle3_reference   (ctest runs this before test_spec)
"""
import argparse
import os

import gguf
import numpy as np

CASES = {
    # d2t, enc.output_norm before fc, attention residual on g, grouped KV heads.
    "a": dict(H=32, Ht=32, n_head=4, n_head_kv=2, n_ff=48, n_vocab=96, n_draft=40, norm_before_fc=True,
              norm_before_residual=False, rope_base=10000.0, layers=[1, 2, 3], n_layer=4, n_rows=5, seed=1),
    # the target's whole vocabulary, a wider target (H_t != H), residual on the normed g.
    "b": dict(H=32, Ht=48, n_head=2, n_head_kv=2, n_ff=64, n_vocab=96, n_draft=0, norm_before_fc=False,
              norm_before_residual=True, rope_base=500000.0, layers=[0, 2, 5], n_layer=5, n_rows=4, seed=2),
}
EPS = 1e-5


def rms(x, w):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + EPS) * w


def rope_half(x, pos, base):
    """HF rotate-half rope on (n_head, hd) at position pos."""
    hd = x.shape[-1]
    inv = base ** (-np.arange(0, hd, 2, dtype=np.float64) / hd)
    ang = np.concatenate([pos * inv, pos * inv])
    rot = np.concatenate([-x[..., hd // 2:], x[..., : hd // 2]], axis=-1)
    return x * np.cos(ang) + rot * np.sin(ang)


def permute_for_gguf(w, n_head):
    """llama.cpp's converter permutation of HF q/k rows, so its adjacent-pair rope equals rotate-half."""
    out, inp = w.shape
    return w.reshape(n_head, 2, out // n_head // 2, inp).swapaxes(1, 2).reshape(out, inp)


def make_weights(c, rng):
    H, Ht, hd = c["H"], c["Ht"], c["H"] // c["n_head"]
    nq, nk = c["n_head"] * hd, c["n_head_kv"] * hd
    n_out = c["n_draft"] or c["n_vocab"]

    def mat(rows, cols):
        return rng.standard_normal((rows, cols)) / np.sqrt(cols)

    def norm(n):
        return 1.0 + 0.1 * rng.standard_normal(n)

    w = dict(fc=mat(H, 3 * Ht), embed=rng.standard_normal((c["n_vocab"], H)), input_norm=norm(H),
             hidden_norm=norm(H), q=mat(nq, 2 * H), k=mat(nk, 2 * H), v=mat(nk, 2 * H), o=mat(H, nq),
             post_norm=norm(H), gate=mat(c["n_ff"], H), up=mat(c["n_ff"], H), down=mat(H, c["n_ff"]),
             norm=norm(H), lm_head=mat(n_out, H) * 4.0)
    if c["norm_before_fc"]:
        w["fc_norm"] = norm(3 * Ht)
    if c["n_draft"]:
        w["d2t_ids"] = np.sort(rng.choice(c["n_vocab"], c["n_draft"], replace=False)).astype(np.int64)
    return w


class Head:
    """The EAGLE-3 midlayer on HF-layout weights, with its own KV (float64)."""

    def __init__(self, c, w):
        self.c, self.w = c, w
        self.hd = c["H"] // c["n_head"]
        self.ks, self.vs = [], []

    def encode(self, feats):
        x = rms(feats, self.w["fc_norm"]) if self.c["norm_before_fc"] else feats
        return x @ self.w["fc"].T

    def decode_row(self, token, pos, g):
        c, w, hd = self.c, self.w, self.hd
        e = w["embed"][token]
        gn = rms(g, w["hidden_norm"])
        x2 = np.concatenate([rms(e, w["input_norm"]), gn])
        q = rope_half((w["q"] @ x2).reshape(c["n_head"], hd), pos, c["rope_base"])
        k = rope_half((w["k"] @ x2).reshape(c["n_head_kv"], hd), pos, c["rope_base"])
        self.ks.append(k)
        self.vs.append((w["v"] @ x2).reshape(c["n_head_kv"], hd))
        K, V = np.stack(self.ks), np.stack(self.vs)  # (cells, n_head_kv, hd)
        group = c["n_head"] // c["n_head_kv"]
        att = np.zeros((c["n_head"], hd))
        for h in range(c["n_head"]):
            s = K[:, h // group] @ q[h] / np.sqrt(hd)
            p = np.exp(s - s.max())
            att[h] = (p / p.sum()) @ V[:, h // group]
        h1 = (gn if c["norm_before_residual"] else g) + w["o"] @ att.reshape(-1)
        hn = rms(h1, w["post_norm"])
        a = w["gate"] @ hn
        out = h1 + w["down"] @ (a / (1.0 + np.exp(-a)) * (w["up"] @ hn))
        return out, w["lm_head"] @ rms(out, w["norm"])

    def target_id(self, draft_id):
        return int(self.w["d2t_ids"][draft_id]) if self.c["n_draft"] else int(draft_id)


def write_head(path, c, w):
    hd = c["H"] // c["n_head"]
    wr = gguf.GGUFWriter(path, "eagle3")
    wr.add_uint32("eagle3.block_count", 1)
    wr.add_uint32("eagle3.embedding_length", c["H"])
    wr.add_uint32("eagle3.feed_forward_length", c["n_ff"])
    wr.add_uint32("eagle3.attention.head_count", c["n_head"])
    wr.add_uint32("eagle3.attention.head_count_kv", c["n_head_kv"])
    wr.add_uint32("eagle3.context_length", 2048)
    wr.add_uint32("eagle3.vocab_size", c["n_vocab"])
    wr.add_uint32("eagle3.rope.dimension_count", hd)
    wr.add_float32("eagle3.rope.freq_base", c["rope_base"])
    wr.add_float32("eagle3.attention.layer_norm_rms_epsilon", EPS)
    wr.add_array("eagle3.target_layers", [int(i) for i in c["layers"]])
    wr.add_uint32("eagle3.target_hidden_size", c["Ht"])
    wr.add_bool("eagle3.norm_before_residual", c["norm_before_residual"])
    wr.add_bool("eagle3.norm_before_fc", c["norm_before_fc"])
    f32 = lambda a: np.ascontiguousarray(a, dtype=np.float32)
    wr.add_tensor("token_embd.weight", f32(w["embed"]))
    wr.add_tensor("fc.weight", f32(w["fc"]))
    if c["norm_before_fc"]:
        wr.add_tensor("enc.output_norm.weight", f32(w["fc_norm"]))
    if c["n_draft"]:
        wr.add_tensor("d2t", w["d2t_ids"])
    wr.add_tensor("blk.0.attn_norm.weight", f32(w["input_norm"]))
    wr.add_tensor("blk.0.attn_norm_2.weight", f32(w["hidden_norm"]))
    wr.add_tensor("blk.0.attn_q.weight", f32(permute_for_gguf(w["q"], c["n_head"])))
    wr.add_tensor("blk.0.attn_k.weight", f32(permute_for_gguf(w["k"], c["n_head_kv"])))
    wr.add_tensor("blk.0.attn_v.weight", f32(w["v"]))
    wr.add_tensor("blk.0.attn_output.weight", f32(w["o"]))
    wr.add_tensor("blk.0.ffn_norm.weight", f32(w["post_norm"]))
    wr.add_tensor("blk.0.ffn_gate.weight", f32(w["gate"]))
    wr.add_tensor("blk.0.ffn_up.weight", f32(w["up"]))
    wr.add_tensor("blk.0.ffn_down.weight", f32(w["down"]))
    wr.add_tensor("output_norm.weight", f32(w["norm"]))
    wr.add_tensor("output.weight", f32(w["lm_head"]))
    wr.write_header_to_file()
    wr.write_kv_data_to_file()
    wr.write_tensors_to_file()
    wr.close()


def run_case(name, c, out_dir):
    rng = np.random.default_rng(c["seed"])
    w = make_weights(c, rng)
    head = Head(c, w)
    n = c["n_rows"]
    # Step A: target rows 0..n-1; row p pairs the target's features at p with the token at p + 1.
    feats = rng.standard_normal((n, 3 * c["Ht"]))
    tokens = rng.integers(0, c["n_vocab"], n).astype(np.int32)
    g = head.encode(feats)
    hid_a, log_a = zip(*[head.decode_row(int(tokens[p]), p, g[p]) for p in range(n)])
    # Step B: one draft step deeper: the greedy draft token, fed the head's own pre-norm output.
    token_b = head.target_id(int(np.argmax(log_a[-1])))
    hid_b, log_b = head.decode_row(token_b, n, hid_a[-1])
    wr = gguf.GGUFWriter(os.path.join(out_dir, f"{name}.io.gguf"), "eagle3_reference")
    wr.add_uint32("ref.target_n_layer", c["n_layer"])
    wr.add_uint32("ref.target_n_vocab", c["n_vocab"])
    f32 = lambda a: np.ascontiguousarray(a, dtype=np.float32)
    wr.add_tensor("features", f32(feats))             # (n, 3 H_t)
    wr.add_tensor("tokens", tokens)                   # (n)
    wr.add_tensor("g", f32(g))                        # (n, H)
    wr.add_tensor("hidden_a", f32(np.stack(hid_a)))   # (n, H)
    wr.add_tensor("logits_a", f32(np.stack(log_a)))   # (n, n_draft)
    wr.add_tensor("token_b", np.array([token_b], dtype=np.int32))
    wr.add_tensor("hidden_b", f32(hid_b[None]))       # (1, H)
    wr.add_tensor("logits_b", f32(log_b[None]))       # (1, n_draft)
    wr.write_header_to_file()
    wr.write_kv_data_to_file()
    wr.write_tensors_to_file()
    wr.close()
    write_head(os.path.join(out_dir, f"{name}.head.gguf"), c, w)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="folder for the files (ctest uses build/eagle3_reference)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for name, c in CASES.items():
        run_case(name, c, args.out)
        print(f"wrote {args.out}/{name}.head.gguf and {name}.io.gguf")


if __name__ == "__main__":
    main()
