"""tools/train-drafter/dump: reads a `bee train-data` folder (manifest.json + .npy shards, see README.md) and makes
training batches for eagle3_model.Eagle3Head.unroll."""
import json
import os

import numpy as np
import torch

HOLDOUT = 20  # prompts with index % 20 == 19 are held out (bee train-data --eval-head --holdout 20 reads the same)


class Sequence:
    __slots__ = ("shard", "row0", "n", "n_prompt", "prompt")

    def __init__(self, shard, row0, n, n_prompt, prompt):
        self.shard, self.row0, self.n, self.n_prompt, self.prompt = shard, row0, n, n_prompt, prompt


class Dump:
    def __init__(self, folder):
        self.folder = folder
        path = os.path.join(folder, "manifest.json")
        if not os.path.exists(path):
            raise SystemExit(f"error: {path} is missing: --data must be a folder written by `bee train-data`")
        with open(path) as f:
            man = json.load(f)
        if man.get("format") != "bee-train-data":
            raise SystemExit(f"error: {path} is not a manifest of `bee train-data`")
        self.settings = man["settings"]
        if not man["shards"]:
            raise SystemExit(f"error: {folder} holds no finished shard yet")
        self.shards, self.sequences = [], []
        for i, sh in enumerate(man["shards"]):
            load = lambda key: np.load(os.path.join(folder, sh[key]), mmap_mode="r")
            self.shards.append(dict(tokens=load("tokens"), hidden=load("hidden"), topk_ids=load("topk_ids"),
                                    topk_logp=load("topk_logp")))
            for s in sh["sequences"]:
                if s["n_rows"] - s["n_prompt"] >= 2:  # a response of at least two tokens has a drafting target
                    self.sequences.append(Sequence(i, s["row0"], s["n_rows"], s["n_prompt"], s["prompt"]))
        self.top_k = self.settings["top_k"]
        self.layers = self.settings["layers"]

    def split(self):
        train = [s for s in self.sequences if s.prompt % HOLDOUT != HOLDOUT - 1]
        held = [s for s in self.sequences if s.prompt % HOLDOUT == HOLDOUT - 1]
        return train, held

    def response_token_counts(self, seqs, n_vocab):
        counts = np.zeros(n_vocab, dtype=np.int64)
        for s in seqs:
            t = self.shards[s.shard]["tokens"][s.row0 + s.n_prompt: s.row0 + s.n]
            counts += np.bincount(t, minlength=n_vocab)
        return counts

    def batch(self, seqs, n_steps, t2d, frac, rng, max_len):
        """Tensors for one batch of sequences: feats (B, L, 3 Ht) f32, tokens (B, L + n_steps), sel (B, M) boundaries,
        and per depth j the targets at rows sel+1+j: tgt_idx (B, M, K) draft ids (-1: outside the draft vocabulary),
        tgt_p (B, M, K) the target's probabilities renormalised over the draft vocabulary, valid (B, M).
        frac < 1: a random share of each sequence's boundaries (at least one); frac >= 1: all of them."""
        lens = [min(s.n, max_len) for s in seqs]
        L = max(lens) - 1
        B, width = len(seqs), 3 * self.settings["n_embd"]
        feats = np.zeros((B, L, width), dtype=np.float32)
        tokens = np.zeros((B, L + n_steps + 1), dtype=np.int64)
        K = self.top_k
        ids = np.full((B, L + n_steps + 1, K), -1, dtype=np.int64)
        logp = np.full((B, L + n_steps + 1, K), -np.inf, dtype=np.float32)
        sels, n_rows, n_prompts = [], [], []
        for b, (s, n) in enumerate(zip(seqs, lens)):
            sh = self.shards[s.shard]
            r = slice(s.row0, s.row0 + n)
            feats[b, :n - 1] = sh["hidden"][s.row0:s.row0 + n - 1].reshape(n - 1, width)
            tokens[b, :n] = sh["tokens"][r]
            ids[b, :n] = sh["topk_ids"][r]
            logp[b, :n] = sh["topk_logp"][r]
            first = max(0, s.n_prompt - 2)  # boundary p drafts token p+2: the first response token from p = n_prompt-2
            cand = np.arange(first, n - 2)  # p + 2 <= n - 1
            if len(cand) == 0:
                cand = np.array([0])
            if frac < 1:
                m = max(1, int(round(len(cand) * frac)))
                cand = np.sort(rng.choice(cand, size=m, replace=False))
            sels.append(cand)
            n_rows.append(n)
            n_prompts.append(s.n_prompt)
        M = max(len(c) for c in sels)
        sel = np.zeros((B, M), dtype=np.int64)
        sel_ok = np.zeros((B, M), dtype=bool)
        for b, c in enumerate(sels):
            sel[b, :len(c)] = c
            sel_ok[b, :len(c)] = True
        didx = np.where(ids >= 0, t2d[np.maximum(ids, 0)], -1)  # (B, rows, K) draft ids
        p = np.where(didx >= 0, np.exp(logp), 0.0).astype(np.float32)
        mass = p.sum(-1, keepdims=True)
        p = p / np.maximum(mass, 1e-20)
        n_rows, n_prompts = np.array(n_rows)[:, None], np.array(n_prompts)[:, None]
        depths = []
        for j in range(n_steps):
            rows = sel + 1 + j  # the target's distribution at row p+1+j predicts token p+2+j
            pred = rows + 1
            exists = sel_ok & (pred <= n_rows - 1)  # the drafted token exists (acceptance counts these)
            valid = exists & (pred >= n_prompts)
            ti = np.take_along_axis(didx, rows[..., None], 1)
            tp = np.take_along_axis(p, rows[..., None], 1)
            valid &= ti[..., 0] >= 0  # the target's top-1 is in the draft vocabulary (EAGLE-3's position mask)
            top1 = np.take_along_axis(ids[..., 0], rows, 1)
            depths.append(dict(idx=torch.from_numpy(ti), p=torch.from_numpy(tp), valid=torch.from_numpy(valid),
                               exists=torch.from_numpy(exists), top1=torch.from_numpy(top1)))
        return dict(feats=torch.from_numpy(feats), tokens=torch.from_numpy(tokens), sel=torch.from_numpy(sel),
                    sel_ok=torch.from_numpy(sel_ok), depths=depths, n_rows=torch.from_numpy(n_rows[:, 0]),
                    n_prompt=torch.from_numpy(n_prompts[:, 0]))
