"""tools/train-drafter/tests/test_unroll_reference: the training-time-test unroll of eagle3_model equals drafting
with the independent float64 reference forward (tests/reference/eagle3_reference.py, the one Bee's forward is
checked against): depth 0 over the sequence, then chains fed the head's own output, each from its boundary."""
import importlib.util
import pathlib
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")  # this folder is run only where PyTorch is installed (see README.md)

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(HERE.parent))
from eagle3_model import Eagle3Head  # noqa: E402

spec = importlib.util.spec_from_file_location("eagle3_reference", ROOT / "tests" / "reference" / "eagle3_reference.py")
ref = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ref)


@pytest.mark.parametrize("norm_before_fc,norm_before_residual", [(True, False), (False, True)])
def test_unroll_matches_reference_chains(norm_before_fc, norm_before_residual):
    c = dict(H=32, Ht=48, n_head=4, n_head_kv=2, n_ff=40, n_vocab=64, n_draft=24, norm_before_fc=norm_before_fc,
             norm_before_residual=norm_before_residual, rope_base=10000.0)
    rng = np.random.default_rng(3)
    w = ref.make_weights(c, rng)
    cfg = dict(H=32, Ht=48, n_head=4, n_head_kv=2, head_dim=8, n_ff=40, n_draft=24, eps=ref.EPS,
               rope_theta=c["rope_base"], norm_before_fc=norm_before_fc, norm_before_residual=norm_before_residual)
    model = Eagle3Head(cfg, torch.from_numpy(w["embed"])).double()
    names = dict(fc="fc", q="q", k="k", v="v", o="o", gate="gate", up="up", down="down", lm_head="lm_head",
                 attn_norm="input_norm", hidden_norm="hidden_norm", ffn_norm="post_norm", out_norm="norm")
    if norm_before_fc:
        names["enc_norm"] = "fc_norm"
    with torch.no_grad():
        for mod, key in names.items():
            getattr(model, mod).weight.copy_(torch.from_numpy(w[key]))
    L, steps = 9, 3
    feats = rng.standard_normal((L, 3 * c["Ht"]))
    tokens = rng.integers(0, c["n_vocab"], L + steps + 1)
    sel = np.array([0, 3, 5, 8])
    logits = model.unroll(torch.from_numpy(feats)[None], torch.from_numpy(tokens)[None],
                          torch.from_numpy(sel)[None], steps)
    for m, p in enumerate(sel):
        head = ref.Head(c, w)
        g = head.encode(feats)
        for t in range(p + 1):  # the drafter's cache: depth-0 rows up to the boundary
            out, lg = head.decode_row(int(tokens[t + 1]), t, g[t])
        np.testing.assert_allclose(logits[0][0, m].detach().numpy(), lg, rtol=1e-9, atol=1e-9)
        for j in range(1, steps):  # deeper: (token p+1+j, own output) at p+j
            out, lg = head.decode_row(int(tokens[p + 1 + j]), p + j, out)
            np.testing.assert_allclose(logits[j][0, m].detach().numpy(), lg, rtol=1e-9, atol=1e-9)
