// app/perplexity_kld: KL-divergence base file I/O and llama-perplexity's KLD statistics.
#include "app/perplexity_kld.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>

#include "base/error.h"
#include "tokenizer/tokenizer.h"

namespace bee {

namespace {

constexpr char kMagic[8] = {'B', 'E', 'E', 'K', 'L', 'D', '0', '1'};

// Max logit, its index (lowest on ties) and log(sum(exp(logit - max))).
struct LogSumExp {
    float max = 0;
    int32_t argmax = 0;
    double log_sum = 0;  // lse = max + log_sum
};

LogSumExp log_sum_exp(const float* logits, int n) {
    LogSumExp r;
    r.max = logits[0];
    for (int i = 1; i < n; i++)
        if (logits[i] > r.max) {
            r.max = logits[i];
            r.argmax = i;
        }
    double s = 0;
    for (int i = 0; i < n; i++) s += std::exp((double)logits[i] - r.max);
    r.log_sum = std::log(s);
    return r;
}

// Mean and its standard error from a sum and a sum of squares, as llama-perplexity reports them
// (the error is 0 when there are too few values to estimate it).
std::pair<double, double> mean_and_error(double sum, double sum2, size_t n) {
    if (n == 0) return {0, 0};
    const double m = sum / n;
    const double var = sum2 / n - m * m;
    return {m, var > 0 && n > 10 ? std::sqrt(var / (n - 1)) : 0.0};
}

double covariance(double sum_a, double sum_b, double sum_ab, size_t n) {
    if (n < 10) return 0;
    return (sum_ab / n - (sum_a / n) * (sum_b / n)) / (n - 1);
}

// Linear interpolation between the closest ranks of sorted values (fraction in [0, 1]).
float percentile(const std::vector<float>& sorted, double fraction) {
    if (fraction <= 0) return sorted.front();
    if (fraction >= 1) return sorted.back();
    const double x = fraction * (sorted.size() - 1);
    const size_t i = (size_t)x;
    const double t = x - i;
    const size_t j = std::min(i + 1, sorted.size() - 1);
    return (float)((1 - t) * sorted[i] + t * sorted[j]);
}

float median(const std::vector<float>& sorted) {
    const size_t n = sorted.size();
    return n % 2 ? sorted[n / 2] : 0.5f * (sorted[n / 2 - 1] + sorted[n / 2]);
}

void write_bytes(FILE* f, const void* p, size_t n, const std::string& path) {
    if (n && fwrite(p, 1, n, f) != n) fail("%s: write failed (%s); is the disk full?", path.c_str(), strerror(errno));
}

}  // namespace

uint64_t vocab_fingerprint(const Tokenizer& tok) {
    uint64_t h = 1469598103934665603ull;  // FNV-1a 64 offset basis
    auto mix = [&h](unsigned char c) { h = (h ^ c) * 1099511628211ull; };
    for (int32_t i = 0; i < tok.n_vocab(); i++) {
        for (unsigned char c : tok.token_text(i)) mix(c);
        mix(0);
    }
    return h;
}

void kld_encode_row(const float* logits, int n_vocab, int32_t target, KldBaseRow& row) {
    const LogSumExp l = log_sum_exp(logits, n_vocab);
    row.top = (uint32_t)l.argmax;
    row.nll = (float)(l.max + l.log_sum - logits[target]);
    row.q.resize(n_vocab);
    for (int i = 0; i < n_vocab; i++) {
        const double q = std::nearbyint((l.max - (double)logits[i]) / kKldStep);
        row.q[i] = q < kKldBelowRange ? (uint16_t)q : kKldBelowRange;
    }
}

KldRowResult kld_compare_row(const float* logits, int n_vocab, int32_t target, const KldBaseRow& base) {
    const LogSumExp l = log_sum_exp(logits, n_vocab);
    const double lse = l.max + l.log_sum;
    // Base log-probabilities: -q * step, renormalized over the entries kept in range.
    double base_sum = 0;
    for (int i = 0; i < n_vocab; i++)
        if (base.q[i] != kKldBelowRange) base_sum += std::exp(-(double)base.q[i] * kKldStep);
    const double base_log_norm = std::log(base_sum);
    double kld = 0;
    for (int i = 0; i < n_vocab; i++) {
        if (base.q[i] == kKldBelowRange) continue;
        const double log_p_base = -(double)base.q[i] * kKldStep - base_log_norm;
        kld += std::exp(log_p_base) * (log_p_base - ((double)logits[i] - lse));
    }
    KldRowResult r;
    r.nll = lse - logits[target];
    r.nll_base = base.nll;
    r.kld = kld;
    r.p_diff = (float)(std::exp(-r.nll) - std::exp(-r.nll_base));
    r.same_top = (uint32_t)l.argmax == base.top;
    return r;
}

KldWriter::KldWriter(const std::string& path, const KldHeader& h, const std::vector<int32_t>& tokens) : path_(path) {
    f_ = fopen(path.c_str(), "wb");
    if (!f_) fail("cannot create the KL-divergence base file %s: %s", path.c_str(), strerror(errno));
    const uint32_t fields[4] = {h.n_ctx, h.n_vocab, h.n_chunk, h.first};
    const uint32_t name_len = (uint32_t)h.model_name.size();
    write_bytes(f_, kMagic, sizeof kMagic, path_);
    write_bytes(f_, fields, sizeof fields, path_);
    write_bytes(f_, &h.vocab_hash, sizeof h.vocab_hash, path_);
    write_bytes(f_, &name_len, sizeof name_len, path_);
    write_bytes(f_, h.model_name.data(), name_len, path_);
    write_bytes(f_, tokens.data(), (size_t)h.n_chunk * h.n_ctx * sizeof(int32_t), path_);
}

KldWriter::~KldWriter() {
    if (f_) fclose(f_);
}

void KldWriter::write_row(const KldBaseRow& row) {
    write_bytes(f_, &row.top, sizeof row.top, path_);
    write_bytes(f_, &row.nll, sizeof row.nll, path_);
    write_bytes(f_, row.q.data(), row.q.size() * sizeof(uint16_t), path_);
}

void KldWriter::finish() {
    const bool ok = fflush(f_) == 0;
    const bool closed = fclose(f_) == 0;
    f_ = nullptr;
    if (!ok || !closed) fail("%s: write failed (%s); is the disk full?", path_.c_str(), strerror(errno));
}

KldReader::KldReader(const std::string& path) : path_(path) {
    f_ = fopen(path.c_str(), "rb");
    if (!f_) fail("cannot open the KL-divergence base file %s: %s", path.c_str(), strerror(errno));
    char magic[8];
    uint32_t fields[4], name_len = 0;
    const char* how = "make it with `bee perplexity -m MODEL -f TEXT --kl-divergence-base FILE`";
    if (fread(magic, 1, 8, f_) != 8 || memcmp(magic, kMagic, 8) != 0)
        fail("%s is not a KL-divergence base file (no BEEKLD01 magic at offset 0); %s", path.c_str(), how);
    if (fread(fields, sizeof fields, 1, f_) != 1 || fread(&h_.vocab_hash, 8, 1, f_) != 1 ||
        fread(&name_len, 4, 1, f_) != 1 || name_len > 4096)
        fail("%s: truncated or corrupt header (offset %ld); %s", path.c_str(), ftell(f_), how);
    h_.n_ctx = fields[0];
    h_.n_vocab = fields[1];
    h_.n_chunk = fields[2];
    h_.first = fields[3];
    if (h_.n_ctx < 4 || h_.n_ctx > (1u << 24) || h_.first != h_.n_ctx / 2 || h_.n_chunk == 0 ||
        h_.n_chunk > (1u << 24) / h_.n_ctx * 64 || h_.n_vocab == 0 || h_.n_vocab > (1u << 24))
        fail("%s: header has impossible values (n_ctx %u, first %u, n_chunk %u, n_vocab %u); %s", path.c_str(),
             h_.n_ctx, h_.first, h_.n_chunk, h_.n_vocab, how);
    h_.model_name.resize(name_len);
    tokens_.resize((size_t)h_.n_chunk * h_.n_ctx);
    if (fread(h_.model_name.data(), 1, name_len, f_) != name_len ||
        fread(tokens_.data(), sizeof(int32_t), tokens_.size(), f_) != tokens_.size())
        fail("%s: file ends inside its token list (offset %ld); %s", path.c_str(), ftell(f_), how);
}

KldReader::~KldReader() {
    if (f_) fclose(f_);
}

void KldReader::read_row(KldBaseRow& row) {
    row.q.resize(h_.n_vocab);
    const long at = ftell(f_);
    if (fread(&row.top, 4, 1, f_) != 1 || fread(&row.nll, 4, 1, f_) != 1 ||
        fread(row.q.data(), 2, h_.n_vocab, f_) != h_.n_vocab)
        fail("%s: file ends at offset %ld inside a log-probability row; was the base run interrupted?", path_.c_str(),
             at);
    if (row.top >= h_.n_vocab) fail("%s: corrupt row at offset %ld (top token %u)", path_.c_str(), at, row.top);
}

void KldStats::add(const KldRowResult& r) {
    sum_nll_ += r.nll;
    sum_nll2_ += r.nll * r.nll;
    sum_nll_base_ += r.nll_base;
    sum_nll_base2_ += r.nll_base * r.nll_base;
    sum_nll_nll_base_ += r.nll * r.nll_base;
    sum_kld_ += r.kld;
    sum_kld2_ += r.kld * r.kld;
    const double d2 = (double)r.p_diff * r.p_diff;
    sum_p_diff_ += r.p_diff;
    sum_p_diff2_ += d2;
    sum_p_diff4_ += d2 * d2;
    n_same_top_ += r.same_top;
    count_++;
    kld_values_.push_back((float)r.kld);
    p_diff_values_.push_back(r.p_diff);
}

void KldStats::print_chunk_line(FILE* out, int chunk) const {
    const auto lp = mean_and_error(sum_nll_, sum_nll2_, count_);
    const auto lb = mean_and_error(sum_nll_base_, sum_nll_base2_, count_);
    const double cov = covariance(sum_nll_, sum_nll_base_, sum_nll_nll_base_, count_);
    const double ratio_err = std::sqrt(std::max(0.0, lp.second * lp.second + lb.second * lb.second - 2 * cov));
    const auto kl = mean_and_error(sum_kld_, sum_kld2_, count_);
    const auto mse = mean_and_error(sum_p_diff2_, sum_p_diff4_, count_);
    const double rms = std::sqrt(mse.first);
    const double top = (double)n_same_top_ / count_;
    const double top_err = count_ > 1 ? std::sqrt(top * (1 - top) / (count_ - 1)) : 0;
    fprintf(out, "%4d    %9.4f ± %9.4f    %10.5f ± %10.5f    %10.5f ± %10.5f    %6.3f ± %6.3f %%    %6.3f ± %6.3f %%\n",
            chunk, std::exp(lp.first), std::exp(lp.first) * lp.second, lp.first - lb.first, ratio_err, kl.first,
            kl.second, 100 * rms, rms > 0 ? 100 * 0.5 / rms * mse.second : 0.0, 100 * top, 100 * top_err);
}

void KldStats::print_summary(FILE* out) const {
    if (count_ == 0) return;
    std::vector<float> kld = kld_values_, dp = p_diff_values_;
    std::sort(kld.begin(), kld.end());
    std::sort(dp.begin(), dp.end());

    const auto lp = mean_and_error(sum_nll_, sum_nll2_, count_);
    const auto lb = mean_and_error(sum_nll_base_, sum_nll_base2_, count_);
    const double ppl = std::exp(lp.first), ppl_err = ppl * lp.second;
    const double base = std::exp(lb.first), base_err = base * lb.second;
    const double cov = covariance(sum_nll_, sum_nll_base_, sum_nll_nll_base_, count_);
    const double cor = lp.second > 0 && lb.second > 0 ? cov / (lp.second * lb.second) : 1.0;
    const double ratio_err = std::sqrt(std::max(0.0, lp.second * lp.second + lb.second * lb.second - 2 * cov));
    const double ratio = std::exp(lp.first - lb.first);
    const double diff_err = std::sqrt(std::max(0.0, ppl_err * ppl_err + base_err * base_err - 2 * ppl * base * cov));
    fprintf(out, "====== Perplexity statistics ======\n");
    fprintf(out, "Mean PPL(Q)                   : %10.6f ± %10.6f\n", ppl, ppl_err);
    fprintf(out, "Mean PPL(base)                : %10.6f ± %10.6f\n", base, base_err);
    fprintf(out, "Cor(ln(PPL(Q)), ln(PPL(base))): %6.2f%%\n", 100 * cor);
    fprintf(out, "Mean ln(PPL(Q)/PPL(base))     : %10.6f ± %10.6f\n", lp.first - lb.first, ratio_err);
    fprintf(out, "Mean PPL(Q)/PPL(base)         : %10.6f ± %10.6f\n", ratio, ratio * ratio_err);
    fprintf(out, "Mean PPL(Q)-PPL(base)         : %10.6f ± %10.6f\n\n", ppl - base, diff_err);

    const auto kl = mean_and_error(sum_kld_, sum_kld2_, count_);
    fprintf(out, "====== KL divergence statistics ======\n");
    fprintf(out, "Mean    KLD: %10.6f ± %10.6f\n", kl.first, kl.second);
    fprintf(out, "Maximum KLD: %10.6f\n", kld.back());
    const double kld_fracs[] = {0.999, 0.99, 0.95, 0.90};
    for (double f : kld_fracs) fprintf(out, "%4.1f%%   KLD: %10.6f\n", 100 * f, percentile(kld, f));
    fprintf(out, "Median  KLD: %10.6f\n", median(kld));
    const double kld_low[] = {0.10, 0.05, 0.01, 0.001};
    for (double f : kld_low) fprintf(out, "%4.1f%%   KLD: %10.6f\n", 100 * f, percentile(kld, f));
    fprintf(out, "Minimum KLD: %10.6f\n\n", kld.front());

    const auto pd = mean_and_error(sum_p_diff_, sum_p_diff2_, count_);
    const auto mse = mean_and_error(sum_p_diff2_, sum_p_diff4_, count_);
    const double rms = std::sqrt(mse.first);
    const double top = (double)n_same_top_ / count_;
    fprintf(out, "====== Token probability statistics ======\n");
    fprintf(out, "Mean    Δp: %6.3f ± %5.3f %%\n", 100 * pd.first, 100 * pd.second);
    fprintf(out, "Maximum Δp: %6.3f%%\n", 100 * dp.back());
    const double dp_fracs[] = {0.999, 0.99, 0.95, 0.90, 0.75};
    for (double f : dp_fracs) fprintf(out, "%4.1f%%   Δp: %6.3f%%\n", 100 * f, 100 * percentile(dp, f));
    fprintf(out, "Median  Δp: %6.3f%%\n", 100 * median(dp));
    const double dp_low[] = {0.25, 0.10, 0.05, 0.01, 0.001};
    for (double f : dp_low) fprintf(out, "%4.1f%%   Δp: %6.3f%%\n", 100 * f, 100 * percentile(dp, f));
    fprintf(out, "Minimum Δp: %6.3f%%\n", 100 * dp.front());
    fprintf(out, "RMS Δp    : %6.3f ± %5.3f %%\n", 100 * rms, rms > 0 ? 100 * 0.5 / rms * mse.second : 0.0);
    fprintf(out, "Same top p: %6.3f ± %5.3f %%\n", 100 * top,
            count_ > 1 ? 100 * std::sqrt(top * (1 - top) / (count_ - 1)) : 0.0);
}

}  // namespace bee
