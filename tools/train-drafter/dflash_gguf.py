"""tools/train-drafter/dflash_gguf: writes a trained DFlash drafter in llama.cpp's `dflash` GGUF layout
(specs/drafters.md §2.3 b, §8.2, §8.7), as Bee's DflashModel::load reads it:

- `dflash.target_layers`: Bee's / llama.cpp's capture ids (the input of layer k = HF id + 1), which are the ids
  `bee train-data --layers` dumped; `dflash.block_size`; the mask token in `tokenizer.ggml.mask_token_id`;
- `fc.weight` (the training's per-feature scale folded into its columns), `enc.output_norm.weight` (the hidden norm after fc), `output_norm.weight`, per layer
  `blk.i.{attn_norm, attn_q, attn_k, attn_v, attn_output, attn_q_norm, attn_k_norm, ffn_norm, ffn_gate, ffn_up,
  ffn_down}`, the drafter's own `output.weight` over the draft vocabulary and `d2t` (I64 absolute target ids);
  no `token_embd` (the target's is used);
- Q/K rows as they are (NEOX rope, the converters do not permute them); 2-D weights Q8_0 by default;
- the target's tokenizer copied (llama.cpp checks the drafter's vocabulary against the target's).
"""
import numpy as np

import gguf
from eagle3_gguf import _matrix


def write_dflash(path, target, cfg, sd, d2t, layers, qtype="q8_0", description=""):
    """sd: name -> float32 numpy (DflashDrafter's state_dict, HF layout); d2t: draft id -> absolute target id;
    layers: the target layers read, in Bee's capture convention (input of layer k)."""
    a = "dflash"
    w = gguf.GGUFWriter(path, a)
    w.add_string("general.name", f"DFlash drafter for {target.name}")
    if description:
        w.add_string("general.description", description)
    hd = cfg["head_dim"]
    for key, val in [("block_count", cfg["n_layer"]), ("context_length", target.n_ctx),
                     ("embedding_length", cfg["H"]), ("feed_forward_length", cfg["n_ff"]),
                     ("attention.head_count", cfg["n_head"]), ("attention.head_count_kv", cfg["n_head_kv"]),
                     ("attention.key_length", hd), ("attention.value_length", hd), ("rope.dimension_count", hd),
                     ("block_size", cfg["block_size"])]:
        w.add_uint32(f"{a}.{key}", int(val))
    w.add_float32(f"{a}.rope.freq_base", float(cfg["rope_theta"]))
    w.add_float32(f"{a}.attention.layer_norm_rms_epsilon", float(cfg["eps"]))
    w.add_array(f"{a}.target_layers", [int(i) for i in layers])
    target.copy_tokenizer(w)
    w.add_mask_token_id(int(cfg["mask_token"]))
    f32 = lambda x: np.ascontiguousarray(x, dtype=np.float32)
    _matrix(w, "fc.weight", sd["fc.weight"] * np.asarray(cfg["feat_scale"], dtype=np.float32)[None, :], qtype)
    w.add_tensor("enc.output_norm.weight", f32(sd["hidden_norm.weight"]))
    w.add_tensor("output_norm.weight", f32(sd["out_norm.weight"]))
    _matrix(w, "output.weight", sd["lm_head.weight"], qtype)
    w.add_tensor("d2t", np.ascontiguousarray(d2t, dtype=np.int64))
    names = [("attn_norm", "attn_norm"), ("attn_q_norm", "q_norm"), ("attn_k_norm", "k_norm"),
             ("ffn_norm", "ffn_norm")]
    mats = [("attn_q", "q"), ("attn_k", "k"), ("attn_v", "v"), ("attn_output", "o"), ("ffn_gate", "gate"),
            ("ffn_up", "up"), ("ffn_down", "down")]
    for i in range(cfg["n_layer"]):
        for gname, tname in names:
            w.add_tensor(f"blk.{i}.{gname}.weight", f32(sd[f"layers.{i}.{tname}.weight"]))
        for gname, tname in mats:
            _matrix(w, f"blk.{i}.{gname}.weight", sd[f"layers.{i}.{tname}.weight"], qtype)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
