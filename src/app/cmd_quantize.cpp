// app/cmd_quantize: `bee quantize IN.gguf OUT.gguf TYPE [--threads N]` — rewrite a model's weight
// matrices in another type with the reference quantizers of quant/, keeping every metadata key.
#include <algorithm>
#include <cctype>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <string>
#include <vector>

#include "app/args.h"
#include "app/commands.h"
#include "base/error.h"
#include "base/thread_pool.h"
#include "base/timer.h"
#include "gguf/gguf.h"
#include "gguf/gguf_writer.h"
#include "quant/quant.h"

namespace bee {

namespace {

constexpr uint32_t kQuantizationVersion = 2;   // general.quantization_version llama.cpp writes
constexpr int64_t kElementsPerTask = 1 << 18;  // rows are grouped into tasks of about this size
constexpr double kMiB = 1024.0 * 1024.0;

// A TYPE argument: the tensor type written and the llama.cpp llama_ftype recorded in
// general.file_type (LLAMA_FTYPE_MOSTLY_*; the K types are recorded as their _M mixes, as asked).
struct Target {
    const char* name;
    GgmlType type;
    uint32_t file_type;
};

const Target kTargets[] = {
    {"f32", GgmlType::F32, 0},      {"f16", GgmlType::F16, 1},      {"bf16", GgmlType::BF16, 32},
    {"q4_0", GgmlType::Q4_0, 2},    {"q4_1", GgmlType::Q4_1, 3},    {"q5_0", GgmlType::Q5_0, 8},
    {"q5_1", GgmlType::Q5_1, 9},    {"q8_0", GgmlType::Q8_0, 7},    {"q2_k", GgmlType::Q2_K, 10},
    {"q3_k", GgmlType::Q3_K, 12},   {"q3_k_m", GgmlType::Q3_K, 12}, {"q4_k", GgmlType::Q4_K, 15},
    {"q4_k_m", GgmlType::Q4_K, 15}, {"q5_k", GgmlType::Q5_K, 17},   {"q5_k_m", GgmlType::Q5_K, 17},
    {"q6_k", GgmlType::Q6_K, 18},
};

const Target* find_target(const std::string& name) {
    std::string lower = name;
    for (char& c : lower) c = (char)tolower((unsigned char)c);
    for (const Target& t : kTargets)
        if (lower == t.name) return &t;
    return nullptr;
}

std::string target_names() {
    std::string s;
    for (const Target& t : kTargets) s += std::string(s.empty() ? "" : " ") + t.name;
    return s;
}

// What happens to one tensor.
struct Plan {
    GgmlType out_type;
    bool convert;      // false: bytes copied unchanged
    const char* note;  // why, when not the plain target (nullptr otherwise)
};

// Like llama-quantize: a type whose block does not divide the row falls back to a legacy type of
// about the same size, then to F16.
GgmlType fallback_type(GgmlType t, int64_t ne0) {
    GgmlType cand = t;
    switch (t) {
        case GgmlType::Q2_K:
        case GgmlType::Q3_K: cand = GgmlType::Q4_0; break;
        case GgmlType::Q4_K: cand = GgmlType::Q5_0; break;
        case GgmlType::Q5_K: cand = GgmlType::Q5_1; break;
        case GgmlType::Q6_K: cand = GgmlType::Q8_0; break;
        default: break;
    }
    return ne0 % ggml_type_info(cand).block_size == 0 ? cand : GgmlType::F16;
}

// Weight matrices (2-D or more, name ending in "weight", token_embd included) get the target type;
// 1-D tensors (norms, biases) are stored as F32; the MoE router (ffn_gate_inp), conv taps (ssm_conv1d), other tensors and
// types we cannot read (integers, IQ*) are copied unchanged.
Plan plan_tensor(const GgufTensor& t, GgmlType target) {
    const QuantTraits* src = quant_traits(t.type);
    if (!src || !src->vec_dot) {  // integers, IQ*, ...: copied as they are
        const bool quantized = ggml_type_info(t.type).block_size > 1;
        return {t.type, false, quantized ? "kept: no quantizer for this type" : nullptr};
    }
    if (t.n_dims < 2) return {GgmlType::F32, t.type != GgmlType::F32, nullptr};
    const std::string& n = t.name;
    const bool is_weight = n.size() >= 6 && n.compare(n.size() - 6, 6, "weight") == 0;
    // The MoE router and the short conv taps of recurrent layers (ssm_conv1d, 4 values a row) stay as
    // they are, as llama-quantize leaves them.
    if (!is_weight || n.find("ffn_gate_inp") != std::string::npos || n.find("ssm_conv1d") != std::string::npos)
        return {t.type, false, nullptr};
    if (t.ne[0] % ggml_type_info(target).block_size != 0) {
        const GgmlType fb = fallback_type(target, t.ne[0]);
        return {fb, fb != t.type, "fallback: row length not a multiple of the block size"};
    }
    return {target, target != t.type, nullptr};
}

// Converts the rows of `t` into `out` (ggml_row_size(to, ne[0]) bytes per row), in parallel.
// Rows are independent, so the bytes do not depend on the thread count.
void convert_rows(const GgufTensor& t, GgmlType to, ThreadPool& pool, std::vector<uint8_t>& out) {
    const int64_t ne0 = t.ne[0], n_rows = t.n_elements() / ne0;
    const size_t src_row = ggml_row_size(t.type, ne0), dst_row = ggml_row_size(to, ne0);
    if (src_row * (size_t)n_rows != t.nbytes)
        fail("tensor '%s': %zu bytes, expected %zu", t.name.c_str(), t.nbytes, src_row * (size_t)n_rows);
    out.resize(dst_row * (size_t)n_rows);
    const int64_t rows_per_task = std::max<int64_t>(1, kElementsPerTask / ne0);
    const int n_tasks = (int)((n_rows + rows_per_task - 1) / rows_per_task);
    std::vector<std::vector<float>> scratch(pool.size(), std::vector<float>((size_t)ne0));
    const QuantTraits* from = quant_traits(t.type);
    const QuantTraits* dst = quant_traits(to);
    pool.run(n_tasks, [&](int task, int thread) {
        float* row = scratch[thread].data();
        const int64_t end = std::min(n_rows, (task + 1) * rows_per_task);
        for (int64_t r = task * rows_per_task; r < end; ++r) {
            from->dequantize_row(t.data + (size_t)r * src_row, row, ne0);
            dst->quantize_row(row, out.data() + (size_t)r * dst_row, ne0);
        }
    });
}

std::string shape_text(const GgufTensor& t) {
    std::string s = "[";
    for (int d = 0; d < std::max(1, t.n_dims); ++d) s += strfmt(d ? " x %" PRId64 : "%" PRId64, t.ne[d]);
    return s + "]";
}

// Copies the metadata, setting general.file_type (and general.quantization_version when the
// output holds block-quantized tensors).
void copy_metadata(const GgufFile& in, GgufWriter& w, const Target& target) {
    for (const auto& [key, value] : in.metadata()) w.set(key, value);
    w.set_u32("general.file_type", target.file_type);
    if (ggml_type_info(target.type).block_size > 1) w.set_u32("general.quantization_version", kQuantizationVersion);
}

struct Totals {
    size_t in_bytes = 0, out_bytes = 0;
};

void quantize_file(const std::string& in_path, const std::string& out_path, const Target& target, int n_threads) {
    std::error_code ec;
    if (std::filesystem::equivalent(in_path, out_path, ec))
        fail("output '%s' is the input file; write to another path", out_path.c_str());
    const double t0 = time_ms();
    const GgufFile in = GgufFile::open(in_path);
    GgufWriter w(in.alignment());
    copy_metadata(in, w, target);
    ThreadPool pool(n_threads);
    Totals tot;
    std::vector<uint8_t> buf;
    const size_t n = in.tensors().size();
    for (size_t i = 0; i < n; ++i) {
        const GgufTensor& t = in.tensors()[i];
        const Plan p = plan_tensor(t, target.type);
        const std::vector<int64_t> ne(t.ne, t.ne + std::max(1, t.n_dims));
        if (p.convert) {
            convert_rows(t, p.out_type, pool, buf);
            w.add_tensor(t.name, p.out_type, ne, buf.data(), buf.size());
        } else {
            w.add_tensor(t.name, t.type, ne, t.data, t.nbytes);
        }
        const size_t out_bytes = p.convert ? buf.size() : t.nbytes;
        printf("[%4zu/%4zu] %-40s %-18s %5s -> %-5s %9.2f MiB -> %9.2f MiB%s%s\n", i + 1, n, t.name.c_str(),
               shape_text(t).c_str(), ggml_type_name(t.type), ggml_type_name(p.convert ? p.out_type : t.type),
               t.nbytes / kMiB, out_bytes / kMiB, p.note ? "  " : "", p.note ? p.note : "");
        tot.in_bytes += t.nbytes;
        tot.out_bytes += out_bytes;
    }
    w.write(out_path);
    const double secs = (time_ms() - t0) / 1000.0;
    printf("quantized %zu tensors to %s: %.2f MiB -> %.2f MiB in %.2f s (%.1f MB/s of input, %d threads)\n", n,
           target.name, tot.in_bytes / kMiB, tot.out_bytes / kMiB, secs, secs > 0 ? tot.in_bytes / 1e6 / secs : 0.0,
           n_threads);
}

}  // namespace

int cmd_quantize(int argc, char** argv) {
    std::vector<std::string> pos;
    int32_t n_threads = 0;
    ArgParser p("bee quantize", "Rewrites the weight matrices of IN in TYPE (" + target_names() +
                                    ") with the reference quantizers; metadata is copied, 1-D tensors stay F32.");
    p.positional(&pos, "IN.gguf OUT.gguf TYPE");
    p.i32("-t,--threads", &n_threads, "worker threads (default: all cores)", 0, 1024);
    try {
        if (!p.parse(argc, argv)) return 0;
    } catch (const Error& e) {
        fprintf(stderr, "error: %s\n%s", e.what(), p.usage().c_str());
        return 2;
    }
    if (pos.size() != 3) {
        fprintf(stderr, "error: expected IN.gguf OUT.gguf TYPE\n%s", p.usage().c_str());
        return 2;
    }
    const Target* target = find_target(pos[2]);
    if (!target) {
        fprintf(stderr, "error: unknown TYPE '%s' (one of: %s)\n", pos[2].c_str(), target_names().c_str());
        return 2;
    }
    try {
        quantize_file(pos[0], pos[1], *target, n_threads > 0 ? n_threads : default_thread_count());
    } catch (const std::exception& e) {
        fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
    return 0;
}

}  // namespace bee
