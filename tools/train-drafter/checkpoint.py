"""tools/train-drafter/checkpoint: what every trainer does around its loop — resume from a checkpoint, save the
checkpoint and the GGUF together (each written to .part, then renamed), stop cleanly on Ctrl-C / SIGTERM or at
the time limit, and the order of the training batches."""
import os
import signal
import time

import torch


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
