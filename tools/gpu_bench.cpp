// tools/gpu_bench: times the Vulkan matmul shader (gpu/ops) for one weight matrix of each type on one device
// with GPU timestamps: microseconds per call, weight GB/s, and the max error against the CPU's f32 product of
// the dequantized weights; first the device's buffer-copy GB/s as the ceiling. With --kv, times attention
// instead: 32 query heads over 8 KV heads of 128 (a Llama-8B layer), K and V of each KV type, every row seeing
// all --ctx cells (KV bytes read per call / time as GB/s). A CMake target, not built by default
// (`cmake --build build --target gpu_bench`):
//
//   build/gpu_bench [--list-devices] [--device SEL] [--types q4_0,q4_k,...] [--shapes 4096x4096,896x4864]
//                   [--tokens 1,8]          SHAPE is N_OUTxN_IN (rows x columns of W)
//   build/gpu_bench --kv f16,q8_0,turbo3 [--ctx 4096] [--tokens 1,8]
#include <cmath>
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
#include "kv/kv_cache.h"
#include "quant/quant.h"

using namespace bee;

namespace {

std::vector<std::string> split(const std::string& s) {
    std::vector<std::string> out;
    size_t a = 0;
    while (a <= s.size()) {
        size_t b = s.find(',', a);
        if (b == std::string::npos) b = s.size();
        if (b > a) out.push_back(s.substr(a, b - a));
        a = b + 1;
    }
    return out;
}

struct Result {
    double us = 0, gbs = 0, max_abs = 0, max_rel = 0;
};

// Device copy bandwidth (read + write bytes per second) of one buffer-to-buffer copy, the best of 3: the
// ceiling the matmul GB/s are read against.
double copy_gbs(gpu::Device& dev) {
    const size_t bytes = dev.info().type == "cpu" ? (size_t)64 << 20 : (size_t)512 << 20;
    gpu::Buffer a(dev, bytes, gpu::Memory::device), b(dev, bytes, gpu::Memory::device);
    gpu::CommandList cl(dev, 1, 4);
    cl.begin();
    const int t0 = cl.timestamp();
    cl.copy(gpu::whole(a), gpu::whole(b));
    const int t1 = cl.timestamp();
    cl.end();
    double best = 1e300;
    for (int i = 0; i < 3; ++i) {
        cl.submit_and_wait();
        const double ns = cl.elapsed_ns(t0, t1);
        if (ns > 0 && ns < best) best = ns;
    }
    return best < 1e300 ? 2.0 * (double)bytes / best : 0.0;
}

// A random matrix quantized to one type, on the host and on the device.
struct Weights {
    std::vector<uint8_t> host;  // (n_out, row bytes)
    std::unique_ptr<gpu::Buffer> dev;
};

Weights make_weights(gpu::Device& dev, GgmlType t, int64_t n_out, int64_t n_in) {
    std::mt19937 rng(42);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<float> wf((size_t)(n_out * n_in));
    for (float& v : wf) v = dist(rng);
    Weights w;
    w.host.resize(ggml_row_size(t, n_in) * (size_t)n_out);
    quantize_matrix(t, wf.data(), w.host.data(), n_out, n_in);
    w.dev = std::make_unique<gpu::Buffer>(dev, w.host.size(), gpu::Memory::device);
    w.dev->upload(w.host.data(), w.host.size());
    return w;
}

// Times `reps` calls recorded in one command list (the best of 3 submissions) and checks the result.
Result bench_one(gpu::Device& dev, gpu::Ops& ops, GgmlType t, const Weights& w, int64_t n_out, int64_t n_in,
                 int64_t n_tok) {
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<float> x((size_t)(n_tok * n_in));
    for (float& v : x) v = dist(rng);
    const size_t row_bytes = ggml_row_size(t, n_in);
    const std::vector<uint8_t>& wq = w.host;
    const gpu::Buffer& wb = *w.dev;

    const int64_t xs = gpu::Ops::x_stride_for(n_in);
    std::vector<float> xpad((size_t)(n_tok * xs), 0.0f);
    for (int64_t r = 0; r < n_tok; ++r) memcpy(&xpad[(size_t)(r * xs)], &x[(size_t)(r * n_in)], (size_t)n_in * 4);
    gpu::Buffer xb(dev, xpad.size() * 4, gpu::Memory::device),
        yb(dev, (size_t)(n_tok * n_out) * 4, gpu::Memory::device);
    xb.upload(xpad.data(), xpad.size() * 4);

    // One call first, to size the timed list (~50 ms of work, 5..200 calls).
    gpu::CommandList one(dev, 4, 4);
    one.begin();
    int a = one.timestamp();
    ops.matmul(one, t, gpu::whole(wb), n_out, n_in, gpu::whole(xb), xs, n_tok, gpu::whole(yb), n_out);
    int b = one.timestamp();
    one.end();
    one.submit_and_wait();
    one.submit_and_wait();
    const double once_ns = one.elapsed_ns(a, b);
    int reps = once_ns > 0 ? (int)(50e6 / once_ns) : 20;
    reps = reps < 5 ? 5 : reps > 200 ? 200 : reps;

    gpu::CommandList cl(dev, reps + 1, 4);
    cl.begin();
    a = cl.timestamp();
    for (int i = 0; i < reps; ++i)
        ops.matmul(cl, t, gpu::whole(wb), n_out, n_in, gpu::whole(xb), xs, n_tok, gpu::whole(yb), n_out);
    b = cl.timestamp();
    cl.end();
    double best = 1e300;
    for (int i = 0; i < 3; ++i) {
        cl.submit_and_wait();
        const double ns = cl.elapsed_ns(a, b);
        if (ns > 0 && ns < best) best = ns;
    }
    Result res;
    res.us = best / reps / 1e3;
    res.gbs = (double)wq.size() / (best / reps);

    std::vector<float> y((size_t)(n_tok * n_out)), wd((size_t)n_in);
    yb.download(y.data(), y.size() * 4);
    for (int64_t o = 0; o < n_out; ++o) {
        quant_traits(t)->dequantize_row(wq.data() + (size_t)o * row_bytes, wd.data(), n_in);
        for (int64_t r = 0; r < n_tok; ++r) {
            double s = 0, mag = 0;
            for (int64_t k = 0; k < n_in; ++k) {
                s += (double)wd[(size_t)k] * x[(size_t)(r * n_in + k)];
                mag += std::fabs((double)wd[(size_t)k] * x[(size_t)(r * n_in + k)]);
            }
            const double err = std::fabs(y[(size_t)(r * n_out + o)] - s);
            if (err > res.max_abs) res.max_abs = err;
            if (mag > 0 && err / mag > res.max_rel) res.max_rel = err / mag;
        }
    }
    return res;
}

// Times attention over n_ctx cells of KV type t (K and V) for n_rows query rows, each seeing every cell: the
// best of 3 submissions of a list of calls sized to ~50 ms. Returns microseconds per call.
double bench_attention(gpu::Device& dev, gpu::Ops& ops, GgmlType t, int n_ctx, int n_rows, double* gbs) {
    const int n_head = 32, n_kv = 8, hd = 128;
    KvCacheParams kp;
    kp.n_layer = 1;
    kp.n_cells = n_ctx;
    kp.n_head_kv = n_kv;
    kp.head_dim_k = kp.head_dim_v = hd;
    kp.n_embd_k = kp.n_embd_v = n_kv * hd;
    kp.type_k = kp.type_v = t;
    KvCache kv(kp);
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<float> row((size_t)n_kv * hd), q((size_t)n_rows * n_head * hd);
    for (int c = 0; c < n_ctx; ++c) {
        for (float& v : row) v = dist(rng);
        kv.write_k(0, c, row.data());
        kv.write_v(0, c, row.data());
    }
    for (float& v : q) v = dist(rng);
    std::vector<uint32_t> off(1, 0), cells;
    for (int r = 0; r < n_rows; ++r) {
        for (int c = 0; c < n_ctx; ++c) cells.push_back((uint32_t)c);
        off.push_back((uint32_t)cells.size());
    }
    auto up = [&dev](const void* p, size_t n) {
        auto b = std::make_unique<gpu::Buffer>(dev, (n + 3) / 4 * 4, gpu::Memory::device);
        b->upload(p, n);
        return b;
    };
    const size_t k_bytes = kv.k_row_bytes() * (size_t)n_ctx, v_bytes = kv.v_row_bytes() * (size_t)n_ctx;
    auto qb = up(q.data(), q.size() * 4), kb = up(kv.k_data(0), k_bytes), vb = up(kv.v_data(0), v_bytes),
         ob = up(off.data(), off.size() * 4), cb = up(cells.data(), cells.size() * 4);
    gpu::Buffer out(dev, q.size() * 4, gpu::Memory::device);
    gpu::AttentionOp a;
    a.n_rows = n_rows;
    a.n_head = n_head;
    a.n_head_kv = n_kv;
    a.head_dim = hd;
    a.n_cells = n_ctx;
    a.n_visible = (int64_t)cells.size();
    a.scale = 1.0f / sqrtf((float)hd);
    a.q = gpu::whole(*qb);
    a.k = gpu::whole(*kb);
    a.v = gpu::whole(*vb);
    a.offsets = gpu::whole(*ob);
    a.cells = gpu::whole(*cb);
    a.out = gpu::whole(out);
    a.out_stride = (int64_t)n_head * hd;
    a.k_type = a.v_type = t;
    a.k_rot = kv.k_rot_group();
    a.v_rot = kv.v_rot_group();
    auto run = [&](int reps) {
        gpu::CommandList cl(dev, reps + 1, 4);
        cl.begin();
        const int t0 = cl.timestamp();
        for (int i = 0; i < reps; ++i) ops.attention(cl, a);
        const int t1 = cl.timestamp();
        cl.end();
        double best = 1e300;
        for (int i = 0; i < 3; ++i) {
            cl.submit_and_wait();
            const double ns = cl.elapsed_ns(t0, t1);
            if (ns > 0 && ns < best) best = ns;
        }
        return best / reps;
    };
    const double once = run(1);
    int reps = once > 0 ? (int)(50e6 / once) : 5;
    reps = reps < 3 ? 3 : reps > 200 ? 200 : reps;
    const double ns = run(reps);
    *gbs = (double)(k_bytes + v_bytes) / ns;
    return ns / 1e3;
}

}  // namespace

