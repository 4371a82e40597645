#!/usr/bin/env python3
"""tests/reference/dflash_reference: tiny random DFlash drafters in both GGUF dialects (llama.cpp's `dflash`,
the fork's `dflash-draft`) and the outputs of an independent float64 numpy forward written from the DFlash
reference (z-lab dflash/model.py: HF layout, rotate-half rope), for tests/unit/spec/test_dflash_reference.cpp.

The reference: fused = hidden_norm(fc(features) * fc_scale) per context token; in every layer the context
enters as K = rope(k_norm(Wk fused)) at its position and V = Wv fused (no attn_norm), the block
[last, mask x n] is embedded, its rows attend non-causally to the last `cross_ctx` context tokens and to
each other (sliding-window layers: only keys less than n_swa positions behind), Qwen3 layers with q/k
norms and SwiGLU; the final norm and the head score rows 1..n (row i predicts the token at its position).

For each case it writes OUT/<case>.drafter.gguf and OUT/<case>.io.gguf (inputs and expected outputs).
Deterministic; random weights, so written at test time and never committed. Needs numpy and gguf only.

    python3 tests/reference/dflash_reference.py --out build/dflash_reference   (ctest runs this before test_spec)
"""
import argparse
import os

import gguf
import numpy as np

CASES = {
    # llama.cpp's dialect: 2 layers (the first sliding), grouped KV heads, head_dim * n_head != H, fc.scale
    # (small enough that the norm's eps sees it), its own token_embd, a compact vocabulary (d2t + output), a
    # window shorter than the context.
    "llama": dict(dialect="dflash", H=32, n_head=4, n_head_kv=2, hd=16, n_layer=2, n_ff=48, n_vocab=96,
                  n_draft_vocab=40, own_embd=True, fc_scale=1e-3, n_swa=4, swa=[True, False],
                  layers=[1, 3, 4], target_n_layer=5, block_size=5, mask=95, rope_base=1e6,
                  n_ctx=9, cross_ctx=6, n_draft_a=4, cut_b=7, n_draft_b=2, seed=11),
    # the fork's dialect: 1 layer, the target's embeddings and head, HF layer ids, the whole context.
    "fork": dict(dialect="dflash-draft", H=32, n_head=2, n_head_kv=2, hd=16, n_layer=1, n_ff=64, n_vocab=96,
                 n_draft_vocab=0, own_embd=False, fc_scale=1.0, n_swa=0, swa=[False],
                 layers=[0, 2], target_n_layer=3, block_size=4, mask=3, rope_base=10000.0,
                 n_ctx=7, cross_ctx=512, n_draft_a=3, cut_b=5, n_draft_b=1, seed=12),
}
EPS = 1e-6


def rms(x, w):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + EPS) * w


