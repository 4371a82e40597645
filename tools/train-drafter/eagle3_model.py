"""tools/train-drafter/eagle3_model: the EAGLE-3 head in PyTorch, computed as Bee's forward (src/spec/eagle3/) and
llama.cpp's `eagle3` graph compute it (specs/drafters.md §3.2, §3.4, §8.1, §8.7), with training-time test.

Weights are kept in Hugging Face layout (rotate-half rope); eagle3_gguf.py permutes the Q/K rows for llama.cpp's
adjacent-pair (NORM) rope when it writes the GGUF, as upstream's converter does.

One head row at position p reads the token at p+1 and g, the fc output of the target's features at p (depth 0) or
the head's own pre-norm output of the previous depth (depth j >= 1), and predicts the token at p+2 (+j).
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def _up(x):
    """bfloat16/float16 -> float32 for norms and softmax; float32 and float64 stay."""
    return x.float() if x.dtype in (torch.bfloat16, torch.float16) else x


class RMSNorm(nn.Module):
    def __init__(self, n, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))
        self.eps = eps

    def forward(self, x):
        xf = _up(x)
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype) * self.weight.to(x.dtype)


def rope_half(x, pos, theta):
    """Rotate-half rope on x (..., n, hd) at positions pos (..., n) broadcastable; HF layout."""
    hd = x.shape[-1]
    ft = torch.float64 if x.dtype == torch.float64 else torch.float32
    inv = theta ** (-torch.arange(0, hd, 2, dtype=ft, device=x.device) / hd)
    ang = pos.to(ft)[..., None] * inv  # (..., n, hd/2)
    cos = torch.cat([ang.cos(), ang.cos()], -1).to(x.dtype)
    sin = torch.cat([ang.sin(), ang.sin()], -1).to(x.dtype)
    rot = torch.cat([-x[..., hd // 2:], x[..., : hd // 2]], -1)
    return x * cos + rot * sin


class Eagle3Head(nn.Module):
    """cfg: dict with H, Ht, n_head, n_head_kv, head_dim, n_ff, n_draft, eps, rope_theta, norm_before_fc,
    norm_before_residual. embed: the target's token embedding (n_vocab, H), frozen (the GGUF omits it)."""

    def __init__(self, cfg, embed):
        super().__init__()
        self.cfg = cfg
        H, Ht, hd = cfg["H"], cfg["Ht"], cfg["head_dim"]
        nq, nk = cfg["n_head"] * hd, cfg["n_head_kv"] * hd
        eps = cfg["eps"]
        self.register_buffer("embed", embed, persistent=False)
        self.enc_norm = RMSNorm(3 * Ht, eps) if cfg["norm_before_fc"] else None
        self.fc = nn.Linear(3 * Ht, H, bias=False)
        self.attn_norm = RMSNorm(H, eps)
        self.hidden_norm = RMSNorm(H, eps)
        self.q = nn.Linear(2 * H, nq, bias=False)
        self.k = nn.Linear(2 * H, nk, bias=False)
        self.v = nn.Linear(2 * H, nk, bias=False)
        self.o = nn.Linear(nq, H, bias=False)
        self.ffn_norm = RMSNorm(H, eps)
        self.gate = nn.Linear(H, cfg["n_ff"], bias=False)
        self.up = nn.Linear(H, cfg["n_ff"], bias=False)
        self.down = nn.Linear(cfg["n_ff"], H, bias=False)
        self.out_norm = RMSNorm(H, eps)
        self.lm_head = nn.Linear(H, cfg["n_draft"], bias=False)

    def encode(self, feats):
        """g (..., H) = fc(features (..., 3 Ht)), through enc.output_norm when the head has it."""
        return self.fc(self.enc_norm(feats) if self.enc_norm is not None else feats)

    def _x2(self, tokens, g):
        e = self.embed[tokens].to(g.dtype)
        return torch.cat([self.attn_norm(e), self.hidden_norm(g)], -1)

    def _heads(self, x, n):  # (B, M, n*hd) -> (B, n, M, hd)
        B, M, _ = x.shape
        return x.view(B, M, n, self.cfg["head_dim"]).transpose(1, 2)

    def _kv_full(self, x):  # (B, nkv, M, hd) -> (B, nh, M, hd): query head h reads kv head h // group
        return x.repeat_interleave(self.cfg["n_head"] // self.cfg["n_head_kv"], dim=1)

    def unroll(self, feats, tokens, sel, n_steps):
        """Training-time test on a batch, as drafting runs at inference.

        feats (B, L, 3 Ht): the target's features of positions 0..L-1; tokens (B, L + n_steps): the tokens of
        positions 0..L+n_steps-1 (zero-padded); sel (B, M): the boundaries p to draft from (p < L).
        Depth 0 at p reads (token p+1, fc(features p)) at position p and attends to the depth-0 rows of positions
        <= p (every position's K/V is computed, as the drafter's cache holds them); depth j reads (token p+1+j, its
        own pre-norm output of depth j-1) at position p+j and attends to the depth-0 rows <= p and to depths 1..j
        of the same chain. Returns the draft logits per depth: a list of (B, M, n_draft)."""
        cfg = self.cfg
        B, L, _ = feats.shape
        nh, nkv, hd = cfg["n_head"], cfg["n_head_kv"], cfg["head_dim"]
        scale = 1.0 / math.sqrt(hd)
        pos_all = torch.arange(L, device=feats.device)
        g_all = self.encode(feats)  # (B, L, H)
        x2_all = self._x2(tokens[:, 1:L + 1], g_all)  # (B, L, 2H)
        k0 = self._kv_full(rope_half(self._heads(self.k(x2_all), nkv), pos_all, cfg["rope_theta"]))
        v0 = self._kv_full(self._heads(self.v(x2_all), nkv))  # (B, nh, L, hd)
        mask0 = pos_all[None, None, :] > sel[:, :, None]  # (B, M, L): keys after the boundary are hidden
        hidden = torch.gather(g_all, 1, sel[..., None].expand(-1, -1, g_all.shape[-1]))  # (B, M, H)
        k_chain, v_chain, logits = [], [], []
        for j in range(n_steps):
            pos = sel + j  # (B, M)
            if j == 0:
                x2 = torch.gather(x2_all, 1, sel[..., None].expand(-1, -1, x2_all.shape[-1]))
            else:
                x2 = self._x2(torch.gather(tokens, 1, sel + 1 + j), hidden)
            q = rope_half(self._heads(self.q(x2), nh), pos[:, None, :], cfg["rope_theta"])  # (B, nh, M, hd)
            if j > 0:
                k_chain.append(self._kv_full(rope_half(self._heads(self.k(x2), nkv), pos[:, None, :], cfg["rope_theta"])))
                v_chain.append(self._kv_full(self._heads(self.v(x2), nkv)))
            s0 = torch.matmul(q, k0.transpose(2, 3)) * scale  # (B, nh, M, L)
            s0 = s0.masked_fill(mask0[:, None], float("-inf"))
            if k_chain:
                sd = torch.stack([(q * kc).sum(-1) for kc in k_chain], -1) * scale  # (B, nh, M, j)
                p = torch.softmax(_up(torch.cat([s0, sd], -1)), -1).to(q.dtype)
                att = torch.matmul(p[..., :L], v0)
                for i, vc in enumerate(v_chain):
                    att = att + p[..., L + i, None] * vc
            else:
                att = torch.matmul(torch.softmax(_up(s0), -1).to(q.dtype), v0)
            att = att.transpose(1, 2).reshape(B, -1, nh * hd)
            resid = self.hidden_norm(hidden) if cfg["norm_before_residual"] else hidden
            h = resid + self.o(att)
            hn = self.ffn_norm(h)
            h = h + self.down(F.silu(self.gate(hn)) * self.up(hn))
            logits.append(self.lm_head(self.out_norm(h)))
            hidden = h
        return logits
