// tests/unit/model/test_model_load: Model::load of the tiny models (hparams, binding) and its errors, which name file and tensor/key.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "base/error.h"
#include "tiny_model.h"

namespace bee::test {
namespace {

TEST(ModelLoad, HparamsAndLayersOfEveryPreset) {
    for (const char* preset : {"llama", "llama_tied", "qwen2", "qwen3", "gemma3", "llama_q8_0", "llama_q4_k"}) {
        SCOPED_TRACE(preset);
        const TinyModel& tm = tiny_model(preset);
        const HParams& hp = tm.model->hparams();
        EXPECT_EQ(hp.arch, tm.cfg.arch);
        EXPECT_EQ(hp.n_vocab, tm.cfg.n_vocab);
        EXPECT_EQ(hp.n_embd, tm.cfg.n_embd);
        EXPECT_EQ(hp.n_layer, tm.cfg.n_layer);
        EXPECT_EQ(hp.n_head, tm.cfg.n_head);
        EXPECT_EQ(hp.n_head_kv, tm.cfg.n_head_kv);
        EXPECT_EQ(hp.head_dim, tm.cfg.head_dim);
        EXPECT_EQ(hp.n_ff, tm.cfg.n_ff);
        EXPECT_EQ(hp.n_ctx_train, tm.cfg.n_ctx_train);
        EXPECT_FLOAT_EQ(hp.norm_eps, tm.cfg.norm_eps);
        EXPECT_EQ(hp.n_swa, tm.cfg.n_swa);
        const ModelWeights& w = tm.model->weights();
        EXPECT_EQ(w.output.data == w.tok_embd.data, tm.cfg.tied_output);
        EXPECT_EQ(w.tok_embd.type, tm.cfg.wtype);
        EXPECT_EQ((bool)w.layers[0].bq, tm.cfg.qkv_bias);
        EXPECT_EQ((bool)w.layers[0].q_norm, tm.cfg.qk_norm);
        EXPECT_EQ((bool)w.layers[0].post_ffn_norm, tm.cfg.post_norms);
        EXPECT_EQ(tm.model->tokenizer().n_vocab(), tm.cfg.n_vocab);
        EXPECT_EQ(tm.model->tokenizer().bos(), 1);
        EXPECT_NE(tm.model->describe().find(tm.cfg.arch), std::string::npos);
    }
}

TEST(ModelLoad, RopeOptions) {
    const TinyModel& llama3 = tiny_model("llama_tied");
    for (const LayerParams& lp : llama3.model->hparams().layers) {
        EXPECT_EQ(lp.rope.freq_factors, (const float*)llama3.model->weights().rope_freqs.data);
        EXPECT_NE(lp.rope.freq_factors, nullptr);
        EXPECT_FLOAT_EQ(lp.rope.freq_scale, 0.5f);
        EXPECT_EQ(lp.rope.mode, RopeMode::normal);
    }
    EXPECT_EQ(tiny_model("qwen2").model->hparams().layers[0].rope.n_rot, 8);
}

TEST(ModelLoad, Gemma3LocalAndGlobalLayers) {
    const TinyModel& tm = tiny_model("gemma3");
    const HParams& hp = tm.model->hparams();
    EXPECT_FLOAT_EQ(hp.embd_scale, std::sqrt((float)tm.cfg.n_embd));
    for (int il = 0; il < hp.n_layer; il++) {
        SCOPED_TRACE(il);
        const bool local = il % 6 < 5;
        EXPECT_EQ(hp.layers[il].swa, local);
        EXPECT_FLOAT_EQ(hp.layers[il].rope.freq_base, local ? tm.cfg.rope_base_swa : tm.cfg.rope_base);
        EXPECT_FLOAT_EQ(hp.layers[il].rope.freq_scale, local ? 1.0f : 1.0f / tm.cfg.rope_scale);
        EXPECT_EQ(hp.layers[il].rope.mode, RopeMode::neox);
    }
}

// Writes cfg with `hook` (and arch_name) and expects Model::load to throw an Error whose message
// names the file and contains every string in `want`.
void expect_load_error(const TinyConfig& cfg, const TensorHook& hook, const std::vector<std::string>& want,
                       const std::string& arch_name = "") {
    const std::string path = temp_path("bad");
    write_tiny_model(cfg, path, hook, arch_name);
    try {
        Model::load(path);
        ADD_FAILURE() << "expected Error";
    } catch (const Error& e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find(path), std::string::npos) << msg;
        for (const std::string& s : want) EXPECT_NE(msg.find(s), std::string::npos) << "'" << s << "' in: " << msg;
    }
    unlink(path.c_str());
}

TEST(ModelLoadErrors, MissingTensor) {
    const TinyConfig cfg = tiny_config("llama");
    expect_load_error(cfg, [](TensorSpec& t) { return t.name != "blk.1.ffn_up.weight"; },
                      {"'blk.1.ffn_up.weight'", "missing"});
    expect_load_error(cfg, [](TensorSpec& t) { return t.name != "output_norm.weight"; },
                      {"'output_norm.weight'", "missing"});
    expect_load_error(tiny_config("qwen2"), [](TensorSpec& t) { return t.name != "blk.0.attn_v.bias"; },
                      {"'blk.0.attn_v.bias'", "missing"});
    expect_load_error(tiny_config("gemma3"), [](TensorSpec& t) { return t.name != "blk.6.post_ffw_norm.weight"; },
                      {"'blk.6.post_ffw_norm.weight'", "missing"});
}

TEST(ModelLoadErrors, WrongShape) {
    const TinyConfig cfg = tiny_config("llama");
    expect_load_error(cfg,
                      [](TensorSpec& t) {
                          if (t.name == "blk.0.attn_k.weight") {  // 48 rows instead of n_head_kv * hd = 32
                              t.ne = {64, 48};
                              t.bytes.resize(64 * 48 * sizeof(float));
                          }
                          return true;
                      },
                      {"'blk.0.attn_k.weight'", "shape [64, 48, 1, 1], expected [64, 32]"});
    expect_load_error(cfg,
                      [](TensorSpec& t) {
                          if (t.name == "blk.1.ffn_norm.weight") t.ne = {32, 2};  // same bytes, 2-D
                          return true;
                      },
                      {"'blk.1.ffn_norm.weight'", "expected [64, 1]"});
}

TEST(ModelLoadErrors, UnsupportedType) {
    TinyConfig cfg = tiny_config("llama");
    cfg.n_embd = 256;  // iq2_xxs blocks are 256 wide
    cfg.head_dim = 64;
    expect_load_error(cfg,
                      [](TensorSpec& t) {
                          if (t.name == "blk.1.attn_q.weight") {  // right shape, right byte size, no kernels
                              t.type = GgmlType::IQ2_XXS;
                              t.bytes.assign(ggml_row_size(GgmlType::IQ2_XXS, t.ne[0]) * t.ne[1], 0);
                          }
                          return true;
                      },
                      {"'blk.1.attn_q.weight'", "iq2_xxs", "not support"});
    expect_load_error(tiny_config("llama"),
                      [](TensorSpec& t) {
                          if (t.name == "blk.0.attn_norm.weight") {  // norms must be f32
                              t.type = GgmlType::F16;
                              t.bytes.resize(t.bytes.size() / 2);
                          }
                          return true;
                      },
                      {"'blk.0.attn_norm.weight'", "f16", "expected f32"});
}

TEST(ModelLoadErrors, UnknownArchitecture) {
    expect_load_error(tiny_config("llama"), {}, {"'mamba9'", "not supported", "llama", "gemma3"}, "mamba9");
}

TEST(ModelLoadErrors, MissingOrBadHparams) {
    TinyConfig cfg = tiny_config("llama");
    cfg.omit_keys = {"llama.embedding_length"};
    expect_load_error(cfg, {}, {"llama.embedding_length"});
    cfg.omit_keys = {"llama.feed_forward_length"};
    expect_load_error(cfg, {}, {"llama.feed_forward_length"});
    cfg.omit_keys = {"general.architecture"};
    expect_load_error(cfg, {}, {"general.architecture"});
    cfg = tiny_config("llama");
    cfg.n_head_kv = 3;  // 4 heads do not split into 3 groups
    expect_load_error(cfg, {}, {"n_head=4 n_head_kv=3"});
}

TEST(ModelLoadErrors, TokenizerProblems) {
    TinyConfig cfg = tiny_config("llama");
    cfg.omit_keys = {"tokenizer.ggml.model"};
    expect_load_error(cfg, {}, {"tokenizer.ggml.model"});
    cfg.omit_keys = {"tokenizer.ggml.tokens"};
    expect_load_error(cfg, {}, {"tokenizer.ggml.tokens"});
    // More tokens in the vocab than rows in token_embd (tied head, so no output.weight to disagree).
    cfg = tiny_config("llama_tied");
    expect_load_error(cfg,
                      [](TensorSpec& t) {
                          if (t.name == "token_embd.weight") {
                              t.ne[1] = 280;
                              t.bytes.resize(t.bytes.size() / 300 * 280);
                          }
                          return true;
                      },
                      {"300 tokens", "token_embd.weight", "280 rows"});
}

TEST(ModelLoadErrors, TruncatedFile) {
    const std::string path = temp_path("truncated");
    write_tiny_model(tiny_config("llama"), path);
    ASSERT_EQ(truncate(path.c_str(), 4000), 0);
    try {
        Model::load(path);
        ADD_FAILURE() << "expected Error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
    unlink(path.c_str());
}

TEST(ModelLoadErrors, NonsenseHparams) {
    const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
    for (float base : {nan, inf, -inf}) {
        TinyConfig cfg = tiny_config("llama");
        cfg.rope_base = base;
        expect_load_error(cfg, {}, {"llama.rope.freq_base", "finite"});
    }
    for (float base : {0.0f, -10000.0f}) {
        TinyConfig cfg = tiny_config("llama");
        cfg.rope_base = base;
        expect_load_error(cfg, {}, {"llama.rope.freq_base", "must be > 0"});
    }
    for (float base : {nan, inf, -inf}) {  // gemma3's sliding-window layers have their own base
        TinyConfig cfg = tiny_config("gemma3");
        cfg.rope_base_swa = base;
        expect_load_error(cfg, {}, {"gemma3.rope.freq_base_swa", "finite"});
    }
    {
        TinyConfig cfg = tiny_config("gemma3");
        cfg.rope_base_swa = -10000.0f;
        expect_load_error(cfg, {}, {"gemma3.rope.freq_base_swa", "must be > 0"});
        const std::string path = temp_path("swa_base_0");  // 0 (the tiny writer's "absent") via --override-kv
        write_tiny_model(tiny_config("gemma3"), path);
        ModelLoadParams lp;
        lp.kv_overrides = parse_gguf_overrides("gemma3.rope.freq_base_swa=float:0");
        try {
            Model::load(path, lp);
            ADD_FAILURE() << "expected Error";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find("gemma3.rope.freq_base_swa is 0: it must be > 0"), std::string::npos)
                << e.what();
        }
        unlink(path.c_str());
    }
    for (float eps : {nan, inf}) {
        TinyConfig cfg = tiny_config("llama");
        cfg.norm_eps = eps;
        expect_load_error(cfg, {}, {"llama.attention.layer_norm_rms_epsilon", "finite"});
    }
    for (float eps : {0.0f, -1e-5f, 2.0f}) {
        TinyConfig cfg = tiny_config("llama");
        cfg.norm_eps = eps;
        expect_load_error(cfg, {}, {"llama.attention.layer_norm_rms_epsilon", "(0, 1]"});
    }
}

// (A token_embd with 0 rows cannot be written or read: GgufWriter and GgufFile refuse a 0 dimension.)
TEST(ModelLoadErrors, TokenEmbeddingType) {
    // Same bytes per element as f32, but no dequantize_row: the token lookup could not read it.
    expect_load_error(tiny_config("llama_tied"),
                      [](TensorSpec& t) {
                          if (t.name == "token_embd.weight") t.type = GgmlType::I32;
                          return true;
                      },
                      {"token_embd.weight", "i32"});
}

}  // namespace
}  // namespace bee::test
