// tests/unit/gpu/test_matmul: the matmul shader of every weight type against the CPU: the f32 product of the
// dequantized weights (quant/), and bee::matmul (kernels/, activations quantized as the CPU path does).
#include <cmath>
#include <cstring>

#include "gpu_test_util.h"
#include "kernels/kernels.h"
#include "quant/quant.h"

namespace bee {
namespace {

using test::GpuTest;

struct TypeCase {
    GgmlType type;
    // |gpu - cpu| <= tol * sum_k |w_k x_k| (+1e-6), against the f32 product of the dequantized weights: the
    // shader dequantizes exactly as quant/ does, so only the f32 summation order differs.
    double tol_exact;
    // The same bound against bee::matmul, which quantizes activations to the type's vec_dot_type (Q8_0,
    // Q8_1, Q8_K): about 1/127 of each |w x| in the worst case.
    double tol_cpu_path;
};

const TypeCase kTypes[] = {
    {GgmlType::F32, 2e-6, 2e-6},  {GgmlType::F16, 2e-6, 2e-6},  {GgmlType::BF16, 2e-6, 2e-6},
    {GgmlType::Q4_0, 2e-6, 1e-2}, {GgmlType::Q4_1, 2e-6, 1e-2}, {GgmlType::Q5_0, 2e-6, 1e-2},
    {GgmlType::Q5_1, 2e-6, 1e-2}, {GgmlType::Q8_0, 2e-6, 1e-2}, {GgmlType::Q4_K, 2e-6, 1e-2},
    {GgmlType::Q5_K, 2e-6, 1e-2}, {GgmlType::Q6_K, 2e-6, 1e-2},
};

struct Shape {
    int64_t n_out, blocks, n_tok;  // n_in = blocks * block size (+ tail for float types)
    int tail;                      // extra columns past the last full block (float types only)
};

// One row and one X row; rows and units that are not multiples of the 64-thread workgroup; more X rows than
// a workgroup takes (8) with a partial last group; a float row with a tail that is not a multiple of 4.
const Shape kShapes[] = {{1, 1, 1, 0}, {67, 3, 1, 0}, {19, 9, 9, 0}, {5, 70, 17, 0}, {33, 2, 3, 13}};

void run_case(GpuTest& t, gpu::Ops& ops, gpu::CommandList& cl, gpu::Device& dev, const TypeCase& tc, const Shape& s) {
    const GgmlTypeInfo ti = ggml_type_info(tc.type);
    const bool is_float = ti.block_size == 1;
    if (s.tail && !is_float) return;
    const int64_t blk = is_float ? 32 : ti.block_size;
    const int64_t n_in = s.blocks * blk + s.tail, n_out = s.n_out, n_tok = s.n_tok;
    const uint32_t seed = (uint32_t)tc.type * 1000 + (uint32_t)(n_in + n_out);

    const std::vector<float> wf = test::random_floats((size_t)(n_out * n_in), seed, -1, 1);
    std::vector<uint8_t> wq(ggml_row_size(tc.type, n_in) * (size_t)n_out);
    quantize_matrix(tc.type, wf.data(), wq.data(), n_out, n_in);
    std::vector<float> wd((size_t)(n_out * n_in));
    const size_t row_bytes = ggml_row_size(tc.type, n_in);
    for (int64_t r = 0; r < n_out; ++r)
        quant_traits(tc.type)->dequantize_row(wq.data() + r * row_bytes, wd.data() + r * n_in, n_in);
    const std::vector<float> x = test::random_floats((size_t)(n_tok * n_in), seed + 1, -2, 2);

    // X rows padded to the shader's stride with zeros.
    const int64_t xs = gpu::Ops::x_stride_for(n_in);
    std::vector<float> xpad((size_t)(n_tok * xs), 0.0f);
    for (int64_t r = 0; r < n_tok; ++r) memcpy(&xpad[(size_t)(r * xs)], &x[(size_t)(r * n_in)], (size_t)n_in * 4);
    dev.set_map_device_memory(s.blocks % 2 == 1);  // even block counts take the staged (discrete GPU) path
    auto wb = t.upload_bytes(wq.data(), wq.size());
    auto xb = t.upload_vec(xpad);
    dev.set_map_device_memory(true);
    gpu::Buffer yb(dev, (size_t)(n_tok * n_out) * 4, gpu::Memory::host);
    cl.begin();
    ops.matmul(cl, tc.type, gpu::whole(*wb), n_out, n_in, gpu::whole(*xb), xs, n_tok, gpu::whole(yb), n_out);
    cl.end();
    cl.submit_and_wait();
    std::vector<float> y((size_t)(n_tok * n_out));
    yb.download(y.data(), y.size() * 4);

    std::vector<float> y_cpu((size_t)(n_tok * n_out));
    ref::matmul(tc.type, wq.data(), n_out, n_in, x.data(), n_tok, y_cpu.data());
    for (int64_t r = 0; r < n_tok; ++r)
        for (int64_t o = 0; o < n_out; ++o) {
            double exact = 0, mag = 0;
            for (int64_t k = 0; k < n_in; ++k) {
                const double p = (double)wd[(size_t)(o * n_in + k)] * x[(size_t)(r * n_in + k)];
                exact += p;
                mag += std::fabs(p);
            }
            const double got = y[(size_t)(r * n_out + o)];
            const char* name = ti.name;
            ASSERT_NEAR(got, exact, tc.tol_exact * mag + 1e-6)
                << (ops.subgroups() ? "subgroups " : "shared memory ") << name << " n_out " << n_out << " n_in " << n_in
                << " n_tok " << n_tok << " at " << r << "," << o;
            ASSERT_NEAR(got, y_cpu[(size_t)(r * n_out + o)], tc.tol_cpu_path * mag + 1e-6)
                << name << " vs bee::ref::matmul, n_in " << n_in << " at " << r << "," << o;
        }
}

// Both reductions: subgroupAdd where the device has it (the default), and the shared-memory tree.
TEST_F(GpuTest, MatmulEveryTypeEveryShapeClass) {
    const bool has_subgroups = dev->info().subgroup_arithmetic;
    for (bool subgroups : {true, false}) {
        if (subgroups && !has_subgroups) continue;
        ASSERT_EQ(ops->set_subgroups(subgroups), subgroups);
        for (const TypeCase& tc : kTypes) {
            ASSERT_TRUE(gpu::Ops::supports_matmul(tc.type)) << ggml_type_name(tc.type);
            for (const Shape& s : kShapes) {
                run_case(*this, *ops, *cl, *dev, tc, s);
                if (HasFatalFailure()) return;
            }
        }
    }
    if (!has_subgroups) fprintf(stderr, "[ gpu      ] no subgroup arithmetic: shared-memory reduction only\n");
}

// A row's result does not depend on the other X rows of the batch: 1 row alone equals row 0 and row 10 of 11.
TEST_F(GpuTest, MatmulIsBatchInvariant) {
    const int64_t n_out = 40, n_in = 512, n_tok = 11;
    const std::vector<float> wf = test::random_floats((size_t)(n_out * n_in), 5);
    std::vector<uint8_t> wq(ggml_row_size(GgmlType::Q4_K, n_in) * n_out);
    quantize_matrix(GgmlType::Q4_K, wf.data(), wq.data(), n_out, n_in);
    const std::vector<float> x = test::random_floats((size_t)(n_tok * n_in), 6);
    auto wb = upload_bytes(wq.data(), wq.size());
    auto xb = upload_vec(x);
    gpu::Buffer y_all(*dev, (size_t)(n_tok * n_out) * 4, gpu::Memory::host);
    gpu::Buffer y_one(*dev, (size_t)n_out * 4, gpu::Memory::host);
    gpu::Buffer x_last(*dev, (size_t)n_in * 4, gpu::Memory::device);
    x_last.upload(x.data() + (n_tok - 1) * n_in, (size_t)n_in * 4);
    gpu::Buffer y_last(*dev, (size_t)n_out * 4, gpu::Memory::host);
    cl->begin();
    ops->matmul(*cl, GgmlType::Q4_K, gpu::whole(*wb), n_out, n_in, gpu::whole(*xb), n_in, n_tok, gpu::whole(y_all),
                n_out);
    ops->matmul(*cl, GgmlType::Q4_K, gpu::whole(*wb), n_out, n_in, gpu::whole(*xb), n_in, 1, gpu::whole(y_one), n_out);
    ops->matmul(*cl, GgmlType::Q4_K, gpu::whole(*wb), n_out, n_in, gpu::whole(x_last), n_in, 1, gpu::whole(y_last),
                n_out);
    cl->end();
    cl->submit_and_wait();
    std::vector<float> a = download(y_all, (size_t)(n_tok * n_out)), b = download(y_one, n_out),
                       c = download(y_last, n_out);
    EXPECT_EQ(0, memcmp(a.data(), b.data(), (size_t)n_out * 4));
    EXPECT_EQ(0, memcmp(a.data() + (n_tok - 1) * n_out, c.data(), (size_t)n_out * 4));
}

}  // namespace
}  // namespace bee
