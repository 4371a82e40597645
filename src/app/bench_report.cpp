// app/bench_report: statistics of a bench result and its three report formats — a markdown table
// like llama-bench's, and CSV / JSON with llama-bench's field names plus bytes_per_token and gbps.
#include <cmath>

#include <nlohmann/json.hpp>

#include "app/bench.h"
#include "base/error.h"

namespace bee {

namespace {

double mean(const std::vector<double>& v) {
    double s = 0;
    for (double x : v) s += x;
    return v.empty() ? 0.0 : s / (double)v.size();
}

// Sample standard deviation (n - 1), as llama-bench; 0 for fewer than two samples.
double stddev(const std::vector<double>& v) {
    if (v.size() < 2) return 0.0;
    const double m = mean(v);
    double s = 0;
    for (double x : v) s += (x - m) * (x - m);
    return std::sqrt(s / (double)(v.size() - 1));
}

std::vector<double> as_double(const std::vector<uint64_t>& v) { return std::vector<double>(v.begin(), v.end()); }

std::string fmt_params(uint64_t n) {
    return n >= 1000000000ull ? strfmt("%.2f B", n / 1e9) : strfmt("%.2f M", n / 1e6);
}

// The fields shared by CSV and JSON, in llama-bench's order. Vectors are written separately.
using Fields = std::vector<std::pair<const char*, nlohmann::json>>;
Fields fields(const BenchResult& r) {
    return {{"model_filename", r.model.filename},
            {"model_type", r.model.type},
            {"model_size", r.model.size},
            {"model_n_params", r.model.n_params},
            {"n_threads", r.n_threads},
            {"n_batch", r.n_batch},
            {"n_ubatch", r.n_ubatch},
            {"type_k", ggml_type_name(r.type_k)},
            {"type_v", ggml_type_name(r.type_v)},
            {"n_prompt", r.n_prompt},
            {"n_gen", r.n_gen},
            {"n_depth", r.n_depth},
            {"avg_ns", (uint64_t)std::llround(r.avg_ns())},
            {"stddev_ns", (uint64_t)std::llround(r.stddev_ns())},
            {"avg_ts", r.avg_ts()},
            {"stddev_ts", r.stddev_ts()}};
}

std::string csv_cell(const nlohmann::json& v) {
    if (!v.is_string()) return v.dump();
    std::string s = "\"";
    for (char c : v.get<std::string>()) s += c == '"' ? std::string("\"\"") : std::string(1, c);
    return s + "\"";
}

}  // namespace

std::vector<double> BenchResult::samples_ts() const {
    std::vector<double> ts;
    for (uint64_t ns : samples_ns) ts.push_back(ns > 0 ? 1e9 * n_tokens() / (double)ns : 0.0);
    return ts;
}
double BenchResult::avg_ns() const { return mean(as_double(samples_ns)); }
double BenchResult::stddev_ns() const { return stddev(as_double(samples_ns)); }
double BenchResult::avg_ts() const { return mean(samples_ts()); }
double BenchResult::stddev_ts() const { return stddev(samples_ts()); }

std::string BenchResult::test_name() const {
    std::string s = n_gen == 0 ? strfmt("pp%d", n_prompt) : strfmt("tg%d", n_gen);
    if (n_depth > 0) s += strfmt(" @ d%d", n_depth);
    return s;
}

void bench_print_md(FILE* out, const std::vector<BenchResult>& rs) {
    fprintf(out, "| %-24s | %10s | %10s | %-7s | %7s | %14s | %20s | %10s | %8s |\n", "model", "size", "params",
            "backend", "threads", "test", "t/s", "MB/token", "GB/s");
    fprintf(out, "| %s | %s: | %s: | %s | %s: | %s: | %s: | %s: | %s: |\n", std::string(24, '-').c_str(),
            std::string(9, '-').c_str(), std::string(9, '-').c_str(), std::string(7, '-').c_str(),
            std::string(6, '-').c_str(), std::string(13, '-').c_str(), std::string(19, '-').c_str(),
            std::string(9, '-').c_str(), std::string(7, '-').c_str());
    for (const BenchResult& r : rs) {
        const std::string ts = strfmt("%.2f ± %.2f", r.avg_ts(), r.stddev_ts());
        const bool tg = r.n_gen > 0;
        const std::string mb = tg ? strfmt("%.2f", r.bytes_per_token / 1e6) : "";
        const std::string gbps = tg ? strfmt("%.2f", r.gbps()) : "";
        // note: "±" is 2 bytes but one column; pad by one more so the table lines up.
        fprintf(out, "| %-24s | %6.2f MiB | %10s | %-7s | %7d | %14s | %21s | %10s | %8s |\n", r.model.type.c_str(),
                r.model.size / 1048576.0, fmt_params(r.model.n_params).c_str(), r.backend.c_str(), r.n_threads,
                r.test_name().c_str(), ts.c_str(), mb.c_str(), gbps.c_str());
    }
}

void bench_print_csv(FILE* out, const std::vector<BenchResult>& rs) {
    const char* extra[] = {"samples_ns", "samples_ts", "bytes_per_token", "gbps"};
    std::string header;
    for (const auto& [k, v] : fields(BenchResult{})) header += (header.empty() ? "" : ",") + std::string(k);
    for (const char* k : extra) header += std::string(",") + k;
    fprintf(out, "%s\n", header.c_str());
    for (const BenchResult& r : rs) {
        std::string line;
        for (const auto& [k, v] : fields(r)) line += (line.empty() ? "" : ",") + csv_cell(v);
        std::string ns, ts;  // space-separated, as one cell each
        for (uint64_t x : r.samples_ns) ns += (ns.empty() ? "" : " ") + std::to_string(x);
        for (double x : r.samples_ts()) ts += (ts.empty() ? "" : " ") + strfmt("%.6f", x);
        line += ",\"" + ns + "\",\"" + ts + "\"";
        line += r.n_gen > 0 ? strfmt(",%.0f,%.6f", r.bytes_per_token, r.gbps()) : std::string(",,");
        fprintf(out, "%s\n", line.c_str());
    }
}

void bench_print_json(FILE* out, const std::vector<BenchResult>& rs) {
    nlohmann::ordered_json arr = nlohmann::ordered_json::array();
    for (const BenchResult& r : rs) {
        nlohmann::ordered_json j;
        for (const auto& [k, v] : fields(r)) j[k] = v;
        j["samples_ns"] = r.samples_ns;
        j["samples_ts"] = r.samples_ts();
        if (r.n_gen > 0) {
            j["bytes_per_token"] = (uint64_t)std::llround(r.bytes_per_token);
            j["gbps"] = r.gbps();
        }
        arr.push_back(std::move(j));
    }
    fprintf(out, "%s\n", arr.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace).c_str());
}

}  // namespace bee