int main(int argc, char** argv) {
    std::string device, types = "f32,f16,bf16,q4_0,q4_1,q5_0,q5_1,q8_0,q4_k,q5_k,q6_k", shapes = "4096x4096,896x4864",
                        tokens = "1";
    std::string kv_types;
    int n_ctx = 4096;
    bool list = false;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        const bool has_value = i + 1 < argc;
        if (arg == "--list-devices") list = true;
        else if (arg == "--device" && has_value) device = argv[++i];
        else if (arg == "--types" && has_value) types = argv[++i];
        else if (arg == "--shapes" && has_value) shapes = argv[++i];
        else if (arg == "--tokens" && has_value) tokens = argv[++i];
        else if (arg == "--kv" && has_value) kv_types = argv[++i];
        else if (arg == "--ctx" && has_value) n_ctx = atoi(argv[++i]);
        else {
            fprintf(stderr,
                    "usage: gpu_bench [--list-devices] [--device SEL] [--types a,b] [--shapes OUTxIN,...] "
                    "[--tokens 1,8] [--kv f16,q8_0,turbo3 [--ctx 4096]]\n");
            return 2;
        }
    }
    try {
        if (list) {
            std::string why;
            const std::vector<gpu::DeviceInfo> all = gpu::list_devices(&why);
            printf("Available devices:\n");
            for (const gpu::DeviceInfo& d : all) printf("%s\n", gpu::device_line(d).c_str());
            if (all.empty()) fprintf(stderr, "no Vulkan device: %s\n", why.c_str());
            return all.empty() ? 1 : 0;
        }
        gpu::Device dev(device);
        gpu::Ops ops(dev);
        printf("device:%s\n", gpu::device_line(dev.info()).c_str() + 1);
        if (!dev.timestamps()) fprintf(stderr, "gpu_bench: the device has no timestamps; times read 0\n");
        printf("buffer copy: %.1f GB/s (read + write)\n", copy_gbs(dev));
        if (!kv_types.empty()) {
            printf("attention, 32 heads over 8 KV heads of 128, %d cells per row\n%-11s %4s %10s %8s\n", n_ctx,
                   "kv type", "rows", "us/call", "KV GB/s");
            for (const std::string& tn : split(kv_types)) {
                GgmlType t;
                if (!ggml_type_from_name(tn.c_str(), &t) || !gpu::Ops::supports_kv(t))
                    fail("gpu_bench: no device KV type '%s'", tn.c_str());
                for (const std::string& tok : split(tokens)) {
                    double gbs = 0;
                    const double us = bench_attention(dev, ops, t, n_ctx, atoi(tok.c_str()), &gbs);
                    printf("%-11s %4s %10.1f %8.3f\n", tn.c_str(), tok.c_str(), us, gbs);
                    fflush(stdout);
                }
            }
            return 0;
        }
        printf("%-5s %6s %6s %4s %10s %8s %12s %12s\n", "type", "n_out", "n_in", "tok", "us/call", "GB/s",
               "max_abs_err", "max_rel_err");
        for (const std::string& shape : split(shapes)) {
            const long long n_out = atoll(shape.c_str());
            const size_t xpos = shape.find('x');
            const long long n_in = xpos == std::string::npos ? 0 : atoll(shape.c_str() + xpos + 1);
            for (const std::string& tn : split(types)) {
                GgmlType t;
                if (!ggml_type_from_name(tn.c_str(), &t) || !gpu::Ops::supports_matmul(t))
                    fail("gpu_bench: no GPU matmul for type '%s'", tn.c_str());
                if (n_out <= 0 || n_in <= 0 || n_in % ggml_type_info(t).block_size) {
                    printf("%-5s %6lld %6lld  (skipped: n_in not a multiple of the block)\n", tn.c_str(), n_out, n_in);
                    continue;
                }
                const Weights w = make_weights(dev, t, n_out, n_in);
                for (const std::string& tok : split(tokens)) {
                    const Result r = bench_one(dev, ops, t, w, n_out, n_in, atoll(tok.c_str()));
                    printf("%-5s %6lld %6lld %4lld %10.2f %8.1f %12.3g %12.3g\n", tn.c_str(), n_out, n_in,
                           atoll(tok.c_str()), r.us, r.gbs, r.max_abs, r.max_rel);
                    fflush(stdout);
                }
            }
        }
    } catch (const Error& e) {
        fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
    return 0;
}
