"""tools/train-drafter/dflash_model: a DFlash block-diffusion drafter in PyTorch, computed as Bee's forward
(src/spec/dflash/) and llama.cpp's `dflash` graph compute it (specs/drafters.md §2.2, §2.4, §8.2, §8.7).

fused = hidden_norm(fc(features)) for every context token (the target's captured layer inputs, concatenated);
in every layer the context enters as K = rope(k_norm(Wk fused)) at its position and V = Wv fused (no
attn_norm); the block [last token, mask x (B-1)] is embedded with the target's (frozen) token embedding at
positions p .. p+B-1 and its rows attend non-causally to each other and to the context tokens strictly before
p (at most `cross_ctx` of them); Qwen3-style layers (q/k norms, SwiGLU); output_norm and the drafter's own
head over the compact draft vocabulary score rows 1..B-1 (row i: the token at p+i).

Weights are in Hugging Face layout with rotate-half (NEOX) rope, which is what the `dflash` GGUF stores (the
converters leave Q/K rows unpermuted), so dflash_gguf.py writes them as they are.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from eagle3_model import RMSNorm, rope_half


class DflashLayer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        H, hd, eps = cfg["H"], cfg["head_dim"], cfg["eps"]
        self.attn_norm = RMSNorm(H, eps)
        self.q = nn.Linear(H, cfg["n_head"] * hd, bias=False)
        self.k = nn.Linear(H, cfg["n_head_kv"] * hd, bias=False)
        self.v = nn.Linear(H, cfg["n_head_kv"] * hd, bias=False)
        self.o = nn.Linear(cfg["n_head"] * hd, H, bias=False)
        self.q_norm = RMSNorm(hd, eps)
        self.k_norm = RMSNorm(hd, eps)
        self.ffn_norm = RMSNorm(H, eps)
        self.gate = nn.Linear(H, cfg["n_ff"], bias=False)
        self.up = nn.Linear(H, cfg["n_ff"], bias=False)
        self.down = nn.Linear(cfg["n_ff"], H, bias=False)


class DflashDrafter(nn.Module):
    """cfg: dict with H, n_taps, n_layer, n_head, n_head_kv, head_dim, n_ff, n_draft, eps, rope_theta,
    block_size, mask_token, feat_scale (n_taps H). embed: the target's token embedding (n_vocab, H), frozen (the GGUF omits it)."""

    def __init__(self, cfg, embed):
        super().__init__()
        self.cfg = cfg
        H = cfg["H"]
        self.register_buffer("embed", embed, persistent=False)
        # Per-feature scale applied before fc (1 / the feature's RMS over the data): the target's layers carry a few
        # massive-activation dimensions; dflash_gguf.py folds the scale into fc.weight's columns, so the file's fc
        # reads the raw features as Bee and llama.cpp feed them.
        self.register_buffer("feat_scale", torch.as_tensor(cfg["feat_scale"], dtype=torch.float32), persistent=False)
        self.fc = nn.Linear(cfg["n_taps"] * H, H, bias=False)
        self.hidden_norm = RMSNorm(H, cfg["eps"])
        self.layers = nn.ModuleList(DflashLayer(cfg) for _ in range(cfg["n_layer"]))
        self.out_norm = RMSNorm(H, cfg["eps"])
        self.lm_head = nn.Linear(H, cfg["n_draft"], bias=False)
        for L in self.layers:  # small residual branches at the start: the stack begins near the identity
            for lin in (L.o, L.down):
                nn.init.normal_(lin.weight, std=0.02 / math.sqrt(2 * cfg["n_layer"]))

    def _heads(self, x, n):  # (B, M, n*hd) -> (B, n, M, hd)
        B, M, _ = x.shape
        return x.view(B, M, n, self.cfg["head_dim"]).transpose(1, 2)

    def forward(self, feats, tokens, anchors, cross_ctx=512):
        """feats (B, L, n_taps H): the target's features at positions 0..L-1 (zero padded); tokens (B, >= L):
        the tokens at those positions; anchors (B, A): block starts p (1 <= p < L), each block reading the context
        tokens at positions max(0, p - cross_ctx) .. p-1. Returns logits (B, A, block_size - 1, n_draft): row i
        of block a scores the token at anchors[a] + 1 + i."""
        cfg = self.cfg
        B, L, _ = feats.shape
        A, Bk = anchors.shape[1], cfg["block_size"]
        nh, nkv, hd, theta = cfg["n_head"], cfg["n_head_kv"], cfg["head_dim"], cfg["rope_theta"]
        group = nh // nkv
        dev = feats.device
        fused = self.hidden_norm(self.fc(feats * self.feat_scale.to(feats.dtype)))  # (B, L, H)
        pos_ctx = torch.arange(L, device=dev)
        off = torch.arange(Bk, device=dev)
        pos_blk = (anchors[..., None] + off).reshape(B, A * Bk)  # (B, A*Bk)
        blk_tok = torch.full((B, A, Bk), cfg["mask_token"], dtype=torch.long, device=dev)
        blk_tok[..., 0] = torch.gather(tokens, 1, anchors)
        x = self.embed[blk_tok.reshape(B, A * Bk)].to(fused.dtype)  # (B, A*Bk, H)
        # Visibility (True: attends): context keys strictly before the anchor, within the window; every row of the
        # query's own block (non-causal), none of the other blocks.
        p = anchors.repeat_interleave(Bk, 1)  # (B, A*Bk) anchor of each query row
        ctx_vis = (pos_ctx[None, None, :] < p[..., None]) & (pos_ctx[None, None, :] >= p[..., None] - cross_ctx)
        blk_id = torch.arange(A, device=dev).repeat_interleave(Bk)
        blk_vis = (blk_id[:, None] == blk_id[None, :]).expand(B, -1, -1)
        vis = torch.cat([ctx_vis, blk_vis], -1)[:, None]  # (B, 1, A*Bk, L + A*Bk)
        for Ly in self.layers:
            h = Ly.attn_norm(x)
            q = rope_half(Ly.q_norm(self._heads(Ly.q(h), nh)), pos_blk[:, None, :], theta)
            kb = rope_half(Ly.k_norm(self._heads(Ly.k(h), nkv)), pos_blk[:, None, :], theta)
            vb = self._heads(Ly.v(h), nkv)
            kc = rope_half(Ly.k_norm(self._heads(Ly.k(fused), nkv)), pos_ctx, theta)
            vc = self._heads(Ly.v(fused), nkv)
            k = torch.cat([kc, kb], 2).repeat_interleave(group, 1)
            v = torch.cat([vc, vb], 2).repeat_interleave(group, 1)
            att = F.scaled_dot_product_attention(q, k.to(q.dtype), v.to(q.dtype), attn_mask=vis)
            x = x + Ly.o(att.transpose(1, 2).reshape(B, A * Bk, nh * hd))
            hn = Ly.ffn_norm(x)
            x = x + Ly.down(F.silu(Ly.gate(hn)) * Ly.up(hn))
        logits = self.lm_head(self.out_norm(x))
        return logits.view(B, A, Bk, -1)[:, :, 1:]