def rope_half(x, pos, base):
    """HF rotate-half rope on (n, n_head, hd) at positions pos (n)."""
    hd = x.shape[-1]
    inv = base ** (-np.arange(0, hd, 2, dtype=np.float64) / hd)
    ang = np.asarray(pos, dtype=np.float64)[:, None] * inv[None, :]
    ang = np.concatenate([ang, ang], axis=-1)[:, None, :]
    rot = np.concatenate([-x[..., hd // 2:], x[..., : hd // 2]], axis=-1)
    return x * np.cos(ang) + rot * np.sin(ang)


def make_weights(c, rng):
    H, hd, n_taps = c["H"], c["hd"], len(c["layers"])
    nq, nk = c["n_head"] * hd, c["n_head_kv"] * hd

    def mat(rows, cols):
        return rng.standard_normal((rows, cols)) / np.sqrt(cols)

    def norm(n):
        return 1.0 + 0.1 * rng.standard_normal(n)

    w = dict(fc=mat(H, n_taps * H), hidden_norm=norm(H), norm=norm(H),
             target_embed=rng.standard_normal((c["n_vocab"], H)), target_head=mat(c["n_vocab"], H) * 4.0)
    w["embed"] = rng.standard_normal((c["n_vocab"], H)) if c["own_embd"] else w["target_embed"]
    w["lm_head"] = mat(c["n_draft_vocab"], H) * 4.0 if c["n_draft_vocab"] else w["target_head"]
    if c["n_draft_vocab"]:
        w["d2t_ids"] = np.sort(rng.choice(c["n_vocab"], c["n_draft_vocab"], replace=False)).astype(np.int64)
    w["layers"] = [dict(input_norm=norm(H), q=mat(nq, H), k=mat(nk, H), v=mat(nk, H), o=mat(H, nq),
                        q_norm=norm(hd), k_norm=norm(hd), post_norm=norm(H), gate=mat(c["n_ff"], H),
                        up=mat(c["n_ff"], H), down=mat(H, c["n_ff"])) for _ in range(c["n_layer"])]
    return w


class Drafter:
    """The DFlash draft network on HF-layout weights (float64)."""

    def __init__(self, c, w):
        self.c, self.w = c, w

    def heads(self, x, n_head):
        return x.reshape(x.shape[0], n_head, self.c["hd"])

    def context(self, feats, pos):
        """Per layer (K, V) of the context tokens: (n, n_head_kv, hd) each."""
        c, w = self.c, self.w
        fused = rms(feats @ w["fc"].T * c["fc_scale"], w["hidden_norm"])
        out = []
        for L in w["layers"]:
            k = rope_half(rms(self.heads(fused @ L["k"].T, c["n_head_kv"]), L["k_norm"]), pos, c["rope_base"])
            out.append((k, self.heads(fused @ L["v"].T, c["n_head_kv"])))
        return out

    def block(self, ctx_kv, ctx_pos, tokens, pos0):
        c, w = self.c, self.w
        n = len(tokens)
        pos = pos0 + np.arange(n)
        group = c["n_head"] // c["n_head_kv"]
        x = w["embed"][tokens]
        for il, L in enumerate(w["layers"]):
            h = rms(x, L["input_norm"])
            q = rope_half(rms(self.heads(h @ L["q"].T, c["n_head"]), L["q_norm"]), pos, c["rope_base"])
            k = rope_half(rms(self.heads(h @ L["k"].T, c["n_head_kv"]), L["k_norm"]), pos, c["rope_base"])
            v = self.heads(h @ L["v"].T, c["n_head_kv"])
            K = np.concatenate([ctx_kv[il][0], k])
            V = np.concatenate([ctx_kv[il][1], v])
            kpos = np.concatenate([ctx_pos, pos])
            att = np.zeros((n, c["n_head"], c["hd"]))
            for i in range(n):
                vis = (pos[i] - kpos < c["n_swa"]) if c["swa"][il] else np.ones(len(kpos), dtype=bool)
                for hh in range(c["n_head"]):
                    s = K[vis, hh // group] @ q[i, hh] / np.sqrt(c["hd"])
                    p = np.exp(s - s.max())
                    att[i, hh] = (p / p.sum()) @ V[vis, hh // group]
            x = x + att.reshape(n, -1) @ L["o"].T
            hn = rms(x, L["post_norm"])
            a = hn @ L["gate"].T
            x = x + (a / (1.0 + np.exp(-a)) * (hn @ L["up"].T)) @ L["down"].T
        return (rms(x, w["norm"]) @ w["lm_head"].T)[1:]

    def draft(self, feats, ctx_pos, last, pos0, n_draft):
        """Logits (n_draft, n_draft_vocab) of the block at pos0 over the last cross_ctx context tokens before it."""
        keep = np.nonzero(ctx_pos < pos0)[0][-self.c["cross_ctx"]:]
        ctx_kv = self.context(feats[keep], ctx_pos[keep])
        tokens = np.array([last] + [self.c["mask"]] * n_draft)
        return self.block(ctx_kv, ctx_pos[keep], tokens, pos0)


def read_drafter(path, embed, cross_ctx):
    """(config, weights, d2t, GGUF fields) of a drafter file in llama.cpp's dialect that has no token_embd (the
    target's embedding `embed` stands in), its tensors dequantized by gguf-py, for Drafter(config, weights)."""
    r = gguf.GGUFReader(str(path))
    f = r.fields
    T = {t.name: np.array(t.data) if t.name == "d2t" else
         gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float64) for t in r.tensors}
    u = lambda k: f[f"dflash.{k}"].contents()
    c = dict(H=u("embedding_length"), n_head=u("attention.head_count"), n_head_kv=u("attention.head_count_kv"),
             hd=u("attention.key_length"), mask=f["tokenizer.ggml.mask_token_id"].contents(), n_swa=0,
             swa=[False] * u("block_count"), rope_base=u("rope.freq_base"), fc_scale=1.0, cross_ctx=cross_ctx)
    w = dict(fc=T["fc.weight"], hidden_norm=T["enc.output_norm.weight"], norm=T["output_norm.weight"],
             embed=np.asarray(embed, dtype=np.float64), lm_head=T["output.weight"])
    w["layers"] = [dict(input_norm=T[f"blk.{i}.attn_norm.weight"], q=T[f"blk.{i}.attn_q.weight"],
                        k=T[f"blk.{i}.attn_k.weight"], v=T[f"blk.{i}.attn_v.weight"],
                        o=T[f"blk.{i}.attn_output.weight"], q_norm=T[f"blk.{i}.attn_q_norm.weight"],
                        k_norm=T[f"blk.{i}.attn_k_norm.weight"], post_norm=T[f"blk.{i}.ffn_norm.weight"],
                        gate=T[f"blk.{i}.ffn_gate.weight"], up=T[f"blk.{i}.ffn_up.weight"],
                        down=T[f"blk.{i}.ffn_down.weight"]) for i in range(u("block_count"))]
    return c, w, T["d2t"].astype(np.int64), f


def write_drafter(path, c, w):
    fork = c["dialect"] == "dflash-draft"
    a = c["dialect"]
    wr = gguf.GGUFWriter(path, a)
    wr.add_uint32(f"{a}.block_count", c["n_layer"])
    wr.add_uint32(f"{a}.embedding_length", c["H"])
    wr.add_uint32(f"{a}.feed_forward_length", c["n_ff"])
    wr.add_uint32(f"{a}.attention.head_count", c["n_head"])
    wr.add_uint32(f"{a}.attention.head_count_kv", c["n_head_kv"])
    wr.add_uint32(f"{a}.attention.key_length", c["hd"])
    wr.add_uint32(f"{a}.attention.value_length", c["hd"])
    wr.add_uint32(f"{a}.context_length", 4096)
    wr.add_float32(f"{a}.rope.freq_base", c["rope_base"])
    wr.add_float32(f"{a}.attention.layer_norm_rms_epsilon", EPS)
    if c["n_swa"]:
        wr.add_uint32(f"{a}.attention.sliding_window", c["n_swa"])
        wr.add_array(f"{a}.attention.sliding_window_pattern", [bool(s) for s in c["swa"]])
    if fork:  # HF ids (layer outputs), the mask and block under the arch's dflash.* keys
        wr.add_uint32(f"{a}.dflash.block_size", c["block_size"])
        wr.add_uint32(f"{a}.dflash.mask_token_id", c["mask"])
        wr.add_array(f"{a}.dflash.target_layer_ids", [int(i) for i in c["layers"]])
        wr.add_uint32(f"{a}.dflash.n_target_features", len(c["layers"]) * c["H"])
        wr.add_bool(f"{a}.attention.causal", False)
        wr.add_uint32(f"{a}.rope.dimension_count", c["hd"])
    else:  # llama.cpp: ids as layer inputs (HF + 1), the mask in the tokenizer keys
        wr.add_uint32(f"{a}.block_size", c["block_size"])
        wr.add_mask_token_id(c["mask"])
        wr.add_array(f"{a}.target_layers", [int(i) for i in c["layers"]])
    f32 = lambda x: np.ascontiguousarray(x, dtype=np.float32)
    wr.add_tensor("dflash_fc.weight" if fork else "fc.weight", f32(w["fc"]))
    if c["fc_scale"] != 1.0:
        wr.add_tensor("fc.scale", f32([c["fc_scale"]]))
    wr.add_tensor("dflash_hidden_norm.weight" if fork else "enc.output_norm.weight", f32(w["hidden_norm"]))
    wr.add_tensor("output_norm.weight", f32(w["norm"]))
    if c["own_embd"]:
        wr.add_tensor("token_embd.weight", f32(w["embed"]))
    if c["n_draft_vocab"]:
        wr.add_tensor("output.weight", f32(w["lm_head"]))
        wr.add_tensor("d2t", w["d2t_ids"])
    for i, L in enumerate(w["layers"]):
        p = f"blk.{i}."
        wr.add_tensor(p + "attn_norm.weight", f32(L["input_norm"]))
        wr.add_tensor(p + "attn_q.weight", f32(L["q"]))
        wr.add_tensor(p + "attn_k.weight", f32(L["k"]))
        wr.add_tensor(p + "attn_v.weight", f32(L["v"]))
        wr.add_tensor(p + "attn_output.weight", f32(L["o"]))
        wr.add_tensor(p + "attn_q_norm.weight", f32(L["q_norm"]))
        wr.add_tensor(p + "attn_k_norm.weight", f32(L["k_norm"]))
        wr.add_tensor(p + ("post_attention_norm.weight" if fork else "ffn_norm.weight"), f32(L["post_norm"]))
        wr.add_tensor(p + "ffn_gate.weight", f32(L["gate"]))
        wr.add_tensor(p + "ffn_up.weight", f32(L["up"]))
        wr.add_tensor(p + "ffn_down.weight", f32(L["down"]))
    wr.write_header_to_file()
    wr.write_kv_data_to_file()
    wr.write_tensors_to_file()
    wr.close()


def run_case(name, c, out_dir):
    rng = np.random.default_rng(c["seed"])
    w = make_weights(c, rng)
    d = Drafter(c, w)
    n = c["n_ctx"]
    feats = rng.standard_normal((n, len(c["layers"]) * c["H"]))
    ctx_pos = np.arange(n)
    last_a, last_b = (int(t) for t in rng.integers(0, c["n_vocab"], 2))
    # Block A right after the context; block B after the context was cut back to cut_b (a rejected draft).
    logits_a = d.draft(feats, ctx_pos, last_a, n, c["n_draft_a"])
    logits_b = d.draft(feats, ctx_pos, last_b, c["cut_b"], c["n_draft_b"])
    wr = gguf.GGUFWriter(os.path.join(out_dir, f"{name}.io.gguf"), "dflash_reference")
    wr.add_uint32("ref.target_n_layer", c["target_n_layer"])
    wr.add_uint32("ref.target_n_vocab", c["n_vocab"])
    wr.add_uint32("ref.cross_ctx", c["cross_ctx"])
    wr.add_uint32("ref.mask", c["mask"])
    wr.add_uint32("ref.block_size", c["block_size"])
    wr.add_array("ref.bee_layers", [int(i) + (1 if c["dialect"] == "dflash-draft" else 0) for i in c["layers"]])
    f32 = lambda x: np.ascontiguousarray(x, dtype=np.float32)
    i32 = lambda x: np.ascontiguousarray(x, dtype=np.int32)
    wr.add_tensor("target.token_embd", f32(w["target_embed"]))  # (n_vocab, H)
    wr.add_tensor("target.output", f32(w["target_head"]))       # (n_vocab, H)
    wr.add_tensor("features", f32(feats))                      # (n_ctx, n_taps H)
    wr.add_tensor("ctx_pos", i32(ctx_pos))                     # (n_ctx)
    wr.add_tensor("block_a", i32([last_a, n, c["n_draft_a"]]))  # last token, position, n_draft
    wr.add_tensor("logits_a", f32(logits_a))                   # (n_draft_a, n_draft_vocab)
    wr.add_tensor("block_b", i32([last_b, c["cut_b"], c["n_draft_b"]]))
    wr.add_tensor("logits_b", f32(logits_b))                   # (n_draft_b, n_draft_vocab)
    if c["n_draft_vocab"]:
        wr.add_tensor("d2t", w["d2t_ids"])
    wr.write_header_to_file()
    wr.write_kv_data_to_file()
    wr.write_tensors_to_file()
    wr.close()
    write_drafter(os.path.join(out_dir, f"{name}.drafter.gguf"), c, w)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="folder for the files (ctest uses build/dflash_reference)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for name, c in CASES.items():
        run_case(name, c, args.out)
        print(f"wrote {args.out}/{name}.drafter.gguf and {name}.io.gguf")


if __name__ == "__main__":
    main()
