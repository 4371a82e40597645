// tests/unit/model/test_offload_place: -ot / --override-tensor and -nkvo / --no-kv-offload. The placement
// rule (OffloadPlan: whole layers and the head, no device needed) and its errors; then tiny models with
// layers and the head placed by -ot (CPU and device runs alternating, the head on either side of the last
// layer) and with -nkvo (host K/V of any type, attention on the CPU) against the CPU path, hidden-state
// capture across every boundary, and sequence memory with host K/V. Device runs skip without a Vulkan
// device (BEE_GPU_DEVICE picks one), or fail under BEE_REQUIRE_GPU=1.
#include <gtest/gtest.h>

#include <functional>

#include "../common/error_of.h"
#include "base/error.h"
#include "offload_test_util.h"
#include "tiny_model.h"

namespace bee::test {
namespace {

OffloadParams ot(int ngl, const std::string& value) {
    OffloadParams p;
    p.n_gpu_layers = ngl;
    parse_tensor_overrides(value, &p.overrides);
    return p;
}
// "1011111H": per layer 1 (device) or 0 (CPU), then H when the head is on the device.
std::string placement(const OffloadPlan& p) {
    std::string s;
    for (bool d : p.layers) s += d ? '1' : '0';
    return s + (p.head ? "H" : "");
}
#define EXPECT_HAS(text, part) EXPECT_NE(std::string(text).find(part), std::string::npos) << (text)

TEST(OffloadPlacement, PatternsMoveWholeLayersAndTheHead) {
    const Model& g = *tiny_model("gemma3").model;  // 7 layers, the head tied to token_embd
    EXPECT_EQ(placement(plan_offload(g, ot(99, "blk\\.1\\.=CPU"))), "1011111H");
    EXPECT_EQ(placement(plan_offload(g, ot(3, "blk\\.1\\.=CPU"))), "0000111");
    // a device pattern moves layers beyond -ngl; a CPU pattern wins over a device one in the same layer
    EXPECT_EQ(placement(plan_offload(g, ot(2, "blk\\.0\\.=Vulkan0"))), "1000011");
    EXPECT_EQ(placement(plan_offload(g, ot(0, "blk\\.[0-3]\\.ffn_up=CPU,blk\\.[1-4]\\.=Vulkan0"))), "0000100");
    // the first pattern that finds a tensor decides it: blk.2's tensors all go to the device first
    EXPECT_EQ(placement(plan_offload(g, ot(0, "blk\\.2\\.=Vulkan0,blk\\.[0-9]\\.ffn_up=CPU"))), "0010000");
    // -ot is repeatable: a second value appends its patterns
    OffloadParams two = ot(99, "blk\\.0\\.=CPU");
    parse_tensor_overrides("blk\\.6\\.=CPU", &two.overrides);
    EXPECT_EQ(placement(plan_offload(g, two)), "0111110H");
    // the tied head follows token_embd; an untied one follows output / output_norm
    EXPECT_EQ(placement(plan_offload(g, ot(99, "token_embd=CPU"))), "1111111");
    const Model& l = *tiny_model("llama").model;  // 2 layers, its own output.weight
    EXPECT_EQ(placement(plan_offload(l, ot(99, "token_embd=CPU"))), "11H");
    EXPECT_EQ(placement(plan_offload(l, ot(99, "^output\\.weight=CPU"))), "11");
    // a regex finds its text anywhere in the name (as llama.cpp's): this one finds blk.N.attn_output too
    EXPECT_EQ(placement(plan_offload(l, ot(99, "output\\.weight=CPU"))), "00");
    EXPECT_EQ(placement(plan_offload(l, ot(0, "^output=Vulkan0"))), "00H");
    // token embeddings always stay on the CPU: said in a note, nothing moves
    const OffloadPlan p = plan_offload(l, ot(0, "token_embd=Vulkan0"));
    EXPECT_EQ(placement(p), "00");
    ASSERT_EQ(p.notes.size(), 1u);
    EXPECT_HAS(p.notes[0], "token_embd.weight stays in host memory");
    EXPECT_EQ(plan_offload(l, ot(0, "blk\\.1\\.=Vulkan0")).describe(), "layers 1");
    EXPECT_EQ(plan_offload(g, ot(99, "blk\\.[25]\\.=CPU")).describe(), "layers 0..1, 3..4, 6 and the output head");
}

TEST(OffloadPlacement, ErrorsSayWhatAndHowToFix) {
    std::vector<TensorOverride> o;
    auto parse = [&](const std::string& v) { return error_of([&] { parse_tensor_overrides(v, &o); }); };
    EXPECT_HAS(parse("blk\\.0\\."), "is not PATTERN=BUFTYPE");
    EXPECT_HAS(parse("=CPU"), "is not PATTERN=BUFTYPE");
    EXPECT_HAS(parse("blk\\.0\\.=CPU,"), "is not PATTERN=BUFTYPE");
    const std::string cuda = parse("blk\\.0\\.=CUDA0");
    EXPECT_HAS(cuda, "unknown buffer type 'CUDA0'");
    EXPECT_HAS(cuda, "bee --list-devices");
    EXPECT_HAS(parse("blk\\.(0=CPU"), "not a valid regular expression");
    EXPECT_TRUE(o.empty());
    const Model& l = *tiny_model("llama").model;
    const std::string none = error_of([&] { plan_offload(l, ot(99, "blk\\.0\\.=CPU,blk\\.9\\.=CPU")); });
    EXPECT_HAS(none, "-ot 'blk\\.9\\.=CPU': the pattern finds no tensor");
    EXPECT_HAS(none, "bee gguf info");
    EXPECT_HAS(error_of([&] { plan_offload(l, ot(0, "blk\\.0\\.=Vulkan0,blk\\.1\\.=Vulkan1")); }), "on one device");
    // the Engine refuses a pattern that finds nothing before it looks for a device
    EngineParams ep = engine_params(1);
    ep.offload = ot(0, "blk\\.7\\.=CPU");
    EXPECT_HAS(error_of([&] { Engine eng(l, ep); }), "finds no tensor");
}

// "VulkanN" for the device the offload tests use, or "" when none opens.
std::string device_buffer(const Model& m) {
    std::unique_ptr<Engine> probe = device_engine(m, offload_params(99));
    return probe ? "Vulkan" + std::to_string(probe->offload()->device_index()) : "";
}
std::string with_device(std::string s, const std::string& dev) {
    for (size_t i; (i = s.find("DEV")) != std::string::npos;) s.replace(i, 3, dev);
    return s;
}

// The sequence as a prefill chunk of 5 and then token by token.
std::vector<float> run_script(Engine& eng, const std::vector<int32_t>& toks) {
    std::vector<float> l = decode_chunks(eng, std::vector<int32_t>(toks.begin(), toks.begin() + 5), 0, 0, 5);
    std::vector<float> rest = decode_chunks(eng, std::vector<int32_t>(toks.begin() + 5, toks.end()), 5, 0, 1);
    l.insert(l.end(), rest.begin(), rest.end());
    return l;
}

struct PlacedCase {
    const char* name;
    const char* preset;
    int ngl;
    const char* ot;  // "" or an -ot value, DEV standing for the test's device
    bool nkvo;
    GgmlType kv;
    const char* placement;  // the expected plan
};
class OffloadPlaced : public ::testing::TestWithParam<PlacedCase> {};

TEST_P(OffloadPlaced, LogitsMatchTheCpu) {
    const PlacedCase& pc = GetParam();
    const TinyModel& tm = tiny_model(pc.preset);
    const int nv = tm.cfg.n_vocab;
    const std::string dev = device_buffer(*tm.model);
    if (dev.empty()) OFFLOAD_SKIP_OR_FAIL("no Vulkan device (or no Vulkan in this build)");
    const std::vector<int32_t> toks = tiny_tokens(12, nv, 71);
    EngineParams cp = engine_params(1, 512, 1, pc.kv);
    Engine cpu(*tm.model, cp);
    EngineParams dp = offload_params(pc.ngl);
    dp.type_k = dp.type_v = pc.kv;
    dp.offload.kv_offload = !pc.nkvo;
    if (*pc.ot) parse_tensor_overrides(with_device(pc.ot, dev), &dp.offload.overrides);
    EXPECT_EQ(placement(plan_offload(*tm.model, dp.offload)), pc.placement);
    DEVICE_ENGINE_OR_SKIP(eng, *tm.model, dp);
    EXPECT_EQ(eng->offload()->kv_on_device(), !pc.nkvo);
    const Compare c = compare_logits(run_script(*eng, toks), run_script(cpu, toks), nv);
    // quantized K/V: the device's k and v differ from the CPU's in the last bits, which may move a rounding
    EXPECT_LT(c.rel, pc.kv == GgmlType::F16 ? tolerance(tm.cfg.wtype) : 2e-3) << eng->offload()->describe();
    EXPECT_EQ(c.greedy_mismatch, 0) << "near-ties: " << c.near_ties;
}

constexpr GgmlType F16 = GgmlType::F16, Q8 = GgmlType::Q8_0, Q4 = GgmlType::Q4_0;
INSTANTIATE_TEST_SUITE_P(
    Tiny, OffloadPlaced,
    ::testing::Values(PlacedCase{"gemma3_cpu_layer_inside", "gemma3", 99, "blk\\.1\\.=CPU", false, F16, "1011111H"},
                      PlacedCase{"gemma3_last_layer_on_cpu", "gemma3", 99, "blk\\.6\\.=CPU", false, F16, "1111110H"},
                      PlacedCase{"gemma3_alternating", "gemma3", 0, "blk\\.[135]\\.=DEV", false, F16, "0101010"},
                      PlacedCase{"llama_head_on_cpu", "llama", 99, "^output\\.weight=CPU", false, F16, "11"},
                      PlacedCase{"llama_head_only", "llama", 0, "^output=DEV", false, F16, "00H"},
                      PlacedCase{"llama_nkvo", "llama", 99, "", true, F16, "11H"},
                      PlacedCase{"llama_nkvo_q4_0_ngl1", "llama", 1, "", true, Q4, "01"},
                      PlacedCase{"gemma3_nkvo_q8_0_mixed", "gemma3", 99, "blk\\.3\\.=CPU", true, Q8, "1110111H"}),
    [](const auto& info) { return std::string(info.param.name); });

// Hidden states captured at every layer when CPU and device layers alternate, with device and host K/V.
TEST(OffloadPlaced, HiddenStatesAcrossEveryBoundary) {
    const TinyModel& tm = tiny_model("qwen3");  // 3 layers: 0 and 2 on the CPU, 1 on the device
    const std::string dev = device_buffer(*tm.model);
    if (dev.empty()) OFFLOAD_SKIP_OR_FAIL("no Vulkan device (or no Vulkan in this build)");
    const std::vector<int32_t> toks = tiny_tokens(6, tm.cfg.n_vocab, 81);
    auto run = [&](Engine& eng) { return decode_capturing(eng, toks); };
    Engine cpu(*tm.model, engine_params(1));
    const DecodeOutput want = run(cpu);
    for (bool nkvo : {false, true}) {
        EngineParams p = offload_params(0);
        p.offload.kv_offload = !nkvo;
        parse_tensor_overrides("blk\\.1\\.=" + dev, &p.offload.overrides);
        DEVICE_ENGINE_OR_SKIP(eng, *tm.model, p);
        ASSERT_TRUE(eng->offload()->on_device(1) && !eng->offload()->on_device(2));
        const DecodeOutput got = run(*eng);
        ASSERT_EQ(got.hidden.size(), want.hidden.size());
        EXPECT_LT(max_abs_diff(got.hidden, want.hidden) / max_abs(want.hidden), 1e-4) << "nkvo " << nkvo;
        EXPECT_LT(compare_logits(got.logits, want.logits, tm.cfg.n_vocab).rel, 2e-4) << "nkvo " << nkvo;
    }
}

// -nkvo: save, clear and load a sequence and move a range (K re-rotated on the host) with q8_0 K/V of
// device layers in host memory: the engine continues as the CPU engine does.
TEST(OffloadPlaced, NkvoSeqMemory) {
    const TinyModel& tm = tiny_model("llama");
    const int nv = tm.cfg.n_vocab;
    const std::vector<int32_t> toks = tiny_tokens(16, nv, 91);
    auto script = [&](Engine& eng) { return seq_memory_script(eng, toks); };
    Engine cpu(*tm.model, engine_params(1, 512, 1, Q8));
    const std::vector<float> want = script(cpu);
    EngineParams p = offload_params(99);
    p.type_k = p.type_v = Q8;
    p.offload.kv_offload = false;
    DEVICE_ENGINE_OR_SKIP(dev, *tm.model, p);
    const Compare c = compare_logits(script(*dev), want, nv);
    EXPECT_LT(c.rel, 2e-3);
    EXPECT_EQ(c.greedy_mismatch, 0);
}

}  // namespace
}  // namespace bee::test
