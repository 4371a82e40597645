"""tools/train-drafter/train_dflash: `train_drafter.py dflash` — trains a DFlash drafter (dflash_model.py) on a
`bee train-data` dump with the block objective and writes it in llama.cpp's `dflash` GGUF layout (dflash_gguf.py).

Block objective (DFlash, specs/drafters.md §2.2): per sequence, random anchors p among the answer positions; the
block [token p, mask x (B-1)] at positions p .. p+B-1 attends non-causally to itself and to the target's features
at positions strictly before p (the features of p itself are not known when drafting: p is the bonus token);
row i predicts the token at p+i against the target's top-k distribution at row p+i-1, renormalised over the
compact draft vocabulary, weighted exp(-(i-1)/gamma); rows whose target top-1 is outside the draft vocabulary,
beyond the sequence or inside the prompt are not scored.
"""
import os
import time

import numpy as np
import torch

import checkpoint
from dflash_gguf import write_dflash
from dflash_model import DflashDrafter


def add_parser(sub):
    d = sub.add_parser("dflash", help="a DFlash block drafter (llama.cpp's dflash GGUF)")
    d.add_argument("--data", required=True, help="folder written by `bee train-data`")
    d.add_argument("--target", required=True, help="the target model's GGUF (the one the dump was made with)")
    d.add_argument("--out", required=True, help="the drafter's GGUF")
    d.add_argument("--draft-vocab", type=int, default=8192, help="tokens the drafter scores (most frequent first)")
    d.add_argument("--block-size", type=int, default=8, help="B: the block drafts at most B-1 tokens")
    d.add_argument("--n-layer", type=int, default=2)
    d.add_argument("--n-head", type=int, default=0, help="attention heads [H/64]")
    d.add_argument("--n-head-kv", type=int, default=0, help="K/V heads [n_head/3 when it divides, else n_head]")
    d.add_argument("--n-ff", type=int, default=0, help="feed-forward width [the target's, at most 3H]")
    d.add_argument("--rope-theta", type=float, default=10000.0)
    d.add_argument("--mask-token", type=int, default=-1,
                   help="the block's mask token [the last control token of the target that no dumped row holds]")
    d.add_argument("--epochs", type=float, default=3.0, help="passes over the training sequences")
    d.add_argument("--steps", type=int, default=0, help="optimizer steps (overrides --epochs)")
    d.add_argument("--anchors", type=int, default=32, help="blocks drafted per sequence per step")
    d.add_argument("--gamma", type=float, default=4.0, help="row i of a block weighted exp(-(i-1)/gamma)")
    d.add_argument("--cross-ctx", type=int, default=512, help="context tokens a block attends to (Bee's default)")
    d.add_argument("--batch-seqs", type=int, default=8, help="sequences per optimizer step")
    d.add_argument("--max-len", type=int, default=1024, help="rows of a sequence used at most")
    d.add_argument("--lr", type=float, default=1e-3)
    d.add_argument("--warmup", type=int, default=50, help="optimizer steps of linear warm-up")
    d.add_argument("--weight-decay", type=float, default=0.01)
    d.add_argument("--type", default="q8_0", choices=["q8_0", "q4_1", "f16", "f32"],
                   help="2-D weights in the GGUF (q4_1: half the bytes a draft pass reads, no measured loss of "
                        "acceptance on the SmolLM2 drafters)")
    d.add_argument("--threads", type=int, default=1, help="PyTorch threads")
    d.add_argument("--init-output", choices=["random", "target"], default="target",
                   help="output head's start: the target's rows of the draft vocabulary, or random")
    d.add_argument("--bf16", type=int, default=1, help="1: bfloat16 autocast for the matrix products")
    d.add_argument("--seed", type=int, default=1)
    d.add_argument("--ckpt-minutes", type=float, default=10.0)
    d.add_argument("--time-limit", type=float, default=0.0,
                   help="minutes; stop (and write) when reached; the learning rate's cosine ends there if it comes "
                        "before --steps")
    d.add_argument("--eval-seqs", type=int, default=0, help="held-out sequences evaluated at the end [all]")
    d.add_argument("--resume", action="store_true", help="continue from OUT.ckpt.pt")
    d.add_argument("--init", default="",
                   help="start from the weights (and draft vocabulary) of this checkpoint, with a new optimizer and "
                        "schedule: a further stage on more data")
    return d


