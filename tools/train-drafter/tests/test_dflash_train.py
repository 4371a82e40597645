"""tools/train-drafter/tests/test_dflash_train: `train_drafter.py dflash` on a small synthetic dump for SmolLM2 —
two training steps write a GGUF in llama.cpp's `dflash` layout; the float64 numpy reference forward of
tests/reference/dflash_reference.py, fed the tensors read back from that file, drafts the blocks PyTorch drafts;
Bee loads the file and speculates with it (greedy output unchanged); --resume continues the checkpoint.
Needs PyTorch, the build and the models: python3 -m pytest -q tools/train-drafter/tests
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
sys.path.insert(0, str(ROOT / "tests" / "reference"))
import train_drafter  # noqa: E402
from dflash_model import DflashDrafter  # noqa: E402
from dflash_reference import Drafter, read_drafter  # noqa: E402
from eagle3_gguf import Target  # noqa: E402

LAYERS, K = [2, 15, 27], 4


def fake_dump(folder, n_seqs=6, seed=3):
    """A `bee train-data` folder with random features and top-k for SmolLM2's shape (one shard)."""
    rng = np.random.default_rng(seed)
    folder.mkdir()
    seqs, toks, hid, ids, logp, row = [], [], [], [], [], 0
    for i in range(n_seqs):
        n, n_prompt = int(rng.integers(30, 45)), 8
        t = rng.integers(17, 200, n)
        top = np.stack([rng.choice(np.arange(17, 200), K, replace=False) for _ in range(n)])
        top[:-1, 0] = t[1:]  # greedy: the next token is the top-1
        lp = np.sort(rng.standard_normal((n, K)) * 2, axis=1)[:, ::-1] - 1.0
        toks.append(t), ids.append(top), logp.append(lp)
        hid.append(rng.standard_normal((n, len(LAYERS), 576)))
        seqs.append(dict(prompt=i, row0=row, n_rows=n, n_prompt=n_prompt, eog=False, prompt_text="", response_text=""))
        row += n
    names = {k: f"shard-00000.{k}.npy" for k in ("tokens", "hidden", "topk_ids", "topk_logp")}
    np.save(folder / names["tokens"], np.concatenate(toks).astype(np.int32))
    np.save(folder / names["hidden"], np.concatenate(hid).astype(np.float16))
    np.save(folder / names["topk_ids"], np.concatenate(ids).astype(np.int32))
    np.save(folder / names["topk_logp"], np.concatenate(logp).astype(np.float32))
    settings = dict(layers=LAYERS, model=str(SMOLLM), n_embd=576, n_layer=30, n_vocab=49152, n_predict=40,
                    top_k=K, temp=0.0)
    man = dict(format="bee-train-data", version=1, settings=settings,
               shards=[dict(name="shard-00000", n_rows=row, sequences=seqs, **names)])
    (folder / "manifest.json").write_text(json.dumps(man))


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    assert SMOLLM.exists(), "fetch the models first (make models)"
    tmp = tmp_path_factory.mktemp("dflash_train")
    fake_dump(tmp / "dump")
    out = tmp / "drafter.gguf"
    args = ["dflash", "--data", str(tmp / "dump"), "--target", str(SMOLLM), "--out", str(out), "--steps", "2",
            "--batch-seqs", "3", "--anchors", "6", "--block-size", "5", "--n-ff", "64", "--draft-vocab", "96",
            "--type", "f32", "--bf16", "0", "--lr", "3e-3", "--warmup", "1", "--cross-ctx", "16"]
    train_drafter.main(args)
    return tmp, out, args


def read_back(path, target):
    """The numpy reference's config and weights, from the GGUF alone."""
    c, w, d2t, f = read_drafter(path, target.embedding(), 16)
    assert f["general.architecture"].contents() == "dflash"
    assert list(f["dflash.target_layers"].contents()) == LAYERS and f["dflash.block_size"].contents() == 5
    return c, w, d2t


