"""tools/train-drafter/tests/test_train_small: end to end on SmolLM2 — `bee train-data` dumps a few answers,
train_drafter.py fits an EAGLE-3 head to them, and Bee's own loader and forward (`bee train-data --eval-head`) load
the GGUF and draft what PyTorch drafts: the same chains accepted, well above chance on the data it was fitted to.
Also an interrupted run resumes from its checkpoint. Needs PyTorch (scripts/setup.sh train-drafter), the build and
the models: python3 -m pytest -q tools/train-drafter/tests
"""
import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")  # this folder is run only where PyTorch is installed (see README.md)

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[2]
BEE = pathlib.Path(os.environ.get("BEE_BIN", ROOT / "build" / "bee"))
SMOLLM = ROOT / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"
sys.path.insert(0, str(HERE.parent))
import train_drafter  # noqa: E402
from dump import Dump  # noqa: E402
from eagle3_model import Eagle3Head  # noqa: E402
from eagle3_gguf import Target  # noqa: E402

PROMPTS = ["Explain how rainbows form.", "List three uses of vinegar.", "Write a haiku about the sea.",
           "What is a prime number?", "Give me two tips to sleep better.", "Describe a cat in one sentence."]


def bee(*args):
    r = subprocess.run([str(BEE), *map(str, args)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    return r


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    assert BEE.exists() and SMOLLM.exists(), "build bee and fetch the models first (make build models)"
    tmp = tmp_path_factory.mktemp("train_small")
    (tmp / "prompts.txt").write_text("\n".join(PROMPTS) + "\n")
    bee("train-data", "-m", SMOLLM, "--prompts", tmp / "prompts.txt", "-o", tmp / "dump", "-n", "40", "--temp", "0",
        "-np", "6", "-t", "2")
    return tmp


def train(data, *extra):
    out = data / "head.gguf"
    train_drafter.main(["eagle3", "--data", str(data / "dump"), "--target", str(SMOLLM), "--out", str(out),
                        "--batch-seqs", "3", "--boundary-frac", "1", "--ttt", "3", "--lr", "3e-3", "--warmup", "5",
                        "--type", "f32", "--bf16", "0", "--n-ff", "256", *extra])
    return out


def torch_chains(data, out):
    """Teacher-forced chains with the PyTorch head over every sequence (as bee train-data --eval-head --holdout 0)."""
    ck = torch.load(str(out) + ".ckpt.pt", weights_only=False)
    target = Target(str(SMOLLM))
    model = Eagle3Head(ck["cfg"], torch.from_numpy(target.embedding())).eval()
    model.load_state_dict(ck["model"])
    dump = Dump(str(data / "dump"))
    t2d = np.full(target.n_vocab, -1, dtype=np.int64)
    t2d[ck["d2t"]] = np.arange(len(ck["d2t"]))
    args = train_drafter.parse_args(["eagle3", "--data", "x", "--target", "x", "--out", "x", "--ttt", "3", "--bf16", "0"])
    return train_drafter.evaluate(model, dump, dump.sequences, args, t2d, torch.from_numpy(ck["d2t"]))


def test_trained_head_loads_and_drafts_in_bee(data):
    out = train(data, "--steps", "40")
    assert out.exists() and out.stat().st_size < 16 * 2**20
    r = bee("train-data", "--eval-head", out, "-m", SMOLLM, "--data", data / "dump", "--depth", "3", "--json", "-t", "2")
    res = json.loads(r.stdout.strip().splitlines()[-1])
    reached, accepted, n_bound = torch_chains(data, out)
    assert res["boundaries"] == n_bound
    bee_reached = [d["reached"] for d in res["depths"]]
    bee_accepted = [d["accepted"] for d in res["depths"]]
    assert bee_reached[0] == reached[0]
    # the same head in Bee's forward (f32 weights) and in PyTorch: the same greedy drafts but for rare near-ties
    for j in range(3):
        assert abs(bee_accepted[j] - accepted[j]) <= max(2, 0.03 * reached[j]), (bee_accepted, list(accepted))
    # fitted to these answers, the head predicts most of their next tokens
    assert bee_accepted[0] / bee_reached[0] > 0.5, res
    assert bee_accepted[1] > 0  # chains go deeper than one token


def test_resume_continues_from_checkpoint(data, capsys):
    train(data, "--steps", "4", "--type", "q8_0")
    capsys.readouterr()
    out = train(data, "--steps", "6", "--resume")
    log = capsys.readouterr().out
    assert "resuming" in log and "at step 4" in log and "step 6/6" in log
    ck = torch.load(str(out) + ".ckpt.pt", weights_only=False)
    assert ck["step"] == 6
    bee("train-data", "--eval-head", out, "-m", SMOLLM, "--data", data / "dump", "--depth", "2")


def test_init_starts_a_new_stage_from_a_checkpoint(data, capsys):
    first = train(data, "--steps", "4")
    first_ck = torch.load(str(first) + ".ckpt.pt", weights_only=False)
    capsys.readouterr()
    second = data / "stage2.gguf"
    args = ["eagle3", "--data", str(data / "dump"), "--target", str(SMOLLM), "--out", str(second), "--batch-seqs", "3",
            "--ttt", "2", "--lr", "1e-9", "--warmup", "1", "--type", "f32", "--bf16", "0", "--steps", "2",
            "--init", str(first) + ".ckpt.pt"]
    train_drafter.main(args)
    log = capsys.readouterr().out
    assert "starting from the weights of" in log and "step 2/2" in log
    ck = torch.load(str(second) + ".ckpt.pt", weights_only=False)
    assert ck["step"] == 2 and np.array_equal(ck["d2t"], first_ck["d2t"]) and ck["cfg"] == first_ck["cfg"]
    # a learning rate of 1e-9 leaves the weights where the first stage left them
    for k, v in first_ck["model"].items():
        assert torch.allclose(ck["model"][k].float(), v.float(), atol=1e-5), k
    with pytest.raises(SystemExit, match="exclude each other"):
        train_drafter.main(args + ["--resume"])
    with pytest.raises(SystemExit, match="does not exist"):
        train_drafter.main(args[:-1] + [str(data / "missing.ckpt.pt")])


def test_init_grows_the_draft_vocabulary(data, capsys):
    first = train(data, "--steps", "2", "--draft-vocab", "40")
    first_ck = torch.load(str(first) + ".ckpt.pt", weights_only=False)
    second = data / "grown.gguf"
    train_drafter.main(["eagle3", "--data", str(data / "dump"), "--target", str(SMOLLM), "--out", str(second),
                        "--batch-seqs", "3", "--ttt", "2", "--lr", "1e-9", "--warmup", "1", "--type", "f32", "--bf16",
                        "0", "--steps", "1", "--draft-vocab", "70", "--init", str(first) + ".ckpt.pt"])
    assert "draft vocabulary grown from 40 to 70 tokens" in capsys.readouterr().out
    ck = torch.load(str(second) + ".ckpt.pt", weights_only=False)
    old, new = first_ck["d2t"], ck["d2t"]
    assert len(new) == 70 and ck["cfg"]["n_draft"] == 70 and np.all(np.diff(new) > 0) and np.isin(old, new).all()
    w_old, w_new = first_ck["model"]["lm_head.weight"], ck["model"]["lm_head.weight"]
    at = np.searchsorted(new, old)
    assert torch.allclose(w_new[at], w_old, atol=1e-5)  # the old tokens' rows carried over
    fresh = np.setdiff1d(np.arange(70), at)
    assert torch.allclose(w_new[fresh], w_old.mean(0).expand(len(fresh), -1), atol=1e-5)
    bee("train-data", "--eval-head", second, "-m", SMOLLM, "--data", data / "dump", "--depth", "2")
