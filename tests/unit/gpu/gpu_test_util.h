// tests/unit/gpu/gpu_test_util: the one Vulkan device the GPU tests share (skipped when there is none),
// seeded random data, and helpers to move float vectors in and out of buffers.
#pragma once
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "base/error.h"
#include "gpu/buffer.h"
#include "gpu/command_list.h"
#include "gpu/device.h"
#include "gpu/ops.h"

namespace bee::test {

// The test binary's one device: opened on first use, closed by GpuDeviceRelease::TearDown.
struct SharedDevice {
    std::unique_ptr<gpu::Device> dev;
    std::string reason;  // why dev is null
    bool tried = false;
};
// note: never destroyed (a leaked pointer, no static destructor): the device goes in TearDown below, while
// main is still running. Left to exit, its destructor ran after the driver's own exit handlers (registered
// when the loader opened the driver, after this static) and test_gpu crashed at exit on NVIDIA's driver.
inline SharedDevice& shared_device_state() {
    static SharedDevice* s = new SharedDevice;
    return *s;
}

// The device of BEE_GPU_DEVICE (index or name part; default: the best one), opened once per process, or
// nullptr with the reason in *why when there is no Vulkan driver or device.
inline gpu::Device* shared_device(std::string* why) {
    SharedDevice& s = shared_device_state();
    if (!s.tried) {
        s.tried = true;
        const char* sel = getenv("BEE_GPU_DEVICE");
        try {
            s.dev = std::make_unique<gpu::Device>(sel ? sel : "");
            const gpu::DeviceInfo& i = s.dev->info();
            fprintf(stderr, "[ gpu      ] device %d: %s (%s, %s, subgroup size %u%s)\n", i.index, i.name.c_str(),
                    i.type.c_str(), i.driver.c_str(), i.subgroup_size, i.subgroup_arithmetic ? ", arithmetic" : "");
        } catch (const Error& e) {
            s.reason = e.what();
        }
    }
    if (why) *why = s.reason;
    return s.dev.get();
}

// Closes the shared device (and with it the instance) after the last test, inside RUN_ALL_TESTS: every
// buffer, pipeline and command list of a test is gone by then (the fixture owns them).
class GpuDeviceRelease : public ::testing::Environment {
public:
    void TearDown() override { shared_device_state().dev.reset(); }
};
inline ::testing::Environment* const kGpuDeviceRelease = ::testing::AddGlobalTestEnvironment(new GpuDeviceRelease);

// Skips the test, saying why — or fails it under BEE_REQUIRE_GPU=1, which `make test` sets: it installs
// Mesa's software driver, so a missing device there is a broken install, not a machine without a GPU.
#define GPU_SKIP_OR_FAIL(why)                                                                  \
    do {                                                                                       \
        if (getenv("BEE_REQUIRE_GPU")) FAIL() << "BEE_REQUIRE_GPU is set but " << why;         \
        GTEST_SKIP() << why;                                                                   \
    } while (0)

// A test fixture whose tests skip (or fail, see GPU_SKIP_OR_FAIL) when no Vulkan device can be opened.
class GpuTest : public ::testing::Test {
public:
    void SetUp() override {
        std::string why;
        dev = shared_device(&why);
        if (!dev) GPU_SKIP_OR_FAIL("no Vulkan device: " << why);
        ops = std::make_unique<gpu::Ops>(*dev);
        cl = std::make_unique<gpu::CommandList>(*dev);
    }

    // A device buffer holding the bytes / the floats.
    std::unique_ptr<gpu::Buffer> upload_bytes(const void* data, size_t bytes) {
        auto b = std::make_unique<gpu::Buffer>(*dev, bytes, gpu::Memory::device);
        b->upload(data, bytes);
        return b;
    }
    std::unique_ptr<gpu::Buffer> upload_vec(const std::vector<float>& v) { return upload_bytes(v.data(), v.size() * 4); }
    std::vector<float> download(const gpu::Buffer& b, size_t n) {
        std::vector<float> v(n);
        b.download(v.data(), n * 4);
        return v;
    }

    // Attention `a` (its output buffer `out`, rows out_stride floats apart) run once per row with that row's
    // visible cells only (offsets `off`, `cells`, queries `q` of n_q floats per row) gives the bits `got` has.
    void expect_rows_alone_same(const gpu::AttentionOp& a, const gpu::Buffer& out, const std::vector<uint32_t>& off,
                                const std::vector<uint32_t>& cells, const std::vector<float>& q, size_t n_q,
                                const std::vector<float>& got, const std::string& what) {
        for (int row = 0; row < a.n_rows; row++) {
            const uint32_t one_off[2] = {0, off[row + 1] - off[row]};
            auto ob1 = upload_bytes(one_off, sizeof one_off);
            auto cb1 = upload_bytes(cells.data() + off[row], (off[row + 1] - off[row]) * 4);
            auto qb1 = upload_bytes(q.data() + (size_t)row * n_q, n_q * 4);
            gpu::AttentionOp a1 = a;
            a1.n_rows = 1;
            a1.n_visible = one_off[1];
            a1.q = gpu::whole(*qb1);
            a1.offsets = gpu::whole(*ob1);
            a1.cells = gpu::whole(*cb1);
            cl->begin();
            ops->attention(*cl, a1);
            cl->end();
            cl->submit_and_wait();
            const std::vector<float> alone = download(out, n_q);
            ASSERT_EQ(0, std::memcmp(alone.data(), &got[(size_t)row * a.out_stride], alone.size() * 4))
                << what << " row " << row;
        }
    }

    gpu::Device* dev = nullptr;
    std::unique_ptr<gpu::Ops> ops;
    std::unique_ptr<gpu::CommandList> cl;
};

// n uniform floats in [lo, hi) from a fixed seed.
inline std::vector<float> random_floats(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(lo, hi);
    std::vector<float> v(n);
    for (float& x : v) x = dist(rng);
    return v;
}

}  // namespace bee::test