def drafter_config(args, target, n_draft, n_taps, mask):
    H = target.n_embd
    n_head = args.n_head or max(1, H // 64)
    if H % n_head:
        raise SystemExit(f"error: --n-head {n_head} does not divide the hidden size {H}")
    n_kv = args.n_head_kv or (n_head // 3 if n_head % 3 == 0 else n_head)
    if n_head % n_kv:
        raise SystemExit(f"error: --n-head-kv {n_kv} does not divide --n-head {n_head}")
    if args.block_size < 2:
        raise SystemExit("error: --block-size must be at least 2 (the last token and one mask)")
    n_ff = args.n_ff or min(3 * H, int(target.reader.fields[f"{target.arch}.feed_forward_length"].contents()))
    return dict(H=H, n_taps=n_taps, n_layer=args.n_layer, n_head=n_head, n_head_kv=n_kv, head_dim=H // n_head,
                n_ff=n_ff, n_draft=n_draft, eps=1e-6, rope_theta=args.rope_theta, block_size=args.block_size,
                mask_token=mask)


def choose_mask(dump, target, requested):
    if requested >= 0:
        if requested >= target.n_vocab:
            raise SystemExit(f"error: --mask-token {requested} is not a token of {target.path} (0..{target.n_vocab - 1})")
        return requested
    used = np.zeros(target.n_vocab, dtype=bool)
    for sh in dump.shards:
        used[np.asarray(sh["tokens"])] = True
    types = target.reader.fields["tokenizer.ggml.token_type"].contents()
    cands = [i for i, t in enumerate(types) if t == 3 and not used[i]]  # CONTROL tokens no row holds
    if not cands:
        raise SystemExit("error: the target has no unused control token to serve as the mask: pass --mask-token")
    return cands[-1]


def feature_scale(dump, seqs, n_seqs=64):
    """1 / RMS of each feature dimension over the rows of up to n_seqs sequences, leaving out rows whose RMS is
    over 8x the median (the massive-activation rows of the first tokens)."""
    width = len(dump.layers) * dump.settings["n_embd"]
    rows = np.concatenate([np.asarray(dump.shards[s.shard]["hidden"][s.row0:s.row0 + s.n], dtype=np.float32)
                           .reshape(s.n, width) for s in seqs[:n_seqs]])
    r = np.sqrt((rows * rows).mean(-1))
    rows = rows[r <= 8 * np.median(r)]
    return (1.0 / np.sqrt((rows * rows).mean(0) + 1e-6)).astype(np.float32)


def make_batch(dump, seqs, t2d, Bk, n_anchors, rng, max_len):
    """feats (B, L, n_taps H), tokens (B, L), anchors (B, A); per block row i (predicting the token at p+1+i):
    idx/p (B, A, Bk-1, K) the target's top-k in draft ids (-1 outside) and probabilities renormalised over the
    draft vocabulary, valid (scored), exists (the token is in the sequence), top1 (target id).
    n_anchors <= 0: every answer position of each sequence."""
    lens = [min(s.n, max_len) for s in seqs]
    L = max(lens)
    width = len(dump.layers) * dump.settings["n_embd"]
    K = dump.top_k
    B = len(seqs)
    anchors = []
    for s, n in zip(seqs, lens):
        cand = np.arange(max(1, s.n_prompt - 1), n - 1)  # p + 1 <= n - 1
        if n_anchors > 0 and len(cand) > n_anchors:
            cand = np.sort(rng.choice(cand, size=n_anchors, replace=False))
        anchors.append(cand)
    A = max(len(c) for c in anchors)
    feats = np.zeros((B, L, width), dtype=np.float32)
    tokens = np.zeros((B, L), dtype=np.int64)
    ids = np.full((B, L + Bk, K), -1, dtype=np.int64)
    logp = np.full((B, L + Bk, K), -np.inf, dtype=np.float32)
    anc = np.ones((B, A), dtype=np.int64)
    anc_ok = np.zeros((B, A), dtype=bool)
    n_rows = np.zeros((B, 1, 1), dtype=np.int64)
    n_prompt = np.zeros((B, 1, 1), dtype=np.int64)
    for b, (s, n, c) in enumerate(zip(seqs, lens, anchors)):
        sh = dump.shards[s.shard]
        feats[b, :n] = sh["hidden"][s.row0:s.row0 + n].reshape(n, width)
        tokens[b, :n] = sh["tokens"][s.row0:s.row0 + n]
        ids[b, :n] = sh["topk_ids"][s.row0:s.row0 + n]
        logp[b, :n] = sh["topk_logp"][s.row0:s.row0 + n]
        anc[b, :len(c)] = c
        anc_ok[b, :len(c)] = True
        n_rows[b], n_prompt[b] = n, s.n_prompt
    didx = np.where(ids >= 0, t2d[np.maximum(ids, 0)], -1)
    p = np.where(didx >= 0, np.exp(logp), 0.0).astype(np.float32)
    p /= np.maximum(p.sum(-1, keepdims=True), 1e-20)
    rows = anc[..., None] + np.arange(Bk - 1)  # (B, A, Bk-1): the distribution at row p+i predicts token p+1+i
    pred = rows + 1
    exists = anc_ok[..., None] & (pred <= n_rows - 1)
    flat = rows.reshape(B, -1)
    ti = np.take_along_axis(didx, flat[..., None], 1).reshape(B, A, Bk - 1, K)
    tp = np.take_along_axis(p, flat[..., None], 1).reshape(B, A, Bk - 1, K)
    top1 = np.take_along_axis(ids[..., 0], flat, 1).reshape(B, A, Bk - 1)
    valid = exists & (pred >= n_prompt) & (ti[..., 0] >= 0)
    t = torch.from_numpy
    return dict(feats=t(feats), tokens=t(tokens), anchors=t(anc), idx=t(ti), p=t(tp), valid=t(valid),
                exists=t(exists), top1=t(top1), n_rows=int(sum(lens)))


def loss_and_acc(logits, b, weights):
    lp = torch.log_softmax(logits.float(), -1)  # (B, A, Bk-1, V)
    tl = -(b["p"] * torch.gather(lp, -1, b["idx"].clamp_min(0))).sum(-1)  # (B, A, Bk-1)
    valid = b["valid"].float()
    n = valid.sum((0, 1)).clamp_min(1)  # per row of the block
    per_row = (tl * valid).sum((0, 1)) / n
    loss = (per_row * weights).sum() / weights.sum()
    with torch.no_grad():
        acc = (((logits.argmax(-1) == b["idx"][..., 0]) & b["valid"]).sum((0, 1)).float() / n).numpy()
    return loss, per_row.detach().numpy(), acc


def evaluate(model, dump, seqs, args, t2d, d2t_t):
    """Teacher-forced blocks from every answer position of the held-out sequences: the greedy block is accepted
    up to its first token that is not the target's top-1 (as `bee bench spec` accepts with greedy verification)."""
    model.eval()
    Bk = model.cfg["block_size"]
    reached, accepted = np.zeros(Bk - 1, np.int64), np.zeros(Bk - 1, np.int64)
    n_blocks = 0
    rng = np.random.default_rng(0)
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=bool(args.bf16)):
        for s in seqs:
            b = make_batch(dump, [s], t2d, Bk, 0, rng, args.max_len)
            for a0 in range(0, b["anchors"].shape[1], 64):
                anc = b["anchors"][:, a0:a0 + 64]
                lg = model(b["feats"], b["tokens"], anc, args.cross_ctx)
                ok = d2t_t[lg.float().argmax(-1)] == b["top1"][:, a0:a0 + 64]
                alive = b["exists"][:, a0:a0 + 64, 0].clone()
                n_blocks += int(alive.sum())
                for i in range(Bk - 1):
                    alive &= b["exists"][:, a0:a0 + 64, i]
                    reached[i] += int(alive.sum())
                    alive &= ok[..., i]
                    accepted[i] += int(alive.sum())
    model.train()
    print("held-out teacher-forced acceptance (greedy blocks, compared with the target's top-1):")
    print("depth  reached  accepted  rate    P(accepted >= depth+1)")
    tau = 1.0
    for j in range(Bk - 1):
        cum = accepted[j] / max(1, n_blocks)
        tau += cum
        print(f"{j:5d}  {reached[j]:7d}  {accepted[j]:8d}  {accepted[j] / max(1, reached[j]):.4f}  {cum:.4f}")
    print(f"{n_blocks} blocks: mean accepted length {tau:.3f} (blocks of {Bk - 1} drafts, with the bonus token)",
          flush=True)
    return tau


def run(args, dump, target, choose_vocab):
    t_start = time.time()
    train, held = dump.split()
    if not train:
        raise SystemExit(f"error: {args.data} has no training sequence (all are held out)")
    ckpt_path = args.out + ".ckpt.pt"
    ckpt, init = checkpoint.start(args, ckpt_path)
    if init is not None:
        checkpoint.grow_vocab(init, choose_vocab(dump, train, target, args.draft_vocab, keep=init["d2t"]))
    if ckpt is not None or init is not None:
        d2t, cfg = (ckpt or init)["d2t"], (ckpt or init)["cfg"]
    else:
        d2t = choose_vocab(dump, train, target, args.draft_vocab)
        mask = choose_mask(dump, target, args.mask_token)
        cfg = drafter_config(args, target, len(d2t), len(dump.layers), mask)
        cfg["feat_scale"] = feature_scale(dump, train)
    t2d = np.full(target.n_vocab, -1, dtype=np.int64)
    t2d[d2t] = np.arange(len(d2t))
    d2t_t = torch.from_numpy(d2t)
    embed = torch.from_numpy(target.embedding()).to(torch.bfloat16 if args.bf16 else torch.float32)
    model = DflashDrafter(cfg, embed)
    if init is not None:
        checkpoint.load_weights(model, init, args.init)
    elif ckpt is None and args.init_output == "target":
        with torch.no_grad():
            model.lm_head.weight.copy_(torch.from_numpy(target.output()[d2t]))  # out_norm starts at ones
    n_params = sum(p.numel() for p in model.parameters())
    Bk = cfg["block_size"]
    print(f"drafter: {cfg['n_layer']} layers, H {cfg['H']}, {cfg['n_head']} heads ({cfg['n_head_kv']} kv) x "
          f"{cfg['head_dim']}, n_ff {cfg['n_ff']}, block {Bk}, mask token {cfg['mask_token']}, draft vocabulary "
          f"{cfg['n_draft']}, {n_params / 1e6:.2f} M parameters; target layers {dump.layers}", flush=True)
    steps_per_epoch = max(1, len(train) // args.batch_seqs)
    total = args.steps or max(1, int(round(args.epochs * steps_per_epoch)))
    print(f"data: {len(train)} training sequences ({sum(x.n for x in train)} rows), {len(held)} held out; {total} "
          f"steps of {args.batch_seqs} sequences x {args.anchors} blocks", flush=True)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.95), weight_decay=args.weight_decay)

    lr_at = checkpoint.lr_schedule(args, total, t_start)

    weights = torch.exp(-torch.arange(Bk - 1, dtype=torch.float32) / args.gamma)
    rng = np.random.default_rng(args.seed)
    step = checkpoint.restore(ckpt, model, opt, rng)
    desc = f"trained by tools/train-drafter (dflash) on {os.path.basename(os.path.normpath(args.data))}"

    save = checkpoint.saver(ckpt_path, args.out, model, opt, rng, d2t, cfg,
                            lambda path, sd, text: write_dflash(path, target, cfg, sd, d2t, dump.layers, args.type, text), desc)
    stop = checkpoint.stop_on_signals()
    t_log = t_ckpt = time.time()
    ema, acc_ema, rows_done = None, np.zeros(Bk - 1), 0
    batches = checkpoint.batch_order(train, args.batch_seqs, rng)
    while step < total and not stop["now"]:
        if checkpoint.past_time_limit(args.time_limit, t_start):
            break
        idx = next(batches)
        b = make_batch(dump, [train[i] for i in idx], t2d, Bk, args.anchors, rng, args.max_len)
        for g in opt.param_groups:
            g["lr"] = lr_at(step)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bool(args.bf16)):
            logits = model(b["feats"], b["tokens"], b["anchors"], args.cross_ctx)
        loss, per_row, acc = loss_and_acc(logits, b, weights)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        step += 1
        rows_done += b["n_rows"]
        ema = loss.item() if ema is None else 0.95 * ema + 0.05 * loss.item()
        acc_ema = acc if step == 1 else 0.9 * acc_ema + 0.1 * acc
        now = time.time()
        if now - t_log > 30 or step == total or step == 1:
            el = now - t_start
            print(f"step {step}/{total} ({step / steps_per_epoch:.2f} epochs) loss {ema:.4f} [" +
                  " ".join(f"{x:.2f}" for x in per_row) + "] top-1 acc per row [" +
                  " ".join(f"{x:.2f}" for x in acc_ema) + f"] lr {lr_at(step):.2e} {rows_done / el:.0f} rows/s "
                  f"elapsed {el / 60:.1f} min eta {el / step * (total - step) / 60:.1f} min", flush=True)
            t_log = now
        if now - t_ckpt > args.ckpt_minutes * 60:
            save(step)
            t_ckpt = time.time()
    save(step, final=True)
    if held:
        seqs = held[:args.eval_seqs] if args.eval_seqs else held
        print(f"evaluating {len(seqs)} held-out sequences", flush=True)
        evaluate(model, dump, seqs, args, t2d, d2t_t)
    print(f"wall time {(time.time() - t_start) / 60:.1f} min, final loss (EMA) "
          f"{ema if ema is not None else float('nan'):.4f}", flush=True)
