// tests/unit/gpu/test_device: device listing and selection, buffers, resubmitted command lists, timestamps.
#include <cstring>

#include "gpu/command_cache.h"
#include "gpu/instance.h"
#include "gpu/pipeline.h"
#include "gpu/shaders.h"
#include "gpu_test_util.h"

namespace bee {
namespace {

using test::GpuTest;

TEST(GpuShaders, EveryShaderIsEmbedded) {
    const char* names[] = {"matmul_f32",  "matmul_f16",  "matmul_bf16", "matmul_q4_0", "matmul_q4_1", "matmul_q5_0",
                           "matmul_q5_1", "matmul_q8_0", "matmul_q4_k", "matmul_q5_k", "matmul_q6_k", "rms_norm",
                           "rope",        "act_mul",     "softmax",     "add_rms_norm"};
    for (const char* n : names) {
        if (!strncmp(n, "matmul_", 7)) {
            ASSERT_NE(gpu::find_shader((std::string(n) + "_sg").c_str()), nullptr) << n << "_sg";
        }
        const gpu::ShaderBlob* b = gpu::find_shader(n);
        ASSERT_NE(b, nullptr) << n;
        ASSERT_GE(b->size, 20u) << n;
        ASSERT_EQ(b->size % 4, 0u) << n;
        uint32_t magic;
        memcpy(&magic, b->code, 4);
        EXPECT_EQ(magic, 0x07230203u) << n;  // SPIR-V magic number
    }
    EXPECT_EQ(gpu::find_shader("no_such_shader"), nullptr);
}

TEST_F(GpuTest, ListsTheOpenedDevice) {
    std::string why;
    const std::vector<gpu::DeviceInfo> all = gpu::list_devices(&why);
    ASSERT_FALSE(all.empty()) << why;
    ASSERT_LT(dev->info().index, (int)all.size());
    EXPECT_EQ(all[(size_t)dev->info().index].name, dev->info().name);
    EXPECT_FALSE(dev->info().driver.empty());
    EXPECT_GT(dev->info().memory, 0u);
}

TEST_F(GpuTest, SelectsByIndexAndName) {
    gpu::Device by_index(std::to_string(dev->info().index));
    EXPECT_EQ(by_index.info().name, dev->info().name);
    gpu::Device by_name(dev->info().name.substr(0, 4));
    EXPECT_EQ(by_name.info().name.substr(0, 4), dev->info().name.substr(0, 4));
    EXPECT_THROW(gpu::Device("no device is called this"), Error);
    EXPECT_THROW(gpu::Device("999"), Error);
}

// Mapped device memory (unified memory), staged device memory (as on a discrete GPU), host memory.
TEST_F(GpuTest, BuffersRoundTripEveryMemory) {
    std::vector<uint8_t> src(1000);
    for (size_t i = 0; i < src.size(); ++i) src[i] = (uint8_t)(i * 7 + 3);
    for (int mode = 0; mode < 3; ++mode) {
        dev->set_map_device_memory(mode != 1);
        gpu::Buffer b(*dev, src.size(), mode == 2 ? gpu::Memory::host : gpu::Memory::device);
        dev->set_map_device_memory(true);
        if (mode == 1) {
            EXPECT_EQ(b.mapped(), nullptr);
        }
        EXPECT_EQ(b.size(), 1008u);  // rounded up to 16
        b.upload(src.data(), src.size());
        std::vector<uint8_t> back(src.size());
        b.download(back.data(), back.size());
        EXPECT_EQ(back, src);
        b.upload(src.data(), 10, 500);  // at an offset
        b.download(back.data(), 10, 500);
        EXPECT_EQ(0, memcmp(back.data(), src.data(), 10));
        EXPECT_THROW(b.upload(src.data(), 100, 1000), Error);
    }
}

// A list recorded once runs again on new input without re-recording, and its timestamps count forward.
TEST_F(GpuTest, RecordedOnceResubmitted) {
    const int n = 1000;
    std::vector<float> gate = test::random_floats(n, 1, -4, 4), up = test::random_floats(n, 2);
    auto g = upload_vec(gate), u = upload_vec(up);
    cl->begin();
    const int t0 = cl->timestamp();
    ops->act_mul(*cl, gpu::Activation::silu, gpu::whole(*g), gpu::whole(*u), n);
    const int t1 = cl->timestamp();
    cl->end();
    for (int round = 0; round < 3; ++round) {
        std::vector<float> in = test::random_floats(n, 10 + (uint32_t)round, -4, 4);
        g->upload(in.data(), n * 4);
        cl->submit_and_wait();
        std::vector<float> out = download(*g, n);
        for (int i = 0; i < n; ++i)
            ASSERT_NEAR(out[i], in[i] / (1 + std::exp(-in[i])) * up[i], 1e-5f) << "round " << round << " i " << i;
        if (dev->timestamps()) {
            EXPECT_GE(cl->elapsed_ns(t0, t1), 0.0);
        }
    }
}

// CommandCache: a list per key, recorded on the first get() and resubmitted after (reading the buffer's
// current contents), the least recently used one re-recorded when full, nothing kept when recording
// throws, and capacity 0 recording every time.
TEST_F(GpuTest, CommandCacheKeepsListsPerKeyLeastRecentlyUsedOut) {
    const int n = 300;
    auto x = upload_vec(std::vector<float>(n, 1.0f));
    gpu::CommandCache cache(*dev, 2, 4);
    int recorded = 0;
    auto run = [&](int64_t key) {  // x = key * x, recorded under {key}
        gpu::CommandList& l = cache.get({key}, [&](gpu::CommandList& c) {
            ++recorded;
            ops->scale(c, gpu::whole(*x), (float)key, n);
        });
        std::vector<float> in = test::random_floats(n, (uint32_t)(recorded + 7 * key));
        x->upload(in.data(), n * 4);
        l.submit_and_wait();
        const std::vector<float> out = download(*x, n);
        for (int i = 0; i < n; i++) ASSERT_EQ(out[i], in[i] * (float)key) << "key " << key << " i " << i;
    };
    run(2);
    run(3);
    run(2);
    EXPECT_EQ(recorded, 2);
    run(4);  // full: evicts 3, the least recently used
    EXPECT_EQ(recorded, 3);
    run(2);
    EXPECT_EQ(recorded, 3);
    run(3);
    EXPECT_EQ(recorded, 4);
    EXPECT_EQ(cache.size(), 2);
    EXPECT_EQ(cache.hits(), 2u);
    EXPECT_EQ(cache.misses(), 4u);
    EXPECT_THROW(cache.get({5}, [&](gpu::CommandList& c) { ops->scale(c, gpu::whole(*x), 1.0f, 0); }), Error);
    EXPECT_EQ(cache.size(), 2);
    run(5);  // recorded now, as if the failed recording never happened
    EXPECT_EQ(recorded, 5);
    cache.clear();
    EXPECT_EQ(cache.size(), 0);
    run(5);
    EXPECT_EQ(recorded, 6);

    gpu::CommandCache none(*dev, 0, 4);
    for (int round = 0; round < 3; round++) {
        gpu::CommandList& l = none.get({1}, [&](gpu::CommandList& c) {
            ++recorded;
            ops->scale(c, gpu::whole(*x), 2.0f, n);
        });
        l.submit_and_wait();
    }
    EXPECT_EQ(recorded, 9);
    EXPECT_EQ(none.size(), 0);
    EXPECT_EQ(none.hits(), 0u);
}

// Dispatches in a group run without barriers between them; the barrier after the group orders the next one.
TEST_F(GpuTest, GroupedDispatchesThenADependentOne) {
    const int n = 500;
    const std::vector<float> a = test::random_floats(n, 3), b = test::random_floats(n, 4);
    auto x = upload_vec(a), y = upload_vec(b);
    cl->begin();
    cl->begin_group();
    ops->scale(*cl, gpu::whole(*x), 2.0f, n);
    ops->scale(*cl, gpu::whole(*y), 3.0f, n);
    EXPECT_THROW(cl->begin_group(), Error);
    cl->end_group();
    ops->add(*cl, gpu::whole(*x), gpu::whole(*y), n);
    EXPECT_THROW(cl->end_group(), Error);
    cl->end();
    cl->submit_and_wait();
    const std::vector<float> out = download(*x, n);
    for (int i = 0; i < n; i++) ASSERT_EQ(out[i], a[i] * 2.0f + b[i] * 3.0f) << i;
}

TEST_F(GpuTest, BadShapesThrowBeforeRecording) {
    auto b = upload_vec(std::vector<float>(64));
    cl->begin();
    // n_in not a multiple of the block, x_stride not a multiple of 32, a W range too small
    EXPECT_THROW(ops->matmul(*cl, GgmlType::Q4_0, gpu::whole(*b), 1, 48, gpu::whole(*b), 64, 1, gpu::whole(*b), 1),
                 Error);
    EXPECT_THROW(ops->matmul(*cl, GgmlType::F32, gpu::whole(*b), 1, 8, gpu::whole(*b), 8, 1, gpu::whole(*b), 1), Error);
    EXPECT_THROW(ops->matmul(*cl, GgmlType::F32, gpu::whole(*b), 100, 32, gpu::whole(*b), 32, 1, gpu::whole(*b), 100),
                 Error);
    EXPECT_THROW(ops->matmul(*cl, GgmlType::Q2_K, gpu::whole(*b), 1, 256, gpu::whole(*b), 256, 1, gpu::whole(*b), 1),
                 Error);
    cl->end();
}

}  // namespace
}  // namespace bee
