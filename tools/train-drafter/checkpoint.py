"""tools/train-drafter/checkpoint: what every trainer does around its loop — resume from a checkpoint, save the
checkpoint and the GGUF together (each written to .part, then renamed), stop cleanly on Ctrl-C / SIGTERM or at
the time limit, and the order of the training batches."""
import math
import os
import signal
import time

import numpy as np
import torch


def start(args, ckpt_path):
    """What a run starts from: (ckpt, init). ckpt: OUT's own checkpoint with --resume (model, optimizer, schedule
    and batch order go on); init: another checkpoint with --init (its weights, draft vocabulary and shape, under a
    new optimizer and schedule: a further stage on more data). Both None for a run from scratch."""
    if args.resume and args.init:
        raise SystemExit("error: --resume and --init exclude each other (--resume continues OUT's own checkpoint)")
    path = ckpt_path if args.resume else args.init
    if not path:
        return None, None
    if not os.path.exists(path):
        raise SystemExit(f"error: {'--resume' if args.resume else '--init'}: {path} does not exist")
    ck = torch.load(path, weights_only=False)
    if args.resume:
        print(f"resuming {path} at step {ck['step']}", flush=True)
        return ck, None
    print(f"starting from the weights of {path} (step {ck['step']} there), a new schedule", flush=True)
    return None, ck


def grow_vocab(init, d2t):
    """An --init checkpoint's draft vocabulary grown to d2t (a sorted superset of it): the output rows of its tokens
    carry over, a new token's row starts as the mean of the old rows (an average token's score, learnt from there)."""
    old = np.asarray(init["d2t"], dtype=np.int64)
    if len(d2t) == len(old):
        return
    w = init["model"]["lm_head.weight"]
    grown = w.mean(0, keepdim=True).repeat(len(d2t), 1)
    grown[torch.from_numpy(np.searchsorted(d2t, old))] = w
    init["model"]["lm_head.weight"] = grown
    init["d2t"] = d2t
    init["cfg"] = dict(init["cfg"], n_draft=len(d2t))
    print(f"draft vocabulary grown from {len(old)} to {len(d2t)} tokens (new output rows start at the mean row)",
          flush=True)


def load_weights(model, ck, path):
    """The weights of checkpoint ck (read from path) into model, or a clear error when they are another drafter's."""
    try:
        model.load_state_dict(ck["model"])
    except RuntimeError as e:
        raise SystemExit(f"error: --init: {path} holds another kind or shape of drafter: {str(e).splitlines()[0]}")


def lr_schedule(args, total, t_start):
    """lr_at(step): linear warm-up, then cosine to a tenth over the steps, or over --time-limit when that ends first."""
    def lr_at(st):
        done = st / total
        if args.time_limit:
            done = max(done, (time.time() - t_start) / 60 / args.time_limit)
        cos = 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, done)))
        return args.lr * min(1.0, (st + 1) / args.warmup) * cos
    return lr_at


def restore(ckpt, model, opt, rng):
    """Loads a checkpoint (or None) into model, optimizer and numpy generator; returns the step to go on from."""
    if ckpt is None:
        return 0
    model.load_state_dict(ckpt["model"])
    opt.load_state_dict(ckpt["opt"])
    rng.bit_generator.state = ckpt["rng"]
    return ckpt["step"]


def saver(ckpt_path, out, model, opt, rng, d2t, cfg, write_gguf, desc):
    """save(step, final=False): the checkpoint at ckpt_path and the GGUF at out, written by
    write_gguf(path, state_dict as float32 numpy, description)."""
    def save(step, final=False):
        torch.save(dict(model=model.state_dict(), opt=opt.state_dict(), step=step, rng=rng.bit_generator.state,
                        d2t=d2t, cfg=cfg), ckpt_path + ".part")
        os.replace(ckpt_path + ".part", ckpt_path)
        sd = {k: v.detach().float().numpy() for k, v in model.state_dict().items()}
        write_gguf(out + ".part", sd, desc + f", step {step}")
        os.replace(out + ".part", out)
        print(f"{'final' if final else 'checkpoint'}: step {step}: wrote {out} "
              f"({os.path.getsize(out) / 2**20:.1f} MiB) and {ckpt_path}", flush=True)
    return save


def stop_on_signals():
    """A dict whose "now" turns True on SIGINT or SIGTERM: the loop finishes its step, saves and ends."""
    stop = {"now": False}
    signal.signal(signal.SIGINT, lambda *_: stop.update(now=True))
    signal.signal(signal.SIGTERM, lambda *_: stop.update(now=True))
    return stop


def batch_order(train, batch_seqs, rng):
    """Yields the indices of each batch of training sequences, forever: every pass shuffled, then sorted by
    length in groups of 8 batches (less padding, still mixed)."""
    while True:
        perm = rng.permutation(len(train))
        grp = 8 * batch_seqs
        order = [i for g in range(0, len(perm), grp) for i in sorted(perm[g:g + grp], key=lambda i: train[i].n)]
        for at in range(0, max(len(order) - batch_seqs, 0) + 1, batch_seqs):  # fewer than a batch: all of them
            yield order[at:at + batch_seqs]


def past_time_limit(limit_minutes, t_start):
    """True (and says so) once limit_minutes (0: none) of wall time have passed since t_start."""
    if limit_minutes and (time.time() - t_start) / 60 > limit_minutes:
        print(f"time limit of {limit_minutes} minutes reached", flush=True)
        return True
    return False
