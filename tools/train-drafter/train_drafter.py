#!/usr/bin/env python3
"""tools/train-drafter/train_drafter: trains a speculative-decoding drafter for a Bee target on a dump of
`bee train-data`, on the CPU with PyTorch, and writes it as a GGUF that `bee` and llama.cpp load.

    train_drafter.py eagle3 --data DIR --target MODEL.gguf --out HEAD.gguf [--draft-vocab N] [--epochs E | --steps N]
                            [--ttt 7] [--resume]
    train_drafter.py dflash --data DIR --target MODEL.gguf --out DRAFTER.gguf [--block-size 8] [--n-layer 2] ...

DFlash (specs/drafters.md §2, §8.2): a block drafter, see train_dflash.py.

EAGLE-3 (specs/drafters.md §3, §8.1): one decoder block over [norm(embed(token)); norm(g)], g = fc(3 captured
target layers), trained with training-time test: each batch is unrolled --ttt depths, depth j >= 1 fed the head's
own pre-norm output and attending to the chain's earlier depths as at inference; the loss is the cross-entropy
against the target's top-k distribution renormalised over the compact draft vocabulary (the --draft-vocab most
frequent response tokens), depth j weighted 0.8^j. Prompts with index % 20 == 19 are held out; at the end the
teacher-forced acceptance per depth on them is printed. A checkpoint (OUT.ckpt.pt) and the GGUF are written every
--ckpt-minutes and on Ctrl-C; --resume continues from the checkpoint.
"""
import argparse
import os
import sys
import time

import numpy as np

try:
    import torch
except ImportError:
    raise SystemExit("error: train_drafter.py needs PyTorch: scripts/setup.sh train-drafter installs the CPU build")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import checkpoint  # noqa: E402
from dump import Dump  # noqa: E402
from eagle3_gguf import Target, write_head  # noqa: E402
from eagle3_model import Eagle3Head  # noqa: E402
import train_dflash  # noqa: E402


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    sub = ap.add_subparsers(dest="kind", required=True)
    e = sub.add_parser("eagle3", help="an EAGLE-3 head (llama.cpp's eagle3 GGUF)")
    e.add_argument("--data", required=True, help="folder written by `bee train-data`")
    e.add_argument("--target", required=True, help="the target model's GGUF (the one the dump was made with)")
    e.add_argument("--out", required=True, help="the head's GGUF")
    e.add_argument("--draft-vocab", type=int, default=8192, help="tokens the head scores (most frequent first)")
    e.add_argument("--epochs", type=float, default=3.0, help="passes over the training sequences")
    e.add_argument("--steps", type=int, default=0, help="optimizer steps (overrides --epochs)")
    e.add_argument("--ttt", type=int, default=7, help="training-time-test depths unrolled per batch")
    e.add_argument("--ttt-decay", type=float, default=0.8, help="weight of depth j: decay^j")
    e.add_argument("--batch-seqs", type=int, default=16, help="sequences per optimizer step")
    e.add_argument("--boundary-frac", type=float, default=0.25,
                   help="share of each sequence's positions drafted from per step (all K/V are computed)")
    e.add_argument("--max-len", type=int, default=1024, help="rows of a sequence used at most")
    e.add_argument("--lr", type=float, default=1e-3)
    e.add_argument("--warmup", type=int, default=100, help="optimizer steps of linear warm-up")
    e.add_argument("--weight-decay", type=float, default=0.01)
    e.add_argument("--n-head", type=int, default=0, help="attention heads [H/64]")
    e.add_argument("--n-head-kv", type=int, default=0, help="K/V heads [n_head/3 when it divides, else n_head]")
    e.add_argument("--n-ff", type=int, default=0, help="feed-forward width [the target's, at most 3H]")
    e.add_argument("--rope-theta", type=float, default=10000.0)
    e.add_argument("--no-norm-before-fc", action="store_true", help="no enc.output_norm before fc")
    e.add_argument("--type", default="q8_0", choices=["q8_0", "q4_1", "f16", "f32"],
                   help="2-D weights in the GGUF (q4_1: half the bytes a draft pass reads, no measured loss of "
                        "acceptance on the SmolLM2 drafters)")
    e.add_argument("--threads", type=int, default=1,
                   help="PyTorch threads (on a shared machine one thread is often faster than two)")
    e.add_argument("--init-output", choices=["random", "target"], default="random",
                   help="output head's start: random, or the target's rows of the draft vocabulary")
    e.add_argument("--bf16", type=int, default=1, help="1: bfloat16 autocast for the matrix products")
    e.add_argument("--seed", type=int, default=1)
    e.add_argument("--ckpt-minutes", type=float, default=10.0)
    e.add_argument("--time-limit", type=float, default=0.0,
                   help="minutes; stop (and write) when reached; the learning rate's cosine ends there too")
    e.add_argument("--eval-seqs", type=int, default=0, help="held-out sequences evaluated at the end [all]")
    e.add_argument("--resume", action="store_true", help="continue from OUT.ckpt.pt")
    e.add_argument("--init", default="",
                   help="start from the weights (and draft vocabulary) of this checkpoint, with a new optimizer and "
                        "schedule: a further stage on more data")
    train_dflash.add_parser(sub)
    return ap.parse_args(argv)


