// tests/unit/model/test_lora: LoRA adapters — logits with an adapter equal those of a model whose weights
// were merged (W + s·B·A), scale 0 equals no adapter bit for bit, sequences with different scales share a
// batch without changing each other's bits, and adapters that do not fit the model are refused by name.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <map>

#include "base/error.h"
#include "base/fp16.h"
#include "engine_test_util.h"
#include "gguf/gguf_writer.h"
#include "model/engine.h"
#include "model/lora.h"
#include "tiny_model.h"

namespace bee::test {
namespace {

// One adapted weight: A (rank, n_in) and B (n_out, rank), row-major.
struct PairData {
    int64_t n_in = 0, n_out = 0, rank = 0;
    std::vector<float> a, b;
};

struct AdapterData {
    std::string arch = "llama";
    float alpha = 8.0f;
    std::map<std::string, PairData> pairs;  // base tensor name -> pair
    std::string general_type = "adapter";
};

float uniform(uint64_t& s) {  // splitmix64 -> [-1, 1)
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (float)((double)(z >> 11) * (2.0 / 9007199254740992.0) - 1.0);
}

// Random pairs for every projection of every layer (and the head unless it is tied), rank `rank`.
AdapterData random_adapter(const TinyConfig& c, int rank, uint64_t seed) {
    AdapterData ad;
    ad.arch = c.arch;
    const int64_t e = c.n_embd, nq = (int64_t)c.n_head * c.head_dim, nk = (int64_t)c.n_head_kv * c.head_dim;
    auto add = [&](const std::string& name, int64_t n_in, int64_t n_out) {
        PairData p{n_in, n_out, rank, {}, {}};
        for (int64_t i = 0; i < rank * n_in; i++) p.a.push_back(uniform(seed) / std::sqrt((float)n_in));
        for (int64_t i = 0; i < n_out * rank; i++) p.b.push_back(0.1f * uniform(seed));
        ad.pairs[name] = p;
    };
    for (int il = 0; il < c.n_layer; il++) {
        const std::string p = "blk." + std::to_string(il) + ".";
        add(p + "attn_q.weight", e, nq);
        add(p + "attn_k.weight", e, nk);
        add(p + "attn_v.weight", e, nk);
        add(p + "attn_output.weight", nq, e);
        add(p + "ffn_gate.weight", e, c.n_ff);
        add(p + "ffn_up.weight", e, c.n_ff);
        add(p + "ffn_down.weight", c.n_ff, e);
    }
    if (!c.tied_output) add("output.weight", e, c.n_vocab);
    return ad;
}

void write_adapter(const AdapterData& ad, const std::string& path, GgmlType type = GgmlType::F32) {
    GgufWriter gw;
    gw.set_str("general.architecture", ad.arch);
    gw.set_str("general.type", ad.general_type);
    gw.set_str("adapter.type", "lora");
    gw.set_f32("adapter.lora.alpha", ad.alpha);
    auto put = [&](const std::string& name, const std::vector<float>& v, int64_t ne0, int64_t ne1) {
        if (type == GgmlType::F32) {
            gw.add_tensor(name, type, {ne0, ne1}, v.data(), v.size() * sizeof(float));
            return;
        }
        std::vector<fp16_t> h(v.size());
        for (size_t i = 0; i < v.size(); i++) h[i] = fp32_to_fp16(v[i]);
        gw.add_tensor(name, type, {ne0, ne1}, h.data(), h.size() * sizeof(fp16_t));
    };
    for (const auto& [name, p] : ad.pairs) {
        put(name + ".lora_a", p.a, p.n_in, p.rank);
        put(name + ".lora_b", p.b, p.rank, p.n_out);
    }
    gw.write(path);
}

// The tiny model with W + s·B·A written in place of every adapted W (F32 weights).
std::string write_merged(const TinyConfig& c, const AdapterData& ad, float scale) {
    const std::string path = temp_path("merged");
    write_tiny_model(c, path, [&](TensorSpec& t) {
        auto it = ad.pairs.find(t.name);
        if (it == ad.pairs.end()) return true;
        const PairData& p = it->second;
        const double s = (double)scale * ad.alpha / (double)p.rank;
        float* w = reinterpret_cast<float*>(t.bytes.data());
        for (int64_t o = 0; o < p.n_out; o++)
            for (int64_t i = 0; i < p.n_in; i++) {
                double d = 0;
                for (int64_t r = 0; r < p.rank; r++) d += (double)p.b[o * p.rank + r] * p.a[r * p.n_in + i];
                w[o * p.n_in + i] = (float)(w[o * p.n_in + i] + s * d);
            }
        return true;
    });
    return path;
}

struct Written {
    std::string model_path, adapter_path;
    std::unique_ptr<Model> model;
    ~Written() {
        unlink(model_path.c_str());
        unlink(adapter_path.c_str());
    }
};

std::unique_ptr<Written> write_pair(const std::string& preset, const AdapterData& ad) {
    auto w = std::make_unique<Written>();
    w->model_path = temp_path(preset);
    write_tiny_model(tiny_config(preset), w->model_path);
    w->model = Model::load(w->model_path);
    w->adapter_path = temp_path("lora");
    write_adapter(ad, w->adapter_path);
    return w;
}

EngineParams lora_params(const std::string& path, float scale, int n_seq = 1) {
    EngineParams p = engine_params(2, 512, n_seq);
    p.lora.push_back({path, scale});
    return p;
}

std::string load_error(const Model& m, const std::string& path) {
    try {
        LoraAdapter::load(path, m);
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

class LoraMerge : public ::testing::TestWithParam<const char*> {};

// Logits with the adapter at scale 0.75 == logits of the merged model, within float rounding.
TEST_P(LoraMerge, AdapterEqualsMergedWeights) {
    const TinyConfig cfg = tiny_config(GetParam());
    const AdapterData ad = random_adapter(cfg, 4, 11);
    auto w = write_pair(GetParam(), ad);
    const std::string merged_path = write_merged(cfg, ad, 0.75f);
    auto merged = Model::load(merged_path);
    unlink(merged_path.c_str());
    const std::vector<int32_t> toks = tiny_tokens(12, cfg.n_vocab, 3);

    // f32 K/V: with f16, a last-bit difference in a key can round to another half and hide the comparison
    EngineParams lp = lora_params(w->adapter_path, 0.75f);
    lp.type_k = lp.type_v = GgmlType::F32;
    Engine with(*w->model, lp);
    Engine ref(*merged, engine_params(2, 512, 1, GgmlType::F32));
    Engine base(*w->model, engine_params(2, 512, 1, GgmlType::F32));
    const std::vector<float> a = decode_chunks(with, toks, 0, 0, 5);
    const std::vector<float> m = decode_chunks(ref, toks, 0, 0, 5);
    const std::vector<float> b = decode_chunks(base, toks, 0, 0, 5);
    const double scale = max_abs(m);
    EXPECT_LT(max_abs_diff(a, m), 1e-5 * scale);
    EXPECT_GT(max_abs_diff(a, b), 0.05 * scale) << "the adapter should change the logits";
}

INSTANTIATE_TEST_SUITE_P(Archs, LoraMerge, ::testing::Values("llama", "qwen2", "gemma3"));

// Scale 0 (given, or --lora-init-without-apply) is the model without the adapter, bit for bit.
TEST(Lora, ScaleZeroIsExactlyNoAdapter) {
    const TinyConfig cfg = tiny_config("llama");
    auto w = write_pair("llama", random_adapter(cfg, 4, 12));
    const std::vector<int32_t> toks = tiny_tokens(9, cfg.n_vocab, 4);
    Engine base(*w->model, engine_params(2));
    Engine zero(*w->model, lora_params(w->adapter_path, 0.0f));
    EngineParams later = lora_params(w->adapter_path, 1.0f);
    later.lora_init_without_apply = true;
    Engine init(*w->model, later);
    EXPECT_EQ(init.lora_default(), std::vector<float>{0.0f});
    const std::vector<float> b = decode_chunks(base, toks, 0, 0, 4);
    EXPECT_TRUE(same_bits(b, decode_chunks(zero, toks, 0, 0, 4)));
    EXPECT_TRUE(same_bits(b, decode_chunks(init, toks, 0, 0, 4)));
}

// Two sequences with different scales in one batch: each row has the bits it has alone.
TEST(Lora, PerSequenceScalesShareABatch) {
    const TinyConfig cfg = tiny_config("llama");
    auto w = write_pair("llama", random_adapter(cfg, 4, 13));
    const std::vector<int32_t> toks = tiny_tokens(6, cfg.n_vocab, 5);
    Engine alone_on(*w->model, lora_params(w->adapter_path, 0.5f));
    Engine alone_off(*w->model, lora_params(w->adapter_path, 0.0f));
    const std::vector<float> on = decode_chunks(alone_on, toks, 0, 0, 6);
    const std::vector<float> off = decode_chunks(alone_off, toks, 0, 0, 6);

    Engine both(*w->model, lora_params(w->adapter_path, 0.5f, 3));
    both.memory().set_lora(1, {0.0f});
    both.memory().set_lora(2, {-1.0f});
    Batch b;
    for (size_t i = 0; i < toks.size(); i++)  // rows interleaved: seq 0, 1, 2, 0, 1, 2, ...
        for (int s = 0; s < 3; s++) b.add(toks[i], (int32_t)i, s, true);
    DecodeOutput out;
    both.decode(b, out);
    const int nv = cfg.n_vocab;
    for (size_t i = 0; i < toks.size(); i++) {
        EXPECT_TRUE(same_bits(out.logits_at((int)(3 * i)), &on[i * nv], (size_t)nv)) << "row " << i;
        EXPECT_TRUE(same_bits(out.logits_at((int)(3 * i + 1)), &off[i * nv], (size_t)nv)) << "row " << i;
    }
    EXPECT_GT(max_abs_diff(std::vector<float>(out.logits_at(2), out.logits_at(2) + nv),
                           std::vector<float>(on.begin(), on.begin() + nv)),
              1e-3);
}

// A sequence's scales change only while it is empty; saved states carry them.
TEST(Lora, ScalesFollowTheSequencesKv) {
    const TinyConfig cfg = tiny_config("llama");
    auto w = write_pair("llama", random_adapter(cfg, 2, 14));
    Engine eng(*w->model, lora_params(w->adapter_path, 1.0f, 2));
    decode_chunks(eng, tiny_tokens(4, cfg.n_vocab, 6), 0, 0, 4);
    EXPECT_THROW(eng.memory().set_lora(0, {0.5f}), Error);
    EXPECT_THROW(eng.memory().set_lora(1, {0.5f, 1.0f}), Error);  // one scale per adapter
    eng.memory().set_lora(0, {1.0f});                             // the same scales: nothing to refuse
    SeqState st = eng.memory().save(0);
    EXPECT_EQ(st.lora, std::vector<float>{1.0f});
    eng.memory().set_lora(1, {0.25f});
    ASSERT_TRUE(eng.memory().load(1, st));
    EXPECT_EQ(eng.memory().lora(1), std::vector<float>{1.0f});
    eng.memory().clear(0);
    eng.memory().set_lora(0, {0.5f});
    EXPECT_EQ(eng.memory().lora(0), std::vector<float>{0.5f});
}

// F16 adapters load (converted to F32) and give the F32 adapter's logits within f16 rounding.
TEST(Lora, F16Adapter) {
    const TinyConfig cfg = tiny_config("llama");
    const AdapterData ad = random_adapter(cfg, 4, 15);
    auto w = write_pair("llama", ad);
    const std::string p16 = temp_path("lora16");
    write_adapter(ad, p16, GgmlType::F16);
    const std::vector<int32_t> toks = tiny_tokens(5, cfg.n_vocab, 7);
    Engine e32(*w->model, lora_params(w->adapter_path, 1.0f));
    Engine e16(*w->model, lora_params(p16, 1.0f));
    unlink(p16.c_str());
    const std::vector<float> a = decode_chunks(e32, toks, 0, 0, 5), b = decode_chunks(e16, toks, 0, 0, 5);
    EXPECT_LT(max_abs_diff(a, b), 1e-2 * max_abs(a));
}

// Adapters that do not fit the model are refused with the file, the tensor and the reason.
TEST(Lora, MismatchedAdaptersRefused) {
    const TinyConfig cfg = tiny_config("llama");
    const AdapterData good = random_adapter(cfg, 2, 16);
    auto w = write_pair("llama", good);
    const std::string path = temp_path("bad_lora");
    auto error_for = [&](const AdapterData& ad) {
        write_adapter(ad, path);
        std::string e = load_error(*w->model, path);
        unlink(path.c_str());
        return e;
    };
    EXPECT_EQ(load_error(*w->model, w->adapter_path), "");

    AdapterData arch = good;
    arch.arch = "qwen2";
    EXPECT_NE(error_for(arch).find("for architecture 'qwen2' but the model is 'llama'"), std::string::npos);

    AdapterData model_file = good;
    model_file.general_type = "model";
    EXPECT_NE(error_for(model_file).find("not a LoRA adapter"), std::string::npos);

    AdapterData missing = good;
    missing.pairs["blk.9.attn_q.weight"] = good.pairs.at("blk.0.attn_q.weight");
    const std::string e_missing = error_for(missing);
    EXPECT_NE(e_missing.find("'blk.9.attn_q.weight', which the model does not have"), std::string::npos) << e_missing;

    AdapterData shape = good;
    PairData& q = shape.pairs.at("blk.1.attn_k.weight");
    q = good.pairs.at("blk.1.attn_q.weight");  // n_out 64 where the model's attn_k has 32
    const std::string e_shape = error_for(shape);
    EXPECT_NE(e_shape.find("blk.1.attn_k.weight.lora_a"), std::string::npos) << e_shape;
    EXPECT_NE(e_shape.find("another base model"), std::string::npos) << e_shape;

    AdapterData norm_only = good;
    norm_only.pairs.clear();
    norm_only.pairs["token_embd.weight"] = good.pairs.at("blk.0.attn_q.weight");
    const std::string e_embd = error_for(norm_only);
    EXPECT_NE(e_embd.find("Bee applies LoRA to"), std::string::npos) << e_embd;

    EngineParams p = lora_params(w->adapter_path, 1.0f);
    p.lora.push_back({"/nonexistent/adapter.gguf", 1.0f});
    try {
        Engine eng(*w->model, p);
        ADD_FAILURE() << "a missing adapter file was accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("/nonexistent/adapter.gguf"), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace bee::test