def test_written_drafter_matches_reference_forward(trained):
    tmp, out, _ = trained
    target = Target(str(SMOLLM))
    c, w, d2t = read_back(out, target)
    ck = torch.load(str(out) + ".ckpt.pt", weights_only=False)
    assert (d2t == ck["d2t"]).all() and len(d2t) <= 96
    model = DflashDrafter(ck["cfg"], torch.from_numpy(target.embedding()).double()).double().eval()
    model.load_state_dict(ck["model"])
    ref = Drafter(c, w)
    man = json.loads((tmp / "dump" / "manifest.json").read_text())
    s = man["shards"][0]["sequences"][1]
    rows = slice(s["row0"], s["row0"] + s["n_rows"])
    feats = np.load(tmp / "dump" / "shard-00000.hidden.npy")[rows].reshape(s["n_rows"], -1).astype(np.float64)
    tokens = np.load(tmp / "dump" / "shard-00000.tokens.npy")[rows].astype(np.int64)
    anchors = np.array([1, 9, 20, s["n_rows"] - 2])  # the window of 16 cuts the context of the later ones
    with torch.no_grad():
        got = model(torch.from_numpy(feats)[None], torch.from_numpy(tokens)[None], torch.from_numpy(anchors)[None],
                    cross_ctx=16)[0].numpy()
    for a, p in enumerate(anchors):
        exp = ref.draft(feats, np.arange(len(tokens)), int(tokens[p]), int(p), 4)
        np.testing.assert_allclose(got[a], exp, rtol=1e-6, atol=1e-6 * np.abs(exp).max())


def test_bee_loads_and_speculates_with_it(trained, tmp_path):
    _, out, _ = trained
    assert BEE.exists(), "build bee first (make build)"
    prompts = tmp_path / "p.jsonl"
    prompts.write_text(json.dumps({"id": "sea", "user": "Write a haiku about the sea."}) + "\n")
    r = subprocess.run([str(BEE), "bench", "spec", "-m", str(SMOLLM), "-md", str(out), "--prompts", str(prompts),
                        "-n", "24", "--ignore-eos", "--types", "dflash", "-o", "json", "-t", "2"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    res = {x["spec_type"]: x for x in json.loads(r.stdout)}
    assert res["dflash"]["same_tokens"] and res["dflash"]["draft_n"] > 0, res["dflash"]


def test_resume_continues_the_checkpoint(trained, capsys):
    _, out, args = trained
    capsys.readouterr()
    train_drafter.main(args[:args.index("--steps")] + ["--steps", "3"] + args[args.index("--steps") + 2:] + ["--resume"])
    text = capsys.readouterr().out
    assert "resuming" in text and "at step 2" in text and "final: step 3" in text


def test_init_starts_a_new_stage_and_refuses_another_drafter(trained, capsys, tmp_path):
    tmp, out, args = trained
    stage2 = tmp_path / "stage2.gguf"
    new = args[:args.index("--out")] + ["--out", str(stage2)] + args[args.index("--out") + 2:]
    capsys.readouterr()
    train_drafter.main(new + ["--init", str(out) + ".ckpt.pt"])
    text = capsys.readouterr().out
    assert "starting from the weights of" in text and "final: step 2" in text
    first = torch.load(str(out) + ".ckpt.pt", weights_only=False)
    ck = torch.load(str(stage2) + ".ckpt.pt", weights_only=False)
    assert ck["step"] == 2 and np.array_equal(ck["d2t"], first["d2t"])
    other = tmp_path / "other.ckpt.pt"  # an EAGLE-3 checkpoint's weights are refused by name
    torch.save(dict(model={"fc.weight": torch.zeros(1)}, step=1, d2t=first["d2t"], cfg=first["cfg"]), other)
    with pytest.raises(SystemExit, match="another kind or shape of drafter"):
        train_drafter.main(new + ["--init", str(other)])