def head_config(args, target, n_draft):
    H = target.n_embd
    n_head = args.n_head or max(1, H // 64)
    if H % n_head:
        raise SystemExit(f"error: --n-head {n_head} does not divide the hidden size {H}")
    n_kv = args.n_head_kv or (n_head // 3 if n_head % 3 == 0 else n_head)
    if n_head % n_kv:
        raise SystemExit(f"error: --n-head-kv {n_kv} does not divide --n-head {n_head}")
    n_ff = args.n_ff or min(3 * H, int(target.reader.fields[f"{target.arch}.feed_forward_length"].contents()))
    return dict(H=H, Ht=H, n_head=n_head, n_head_kv=n_kv, head_dim=H // n_head, n_ff=n_ff, n_draft=n_draft,
                eps=1e-5, rope_theta=args.rope_theta, norm_before_fc=not args.no_norm_before_fc,
                norm_before_residual=False)


def choose_vocab(dump, train, target, n, keep=None):
    """The draft vocabulary: the n most frequent tokens of the training answers (all of them if fewer), sorted; with
    keep (an earlier stage's vocabulary), all of keep and then the most frequent others until n."""
    counts = dump.response_token_counts(train, target.n_vocab)
    order = np.argsort(-counts, kind="stable")
    order = order[counts[order] > 0]
    if keep is not None:
        order = np.concatenate([np.asarray(keep, dtype=np.int64), order[~np.isin(order, keep)]])
        n = max(n, len(keep))
    d2t = np.sort(order[:n]).astype(np.int64)
    n = len(d2t)
    cover = counts[d2t].sum() / max(1, counts.sum())
    print(f"draft vocabulary: {n} of {target.n_vocab} tokens cover {cover:.2%} of the training responses", flush=True)
    return d2t


def loss_and_acc(logits, depths, decay):
    total, accs, losses = 0.0, [], []
    for j, (lg, d) in enumerate(zip(logits, depths)):
        lp = torch.log_softmax(lg.float(), -1)
        valid = d["valid"]
        n = valid.sum()
        if n == 0:
            losses.append(float("nan"))
            accs.append(float("nan"))
            continue
        tl = -(d["p"] * torch.gather(lp, -1, d["idx"].clamp_min(0))).sum(-1)  # (B, M)
        lj = (tl * valid).sum() / n
        total = total + (decay ** j) * lj
        losses.append(lj.item())
        with torch.no_grad():
            accs.append(((lg.argmax(-1) == d["idx"][..., 0]) & valid).sum().item() / n.item())
    return total, losses, accs


def evaluate(model, dump, seqs, args, t2d, d2t_t):
    """Teacher-forced chains from every boundary of the held-out responses (as `bee train-data --eval-head`)."""
    model.eval()
    reached, accepted = np.zeros(args.ttt, np.int64), np.zeros(args.ttt, np.int64)
    n_bound = 0
    rng = np.random.default_rng(0)
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=bool(args.bf16)):
        for i in range(0, len(seqs), 4):
            b = dump.batch(seqs[i:i + 4], args.ttt, t2d, 1.0, rng, args.max_len)
            logits = model.unroll(b["feats"], b["tokens"], b["sel"], args.ttt)
            alive = b["depths"][0]["exists"].clone()
            n_bound += int(alive.sum())
            for j, (lg, d) in enumerate(zip(logits, b["depths"])):
                alive &= d["exists"]
                reached[j] += int(alive.sum())
                alive &= d2t_t[lg.float().argmax(-1)] == d["top1"]
                accepted[j] += int(alive.sum())
    model.train()
    return reached, accepted, n_bound


def print_eval(reached, accepted, n_bound):
    print("held-out teacher-forced acceptance (greedy chains, compared with the target's top-1):")
    print("depth  reached  accepted  rate    P(accepted >= depth+1)")
    tau = 1.0
    for j in range(len(reached)):
        rate = accepted[j] / reached[j] if reached[j] else 0.0
        cum = accepted[j] / max(1, n_bound)
        tau += cum
        print(f"{j:5d}  {reached[j]:7d}  {accepted[j]:8d}  {rate:.4f}  {cum:.4f}")
    print(f"{n_bound} boundaries: mean accepted length {tau:.3f} (chains of {len(reached)}, with the bonus token)",
          flush=True)
    return tau


def main(argv=None):
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    t_start = time.time()
    dump = Dump(args.data)
    target = Target(args.target)
    s = dump.settings
    if s["n_embd"] != target.n_embd or s["n_vocab"] != target.n_vocab or s["n_layer"] != target.n_layer:
        raise SystemExit(f"error: {args.data} was dumped from another model (n_embd {s['n_embd']}, n_vocab "
                         f"{s['n_vocab']}) than --target {args.target} ({target.n_embd}, {target.n_vocab})")
    if args.kind == "dflash":
        return train_dflash.run(args, dump, target, choose_vocab)
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
        cfg = head_config(args, target, len(d2t))
    t2d = np.full(target.n_vocab, -1, dtype=np.int64)
    t2d[d2t] = np.arange(len(d2t))
    d2t_t = torch.from_numpy(d2t)
    embed = torch.from_numpy(target.embedding()).to(torch.bfloat16 if args.bf16 else torch.float32)
    model = Eagle3Head(cfg, embed)
    if init is not None:
        checkpoint.load_weights(model, init, args.init)
    elif ckpt is None and args.init_output == "target":  # the target's output rows of the draft vocabulary
        with torch.no_grad():
            model.lm_head.weight.copy_(torch.from_numpy(target.output()[d2t]))
            model.out_norm.weight.copy_(torch.from_numpy(target.output_norm()))
    n_params = sum(p.numel() for p in model.parameters())
    print(f"head: H {cfg['H']}, {cfg['n_head']} heads ({cfg['n_head_kv']} kv) x {cfg['head_dim']}, n_ff {cfg['n_ff']}, "
          f"draft vocabulary {cfg['n_draft']}, {n_params / 1e6:.2f} M parameters (~{n_params * 1.07 / 2**20:.1f} MiB "
          f"as q8_0 + the tokenizer); layers {dump.layers}", flush=True)
    n_train_rows = sum(x.n for x in train)
    steps_per_epoch = max(1, len(train) // args.batch_seqs)
    total = args.steps or max(1, int(round(args.epochs * steps_per_epoch)))
    print(f"data: {len(train)} training sequences ({n_train_rows} rows), {len(held)} held out; {total} steps of "
          f"{args.batch_seqs} sequences, {args.ttt} depths, {args.boundary_frac:.0%} of the boundaries per step",
          flush=True)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.95), weight_decay=args.weight_decay)
    lr_at = checkpoint.lr_schedule(args, total, t_start)
    rng = np.random.default_rng(args.seed)
    step = checkpoint.restore(ckpt, model, opt, rng)
    desc = f"trained by tools/train-drafter on {os.path.basename(args.data)}"
    save = checkpoint.saver(ckpt_path, args.out, model, opt, rng, d2t, cfg,
                            lambda path, sd, text: write_head(path, target, cfg, sd, d2t, dump.layers, args.type, text), desc)
    stop = checkpoint.stop_on_signals()
    t_log = t_ckpt = time.time()
    ema = None
    acc_ema = np.zeros(args.ttt)
    rows_done = 0
    batches = checkpoint.batch_order(train, args.batch_seqs, rng)
    while step < total and not stop["now"]:
        if checkpoint.past_time_limit(args.time_limit, t_start):
            break
        idx = next(batches)
        b = dump.batch([train[i] for i in idx], args.ttt, t2d, args.boundary_frac, rng, args.max_len)
        for g in opt.param_groups:
            g["lr"] = lr_at(step)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bool(args.bf16)):
            logits = model.unroll(b["feats"], b["tokens"], b["sel"], args.ttt)
        loss, losses, accs = loss_and_acc(logits, b["depths"], args.ttt_decay)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        step += 1
        rows_done += int(b["n_rows"].sum())
        ema = loss.item() if ema is None else 0.95 * ema + 0.05 * loss.item()
        acc_ema = np.where(np.isnan(accs), acc_ema, 0.9 * acc_ema + 0.1 * np.nan_to_num(accs))
        now = time.time()
        if now - t_log > 30 or step == total or step == 1:
            el = now - t_start
            eta = el / step * (total - step)
            print(f"step {step}/{total} ({step / steps_per_epoch:.2f} epochs) loss {ema:.4f} [" +
                  " ".join(f"{x:.2f}" for x in losses) + "] top-1 acc per depth [" +
                  " ".join(f"{x:.2f}" for x in acc_ema) + f"] lr {lr_at(step):.2e} {rows_done / el:.0f} rows/s "
                  f"elapsed {el / 60:.1f} min eta {eta / 60:.1f} min", flush=True)
            t_log = now
        if now - t_ckpt > args.ckpt_minutes * 60:
            save(step)
            t_ckpt = time.time()
    save(step, final=True)
    if held:
        seqs = held[:args.eval_seqs] if args.eval_seqs else held
        reached, accepted, n_bound = evaluate(model, dump, seqs, args, t2d, d2t_t)
        print(f"evaluated {len(seqs)} held-out sequences")
        print_eval(reached, accepted, n_bound)
    print(f"wall time {(time.time() - t_start) / 60:.1f} min, final loss (EMA) {ema if ema is not None else float('nan'):.4f}")


if __name__ == "__main__":
    main()
