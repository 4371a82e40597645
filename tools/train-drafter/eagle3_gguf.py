"""tools/train-drafter/eagle3_gguf: reads what training needs from the target GGUF (hyper-parameters, token
embedding, output norm and head, tokenizer) and writes a trained head in llama.cpp's `eagle3` GGUF layout
(specs/drafters.md §3.3, §8.1): Q/K rows permuted for llama's NORM rope as upstream's converter does, `d2t` as I64
absolute target ids, no `token_embd` (the target's is used), the target's tokenizer copied (upstream refuses a
head without one).
"""
import numpy as np

import gguf

Q = gguf.GGMLQuantizationType


class Target:
    """The target model's GGUF: hyper-parameters and the tensors a head falls back to."""

    def __init__(self, path):
        self.path = path
        self.reader = gguf.GGUFReader(path)
        f = self.reader.fields
        self.arch = f["general.architecture"].contents()
        self.name = f["general.name"].contents() if "general.name" in f else path
        key = lambda k: f[f"{self.arch}.{k}"].contents()
        self.n_embd = int(key("embedding_length"))
        self.n_layer = int(key("block_count"))
        self.n_ctx = int(key("context_length"))
        self.eps = float(key("attention.layer_norm_rms_epsilon"))
        self.n_vocab = len(f["tokenizer.ggml.tokens"].contents())
        self.tensors = {t.name: t for t in self.reader.tensors}

    def tensor(self, name):
        """A tensor as float32 numpy in (rows, cols) order (ggml's ne reversed)."""
        t = self.tensors[name]
        data = gguf.quants.dequantize(t.data, t.tensor_type)
        return np.array(data, dtype=np.float32).reshape([int(d) for d in reversed(t.shape)])

    def embedding(self):
        return self.tensor("token_embd.weight")  # (n_vocab, n_embd)

    def output(self):
        """The target's output head (n_vocab, n_embd): its own, or the tied embedding."""
        return self.tensor("output.weight" if "output.weight" in self.tensors else "token_embd.weight")

    def output_norm(self):
        return self.tensor("output_norm.weight")

    def copy_tokenizer(self, w):
        for name, field in self.reader.fields.items():
            if not name.startswith("tokenizer."):
                continue
            vtype = field.types[0]
            sub = field.types[1] if vtype == gguf.GGUFValueType.ARRAY else None
            w.add_key_value(name, field.contents(), vtype, sub_type=sub)


def permute_for_gguf(w, n_head):
    """llama.cpp's converter permutation of HF Q/K rows, so its adjacent-pair rope equals rotate-half."""
    out, inp = w.shape
    return w.reshape(n_head, 2, out // n_head // 2, inp).swapaxes(1, 2).reshape(out, inp)


def _matrix(w, name, a, qtype):
    a = np.ascontiguousarray(a, dtype=np.float32)
    if qtype == "f32" or a.shape[-1] % 32 != 0:
        w.add_tensor(name, a)
    elif qtype == "f16":
        w.add_tensor(name, a.astype(np.float16))
    else:
        qt = {"q8_0": Q.Q8_0, "q4_1": Q.Q4_1}[qtype]
        data = gguf.quants.quantize(a, qt)
        w.add_tensor(name, data, raw_dtype=qt)  # the byte shape; the writer derives the element shape


def write_head(path, target, cfg, sd, d2t, layers, qtype="q8_0", description=""):
    """sd: name -> float32 numpy (HF layout, as Eagle3Head's state_dict); d2t: draft id -> absolute target id."""
    H, hd = cfg["H"], cfg["head_dim"]
    w = gguf.GGUFWriter(path, "eagle3")
    w.add_string("general.name", f"EAGLE-3 head for {target.name}")
    if description:
        w.add_string("general.description", description)
    w.add_uint32("eagle3.block_count", 1)
    w.add_uint32("eagle3.context_length", target.n_ctx)
    w.add_uint32("eagle3.embedding_length", H)
    w.add_uint32("eagle3.feed_forward_length", cfg["n_ff"])
    w.add_uint32("eagle3.attention.head_count", cfg["n_head"])
    w.add_uint32("eagle3.attention.head_count_kv", cfg["n_head_kv"])
    w.add_uint32("eagle3.attention.key_length", hd)
    w.add_uint32("eagle3.attention.value_length", hd)
    w.add_uint32("eagle3.rope.dimension_count", hd)
    w.add_float32("eagle3.rope.freq_base", cfg["rope_theta"])
    w.add_float32("eagle3.attention.layer_norm_rms_epsilon", cfg["eps"])
    w.add_uint32("eagle3.vocab_size", target.n_vocab)
    w.add_array("eagle3.target_layers", [int(i) for i in layers])
    w.add_uint32("eagle3.target_hidden_size", cfg["Ht"])
    w.add_bool("eagle3.norm_before_residual", bool(cfg["norm_before_residual"]))
    w.add_bool("eagle3.norm_before_fc", bool(cfg["norm_before_fc"]))
    target.copy_tokenizer(w)
    f32 = lambda a: np.ascontiguousarray(a, dtype=np.float32)
    _matrix(w, "fc.weight", sd["fc.weight"], qtype)
    if cfg["norm_before_fc"]:
        w.add_tensor("enc.output_norm.weight", f32(sd["enc_norm.weight"]))
    w.add_tensor("d2t", np.ascontiguousarray(d2t, dtype=np.int64))
    w.add_tensor("blk.0.attn_norm.weight", f32(sd["attn_norm.weight"]))
    w.add_tensor("blk.0.attn_norm_2.weight", f32(sd["hidden_norm.weight"]))
    _matrix(w, "blk.0.attn_q.weight", permute_for_gguf(sd["q.weight"], cfg["n_head"]), qtype)
    _matrix(w, "blk.0.attn_k.weight", permute_for_gguf(sd["k.weight"], cfg["n_head_kv"]), qtype)
    _matrix(w, "blk.0.attn_v.weight", sd["v.weight"], qtype)
    _matrix(w, "blk.0.attn_output.weight", sd["o.weight"], qtype)
    w.add_tensor("blk.0.ffn_norm.weight", f32(sd["ffn_norm.weight"]))
    _matrix(w, "blk.0.ffn_gate.weight", sd["gate.weight"], qtype)
    _matrix(w, "blk.0.ffn_up.weight", sd["up.weight"], qtype)
    _matrix(w, "blk.0.ffn_down.weight", sd["down.weight"], qtype)
    w.add_tensor("output_norm.weight", f32(sd["out_norm.weight"]))
    _matrix(w, "output.weight", sd["lm_head.weight"], qtype)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
