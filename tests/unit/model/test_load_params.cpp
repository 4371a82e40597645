// tests/unit/model/test_load_params: ModelLoadParams — --override-kv reaches the architecture, the rope
// flags replace the file's base and linear factor (Gemma 3's local layers keep theirs), and
// --check-tensors finds a NaN or inf in float and quantized tensors, naming the tensor.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "base/error.h"
#include "base/fp16.h"
#include "tiny_model.h"

namespace bee::test {
namespace {

std::string load_error(const std::string& path, const ModelLoadParams& lp) {
    try {
        Model::load(path, lp);
    } catch (const Error& e) {
        return e.what();
    }
    ADD_FAILURE() << "expected an Error";
    return "";
}

// A fresh file of the preset (tiny_model()'s own file is gone once loaded).
std::string written(const char* preset) {
    const std::string path = temp_path(std::string("load_params_") + preset);
    write_tiny_model(tiny_config(preset), path);
    return path;
}

TEST(LoadParams, OverrideKvReachesTheArchitecture) {
    const std::string path = written("llama");
    ModelLoadParams lp;
    lp.kv_overrides = parse_gguf_overrides("llama.context_length=int:77,llama.rope.freq_base=float:1234");
    std::unique_ptr<Model> m = Model::load(path, lp);
    EXPECT_EQ(m->hparams().n_ctx_train, 77);
    EXPECT_FLOAT_EQ(m->hparams().layers[0].rope.freq_base, 1234.0f);
    EXPECT_EQ(m->gguf().get_int("llama.context_length"), 77);
    lp.kv_overrides = parse_gguf_overrides("llama.block_count=str:two");
    EXPECT_NE(load_error(path, lp).find("the file stores"), std::string::npos);
}

TEST(LoadParams, RopeFlagsReplaceTheFilesValues) {
    const std::string path = written("llama");
    const RopeParams base = Model::load(path)->hparams().layers[0].rope;
    EXPECT_FLOAT_EQ(base.freq_scale, 1.0f);
    ModelLoadParams lp;
    lp.rope_freq_base = 500.0f;
    lp.rope_freq_scale = 0.25f;  // --rope-scale 4: linear, as llama.cpp when the file names no scaling type
    std::unique_ptr<Model> m = Model::load(path, lp);
    for (const LayerParams& l : m->hparams().layers) {
        EXPECT_FLOAT_EQ(l.rope.freq_base, 500.0f);
        EXPECT_FLOAT_EQ(l.rope.freq_scale, 0.25f);
    }
    lp.rope_scaling = "none";  // --rope-scaling none: never scaled
    EXPECT_FLOAT_EQ(Model::load(path, lp)->hparams().layers[0].rope.freq_scale, 1.0f);
}

TEST(LoadParams, GemmaLocalLayersKeepTheirRope) {
    const std::string path = written("gemma3");
    ModelLoadParams lp;
    lp.rope_freq_base = 777.0f;
    std::unique_ptr<Model> m = Model::load(path, lp);
    const std::vector<LayerParams> want = Model::load(path)->hparams().layers;
    for (size_t i = 0; i < want.size(); i++) {
        const float got = m->hparams().layers[i].rope.freq_base;
        EXPECT_FLOAT_EQ(got, want[i].swa ? want[i].rope.freq_base : 777.0f) << i;
    }
}

TEST(LoadParams, CheckTensorsFindsNanAndInf) {
    ModelLoadParams lp;
    lp.check_tensors = true;
    EXPECT_NO_THROW(Model::load(written("llama"), lp));
    EXPECT_NO_THROW(Model::load(written("llama_q8_0"), lp));
    // f32: one NaN in a layer matrix
    const std::string f32 = temp_path("nan_f32");
    write_tiny_model(tiny_config("llama"), f32, [](TensorSpec& t) {
        if (t.name == "blk.1.ffn_up.weight") {
            const float nan = std::numeric_limits<float>::quiet_NaN();
            std::memcpy(t.bytes.data() + 4 * 5, &nan, 4);
        }
        return true;
    });
    EXPECT_NE(load_error(f32, lp).find("'blk.1.ffn_up.weight' row 0 column 5 is NaN"), std::string::npos);
    lp.check_tensors = false;
    EXPECT_NO_THROW(Model::load(f32, lp));  // not checked unless asked
    // q8_0: an infinite block scale (the first fp16 of the block)
    lp.check_tensors = true;
    const std::string q8 = temp_path("inf_q8");
    write_tiny_model(tiny_config("llama_q8_0"), q8, [](TensorSpec& t) {
        if (t.name == "blk.0.attn_q.weight") {
            const auto inf = fp32_to_fp16(std::numeric_limits<float>::infinity());
            std::memcpy(t.bytes.data(), &inf, sizeof inf);
        }
        return true;
    });
    const std::string e = load_error(q8, lp);
    EXPECT_NE(e.find("'blk.0.attn_q.weight' row 0"), std::string::npos) << e;
}

}  // namespace
}  // namespace bee::test
