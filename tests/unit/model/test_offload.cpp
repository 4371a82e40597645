// tests/unit/model/test_offload: -ngl on tiny models of every architecture, SmolLM2 and Gemma 3: the device's
// logits against the CPU path's (per weight type), greedy tokens equal up to near-ties, a row's logits
// bit-identical alone and in a batch on the device, hidden-state capture across the boundary, sequence
// memory (save / load, K shift) with device-resident KV, and what is refused. Skipped without a Vulkan
// device (BEE_GPU_DEVICE picks one, as in test_gpu).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>

#include "base/error.h"
#include "offload_test_util.h"
#include "tiny_model.h"

namespace bee::test {
namespace {

constexpr int kN = 16;

struct OffloadCase {
    const char* preset;
    int ngl;
};

class OffloadTiny : public ::testing::TestWithParam<OffloadCase> {};

// The sequence as a prefill chunk of 5 and then token by token, on the CPU and with ngl layers offloaded.
TEST_P(OffloadTiny, LogitsMatchTheCpu) {
    const TinyModel& tm = tiny_model(GetParam().preset);
    const int nv = tm.cfg.n_vocab;
    const std::vector<int32_t> toks = tiny_tokens(kN, nv, 31);
    Engine cpu(*tm.model, engine_params(1));
    std::vector<float> want = decode_chunks(cpu, std::vector<int32_t>(toks.begin(), toks.begin() + 5), 0, 0, 5);
    std::vector<float> rest = decode_chunks(cpu, std::vector<int32_t>(toks.begin() + 5, toks.end()), 5, 0, 1);
    want.insert(want.end(), rest.begin(), rest.end());
    DEVICE_ENGINE_OR_SKIP(dev, *tm.model, offload_params(GetParam().ngl));
    for (int il = 0; il < tm.cfg.n_layer; il++)
        EXPECT_EQ(dev->offload()->on_device(il), il >= tm.cfg.n_layer - GetParam().ngl) << il;
    EXPECT_EQ(dev->offload()->has_head(), GetParam().ngl >= tm.cfg.n_layer);
    std::vector<float> got = decode_chunks(*dev, std::vector<int32_t>(toks.begin(), toks.begin() + 5), 0, 0, 5);
    rest = decode_chunks(*dev, std::vector<int32_t>(toks.begin() + 5, toks.end()), 5, 0, 1);
    got.insert(got.end(), rest.begin(), rest.end());
    ASSERT_EQ(got.size(), want.size());
    const Compare c = compare_logits(got, want, nv);
    EXPECT_LT(c.rel, tolerance(tm.cfg.wtype)) << dev->offload()->describe();
    EXPECT_EQ(c.greedy_mismatch, 0) << "near-ties: " << c.near_ties;
}

INSTANTIATE_TEST_SUITE_P(Presets, OffloadTiny,
                         ::testing::Values(OffloadCase{"llama", 99}, OffloadCase{"llama", 1},
                                           OffloadCase{"llama_tied", 2}, OffloadCase{"qwen2", 99},
                                           OffloadCase{"qwen3", 2}, OffloadCase{"gemma3", 99}, OffloadCase{"gemma3", 4},
                                           OffloadCase{"llama_q8_0", 99}, OffloadCase{"llama_q4_k", 99}),
                         [](const auto& info) {
                             return std::string(info.param.preset) + "_ngl" + std::to_string(info.param.ngl);
                         });

// A row's logits on the device do not depend on the batch: token by token, one prefill batch, ubatches of
// 3, and beside another sequence.
TEST(OffloadBatchInvariance, RowsAloneAndInBatches) {
    for (const char* preset : {"llama", "gemma3"}) {
        const TinyModel& tm = tiny_model(preset);
        const std::vector<int32_t> toks = tiny_tokens(kN, tm.cfg.n_vocab, 41);
        DEVICE_ENGINE_OR_SKIP(one, *tm.model, offload_params(99));
        const std::vector<float> base = decode_chunks(*one, toks, 0, 0, 1);
        DEVICE_ENGINE_OR_SKIP(batch, *tm.model, offload_params(99));
        EXPECT_TRUE(same_bits(decode_chunks(*batch, toks, 0, 0, kN), base)) << preset;
        EngineParams p3 = offload_params(99);
        p3.n_ubatch = 3;
        DEVICE_ENGINE_OR_SKIP(ub3, *tm.model, p3);
        EXPECT_TRUE(same_bits(decode_chunks(*ub3, toks, 0, 0, kN), base)) << preset;
        DEVICE_ENGINE_OR_SKIP(two, *tm.model, offload_params(99, 2));
        const std::vector<int32_t> other = tiny_tokens(kN, tm.cfg.n_vocab, 42);
        Batch b;
        DecodeOutput out;
        for (int i = 0; i < kN; i++) {
            b.add(other[(size_t)i], i, 1, false);
            b.add(toks[(size_t)i], i, 0, true);
        }
        two->decode(b, out);
        EXPECT_TRUE(same_bits(out.logits, base)) << preset << " beside another sequence";
    }
}

// Hidden states captured on both sides of the boundary agree with the CPU's.
TEST(OffloadCapture, HiddenStatesAcrossTheBoundary) {
    const TinyModel& tm = tiny_model("qwen3");  // 3 layers: 0 on the CPU, 1 and 2 on the device
    const std::vector<int32_t> toks = tiny_tokens(6, tm.cfg.n_vocab, 51);
    auto run = [&](Engine& eng) { return decode_capturing(eng, toks); };
    Engine cpu(*tm.model, engine_params(1));
    const DecodeOutput want = run(cpu);
    DEVICE_ENGINE_OR_SKIP(dev, *tm.model, offload_params(2));
    const DecodeOutput got = run(*dev);
    ASSERT_EQ(got.hidden.size(), want.hidden.size());
    double max_diff = 0, max_abs = 0;
    for (size_t i = 0; i < want.hidden.size(); i++) {
        max_diff = std::max(max_diff, (double)std::fabs(got.hidden[i] - want.hidden[i]));
        max_abs = std::max(max_abs, (double)std::fabs(want.hidden[i]));
    }
    EXPECT_LT(max_diff / max_abs, 1e-4);
    EXPECT_LT(compare_logits(got.logits, want.logits, tm.cfg.n_vocab).rel, 2e-4);
}

// Command lists recorded once per shape and resubmitted (OffloadParams::n_lists) give the bits of lists
// recorded every step: a prefill chunk, token by token, two sequences interleaved (lists reused with other
// visibility lists and cells), both in one batch, ubatches of 3, a capture splitting the device run, and
// save / load / K shift; a cache of 2 re-records evicted shapes. Lists are reused, not recorded per step.
// Also with -ot (device segments around CPU layers, the head after a CPU layer: x goes up again) and with
// -nkvo (layers recorded every step around the host's attention; the head's lists are still kept).
TEST(OffloadLists, ResubmittedListsMatchListsRecordedEachStep) {
    struct Case {
        const char* preset;
        int ngl, n_ubatch;
        const char* ot;
        bool nkvo;
    };
    for (const Case& c :
         {Case{"llama", 99, 512, "", false}, Case{"gemma3", 4, 3, "", false}, Case{"qwen3", 2, 512, "", false},
          Case{"gemma3", 99, 3, "blk\\.[26]\\.=CPU", false}, Case{"qwen3", 99, 512, "", true}}) {
        const TinyModel& tm = tiny_model(c.preset);
        const std::vector<int32_t> a = tiny_tokens(kN, tm.cfg.n_vocab, 81), o = tiny_tokens(kN, tm.cfg.n_vocab, 82);
        auto script = [&](Engine& eng) {
            std::vector<float> r = decode_chunks(eng, std::vector<int32_t>(a.begin(), a.begin() + 5), 0, 0, 5);
            auto more = [&](const std::vector<float>& v) { r.insert(r.end(), v.begin(), v.end()); };
            for (int i = 5; i < 10; i++) {  // interleaved, one row per batch
                more(decode_chunks(eng, {a[(size_t)i]}, i, 0, 1));
                more(decode_chunks(eng, {o[(size_t)(i - 5)]}, i - 5, 1, 1));
            }
            Batch b;  // both sequences in one batch, with every layer's input captured
            for (int i = 10; i < 12; i++) {
                b.add(a[(size_t)i], i, 0, true);
                b.add(o[(size_t)i - 5], i - 5, 1, true);
            }
            for (int il = 0; il <= tm.cfg.n_layer; il++) b.capture_layers.push_back(il);
            DecodeOutput out;
            eng.decode(b, out);
            more(out.logits);
            more(out.hidden);
            const SeqState st = eng.memory().save(0);
            eng.memory().clear(0);
            EXPECT_TRUE(eng.memory().load(0, st));
            eng.memory().move_down(0, 2, 4, 12);
            more(decode_chunks(eng, std::vector<int32_t>(a.begin() + 12, a.end()), 10, 0, 1));
            more(decode_chunks(eng, std::vector<int32_t>(o.begin() + 7, o.begin() + 11), 7, 1, 2));
            return r;
        };
        auto params = [&](int n_lists) {
            EngineParams p = offload_params(c.ngl, 2);
            p.n_ubatch = c.n_ubatch;
            p.offload.n_lists = n_lists;
            p.offload.kv_offload = !c.nkvo;
            if (*c.ot) parse_tensor_overrides(c.ot, &p.offload.overrides);
            return p;
        };
        DEVICE_ENGINE_OR_SKIP(each, *tm.model, params(0));
        const std::vector<float> want = script(*each);
        EXPECT_EQ(each->offload()->list_stats().reused, 0u);
        for (int n_lists : {16, 2}) {
            DEVICE_ENGINE_OR_SKIP(kept, *tm.model, params(n_lists));
            EXPECT_TRUE(same_bits(script(*kept), want))
                << c.preset << " " << c.ot << (c.nkvo ? " -nkvo" : "") << " with " << n_lists << " lists";
            const Offload::ListStats st = kept->offload()->list_stats();
            EXPECT_GT(st.reused, 0u) << c.preset << " " << c.ot << " with " << n_lists << " lists";
            if (n_lists == 16 && !c.nkvo) {
                EXPECT_LT(st.recorded, st.reused) << c.preset << " " << c.ot;
            }
        }
    }
}

// Save, clear and load a sequence whose KV is on the device, and move a range (K re-rotated): the device
// engine continues as the CPU engine does after the same operations.
TEST(OffloadSeqMemory, SaveLoadAndShift) {
    const TinyModel& tm = tiny_model("llama");
    const int nv = tm.cfg.n_vocab;
    const std::vector<int32_t> toks = tiny_tokens(kN, nv, 61);
    auto script = [&](Engine& eng) { return seq_memory_script(eng, toks); };
    Engine cpu(*tm.model, engine_params(1));
    const std::vector<float> want = script(cpu);
    DEVICE_ENGINE_OR_SKIP(dev, *tm.model, offload_params(1));
    const std::vector<float> got = script(*dev);
    const Compare c = compare_logits(got, want, nv);
    EXPECT_LT(c.rel, 2e-4);
    EXPECT_EQ(c.greedy_mismatch, 0);
}

TEST(OffloadRefusals, WeightTypesWithoutADeviceMatmulAndUnknownDevice) {
    const TinyModel& tm = tiny_model("llama");
    Engine probe(*tm.model, offload_params(99));
    if (!probe.offload()) OFFLOAD_SKIP_OR_FAIL("no Vulkan device");
    const TinyModel& q3 = tiny_model("llama_q3_k");
    try {
        Engine eng(*q3.model, offload_params(99));
        ADD_FAILURE() << "q3_K weights with -ngl were accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("q3_k"), std::string::npos) << e.what();
    }
    EngineParams q = offload_params(99);
    q.offload.device = "no-such-device-name";
    EXPECT_THROW(Engine(*tm.model, q), Error);
}

// Quantized device KV: K / V types (asymmetric, boundary-promoted V layers, K protection), the tolerance
// against the CPU engine with the same KV types. Both store the same bytes for the same inputs, but the
// device's K and V come from its own f32 matmuls, so a value on a rounding edge can land one quantization
// step away: the tolerance grows with the type's step.
struct KvCase {
    const char* preset;
    GgmlType k, v;
    int ngl;
    int boundary;  // --kv-boundary-layers
    bool protect;  // --kv-auto-asymmetric (turbo K kept at q8_0 on these small models)
    double tol;
};

class OffloadKv : public ::testing::TestWithParam<KvCase> {};

EngineParams kv_params(const KvCase& c, EngineParams p) {
    p.type_k = c.k;
    p.type_v = c.v;
    p.kv_boundary_layers = c.boundary;
    p.kv_auto_asymmetric = c.protect;
    return p;
}

// Logits against the CPU's (a prefill chunk of 5, then token by token), the device's rows bit-identical in
// one batch and token by token, and save / clear / load / K shift as on the CPU.
TEST_P(OffloadKv, MatchesTheCpuIsBatchInvariantAndSavesLoads) {
    const KvCase& kc = GetParam();
    const TinyModel& tm = tiny_model(kc.preset);
    const int nv = tm.cfg.n_vocab;
    const std::vector<int32_t> toks = tiny_tokens(kN, nv, 71);
    auto run = [&](Engine& eng) {
        std::vector<float> l = decode_chunks(eng, std::vector<int32_t>(toks.begin(), toks.begin() + 5), 0, 0, 5);
        std::vector<float> rest = decode_chunks(eng, std::vector<int32_t>(toks.begin() + 5, toks.end()), 5, 0, 1);
        l.insert(l.end(), rest.begin(), rest.end());
        return l;
    };
    Engine cpu(*tm.model, kv_params(kc, engine_params(1)));
    const std::vector<float> want = run(cpu);
    DEVICE_ENGINE_OR_SKIP(dev, *tm.model, kv_params(kc, offload_params(kc.ngl)));
    const std::string desc = dev->offload()->describe();
    const std::vector<float> got = run(*dev);
    const Compare c = compare_logits(got, want, nv);
    EXPECT_LT(c.rel, kc.tol) << desc;
    EXPECT_EQ(c.greedy_mismatch, 0) << "near-ties: " << c.near_ties << " " << desc;
    printf("[ offload ] %s: relative logit error %.2e\n", desc.c_str(), c.rel);

    // One engine each, cleared between the checks (a device engine compiles every shader: slow on llvmpipe).
    dev->memory().clear(0);
    const std::vector<float> base = decode_chunks(*dev, toks, 0, 0, 1);
    dev->memory().clear(0);
    EXPECT_TRUE(same_bits(decode_chunks(*dev, toks, 0, 0, kN), base)) << desc;
    dev->memory().clear(0);
    cpu.memory().clear(0);

    auto script = [&](Engine& eng) { return seq_memory_script(eng, toks); };
    const Compare cs = compare_logits(script(*dev), script(cpu), nv);
    EXPECT_LT(cs.rel, kc.tol) << "after save / load / shift: " << desc;
    EXPECT_EQ(cs.greedy_mismatch, 0) << "after save / load / shift: " << desc;
}

INSTANTIATE_TEST_SUITE_P(Types, OffloadKv,
                         ::testing::Values(KvCase{"llama_hd64", GgmlType::Q8_0, GgmlType::Q8_0, 99, 0, true, 1e-2},
                                           KvCase{"llama", GgmlType::Q8_0, GgmlType::Q8_0, 1, 0, true, 1e-2},
                                           KvCase{"llama", GgmlType::Q4_0, GgmlType::Q4_0, 2, 0, true, 5e-2},
                                           KvCase{"llama_hd64", GgmlType::F16, GgmlType::Q8_0, 2, 0, true, 1e-2},
                                           KvCase{"llama_hd64", GgmlType::TURBO3, GgmlType::TURBO3, 99, 1, true, 5e-2},
                                           KvCase{"llama_hd64", GgmlType::TURBO3, GgmlType::TURBO3, 1, 0, false, 5e-2},
                                           KvCase{"gemma3", GgmlType::TURBO3, GgmlType::TURBO3, 4, 0, false, 5e-2},
                                           KvCase{"llama_hd64", GgmlType::TURBO3_TCQ, GgmlType::TURBO3_TCQ, 1, 0, false,
                                                  5e-2},
                                           KvCase{"qwen2", GgmlType::Q5_1, GgmlType::BF16, 99, 0, true, 5e-2}),
                         [](const auto& info) {
                             const KvCase& c = info.param;
                             return std::string(c.preset) + "_" + ggml_type_name(c.k) + "_" + ggml_type_name(c.v) +
                                    "_ngl" + std::to_string(c.ngl) + (c.boundary > 0 ? "_boundary" : "") +
                                    (c.protect ? "" : "_unprotected");
                         });

// What the engine stores where: K protection and boundary layers reach the device layers.
TEST(OffloadKvLayout, ProtectedKAndBoundaryVOnTheDevice) {
    const TinyModel& tm = tiny_model("llama_hd64");
    KvCase c{"llama_hd64", GgmlType::TURBO3, GgmlType::TURBO3, 99, 1, true, 0};
    DEVICE_ENGINE_OR_SKIP(dev, *tm.model, kv_params(c, offload_params(99)));
    const KvCache& kv = dev->kv();
    EXPECT_EQ(kv.params().type_k, GgmlType::Q8_0);  // protected: n_embd 128 <= 2048
    EXPECT_EQ(kv.v_type(0), GgmlType::Q8_0);
    EXPECT_EQ(kv.v_type(1), GgmlType::TURBO3);
    EXPECT_EQ(kv.v_type(3), GgmlType::Q8_0);
    EXPECT_NE(dev->offload()->describe().find("K q8_0"), std::string::npos) << dev->offload()->describe();
}

// Real models, fully or partly offloaded: `steps` greedy tokens after a short prompt are the CPU's up to
// near-ties, and each step's logits (until the first flip) are within `tol` of the CPU's (relative to the
// largest). llvmpipe runs these models at seconds per token: few steps.
struct RealCase {
    const char* name;
    const char* file;
    int ngl;
    int steps;
    double tol;
};
class OffloadReal : public ::testing::TestWithParam<RealCase> {};

TEST_P(OffloadReal, GreedyMatchesCpu) {
    const RealCase& rc = GetParam();
    const std::string path = std::string(BEE_SOURCE_DIR) + "/models/" + rc.file;
    if (!std::ifstream(path)) OFFLOAD_SKIP_OR_FAIL(path << " is missing: run `make models`");
    std::unique_ptr<Model> m = Model::load(path);
    const int nv = m->hparams().n_vocab;
    const std::vector<int32_t> prompt = m->tokenizer().encode("The capital of France is", true, false);
    EngineParams pc = engine_params(2, 512, 1, GgmlType::F16, 128);
    Engine cpu(*m, pc);
    EngineParams pd = offload_params(rc.ngl, 1, 128);
    pd.n_threads = 2;
    DEVICE_ENGINE_OR_SKIP(dev, *m, pd);
    const int n_layer = m->hparams().n_layer;
    for (int il = 0; il < n_layer; il++) EXPECT_EQ(dev->offload()->on_device(il), il >= n_layer - rc.ngl) << il;
    auto greedy = [&](Engine& eng, std::vector<std::vector<float>>& steps) {
        std::vector<float> l = decode_chunks(eng, prompt, 0, 0, (int)prompt.size());
        std::vector<int32_t> out;
        for (int i = 0; i < rc.steps; i++) {
            const float* last = l.data() + l.size() - nv;
            steps.emplace_back(last, last + nv);
            out.push_back((int32_t)(std::max_element(last, last + nv) - last));
            if (i + 1 < rc.steps) l = decode_chunks(eng, {out.back()}, (int32_t)(prompt.size() + i), 0, 1);
        }
        return out;
    };
    std::vector<std::vector<float>> lc, ld;
    const std::vector<int32_t> tc = greedy(cpu, lc), td = greedy(*dev, ld);
    for (int i = 0; i < rc.steps; i++) {
        const Compare c = compare_logits(ld[(size_t)i], lc[(size_t)i], nv);
        EXPECT_LT(c.rel, rc.tol) << "step " << i;
        printf("[ offload ] %s step %d: relative logit error %.2e\n", rc.name, i, c.rel);
        if (tc[(size_t)i] == td[(size_t)i]) continue;
        EXPECT_EQ(c.greedy_mismatch, 0) << "step " << i;  // a flip is allowed at a near-tie only
        break;                                            // the sequences differ from here on
    }
    printf("[ offload ] %s on %s: cpu '%s' / device '%s'\n", rc.name, dev->offload()->describe().c_str(),
           m->tokenizer().decode(tc).c_str(), m->tokenizer().decode(td).c_str());
}

INSTANTIATE_TEST_SUITE_P(Models, OffloadReal,
                         ::testing::Values(RealCase{"SmolLM2_all", "SmolLM2-135M-Instruct.Q4_1.gguf", 99, 4, 8e-2},
                                           RealCase{"SmolLM2_ngl10", "SmolLM2-135M-Instruct.Q4_1.gguf", 10, 3, 8e-2},
                                           RealCase{"Gemma3_270M_all", "gemma-3-270m-q4_k_m.gguf", 99, 3, 8e-2}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace bee::test
