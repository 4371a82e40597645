// app/perplexity_kld: the KL-divergence base file of `bee perplexity` (written with
// --kl-divergence-base, read back with --kl-divergence) and the statistics computed against it.
//
// File format "BEEKLD01" (little-endian):
//   char[8] magic "BEEKLD01"
//   u32 n_ctx, u32 n_vocab, u32 n_chunk, u32 first (= n_ctx/2, the first scored position)
//   u64 vocab_hash        FNV-1a 64 of every vocab entry's text followed by a NUL byte
//   u32 name_len, char[name_len] model file name (for error messages only)
//   i32 tokens[n_chunk * n_ctx]   the evaluated tokens (before the per-chunk BOS substitution)
//   then n_chunk * (n_ctx - 1 - first) rows, one per scored token, in order:
//     u32 top                     argmax of the base logits (lowest id on ties)
//     f32 nll                     -log p_base(next token), exact
//     u16 q[n_vocab]              q = round((max_logit - logit) / kKldStep), 65535: below the range
// note: like llama-perplexity's file, the log-probabilities are kept to 16 bits per vocab entry; the
// range (kKldRange nats below the top logit) and step are fixed, so no per-row scale is stored.
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace bee {

class Tokenizer;

constexpr float kKldRange = 32.0f;                // nats below the top logit that are kept
constexpr float kKldStep = kKldRange / 65534.0f;  // nats per quantization step
constexpr uint16_t kKldBelowRange = 65535;        // probability treated as 0

struct KldHeader {
    uint32_t n_ctx = 0, n_vocab = 0, n_chunk = 0, first = 0;
    uint64_t vocab_hash = 0;
    std::string model_name;
    uint32_t rows_per_chunk() const { return n_ctx - 1 - first; }
};

// One scored position of the base run.
struct KldBaseRow {
    uint32_t top = 0;
    float nll = 0;
    std::vector<uint16_t> q;  // (n_vocab)
};

// FNV-1a 64 over the vocab's token texts: two models with the same vocabulary give the same hash.
uint64_t vocab_fingerprint(const Tokenizer& tok);

// Quantizes one row of logits (n_vocab) predicting `target` into a base row.
void kld_encode_row(const float* logits, int n_vocab, int32_t target, KldBaseRow& row);

class KldWriter {
public:
    // Creates the file and writes the header and the tokens; throws Error if it cannot.
    KldWriter(const std::string& path, const KldHeader& h, const std::vector<int32_t>& tokens);
    ~KldWriter();
    KldWriter(const KldWriter&) = delete;
    KldWriter& operator=(const KldWriter&) = delete;
    void write_row(const KldBaseRow& row);
    void finish();  // flushes and closes; throws Error on a write failure (disk full)

private:
    std::string path_;
    FILE* f_ = nullptr;
};

class KldReader {
public:
    // Opens the file and reads the header and tokens; throws Error naming the file on a bad magic
    // or a file too short for its header.
    explicit KldReader(const std::string& path);
    ~KldReader();
    KldReader(const KldReader&) = delete;
    KldReader& operator=(const KldReader&) = delete;
    const KldHeader& header() const { return h_; }
    const std::vector<int32_t>& tokens() const { return tokens_; }
    void read_row(KldBaseRow& row);  // throws Error naming the byte offset if the file ends early

private:
    std::string path_;
    FILE* f_ = nullptr;
    KldHeader h_;
    std::vector<int32_t> tokens_;
};

// Per scored token, the comparison of a run's logits with the base row.
struct KldRowResult {
    double nll = 0, nll_base = 0, kld = 0;
    float p_diff = 0;  // p(next token) - p_base(next token)
    bool same_top = false;
};
KldRowResult kld_compare_row(const float* logits, int n_vocab, int32_t target, const KldBaseRow& base);

// Sums of llama-perplexity's KL-divergence statistics; rows must be added in token order.
class KldStats {
public:
    void add(const KldRowResult& r);
    size_t count() const { return count_; }
    // One line per chunk: chunk, PPL, ln(PPL(Q)/PPL(base)), KLD, RMS Δp, same top p.
    void print_chunk_line(FILE* out, int chunk) const;
    // The final "Perplexity / KL divergence / Token probability statistics" sections.
    void print_summary(FILE* out) const;
    double mean_nll() const { return count_ ? sum_nll_ / count_ : 0; }

private:
    double sum_nll_ = 0, sum_nll2_ = 0, sum_nll_base_ = 0, sum_nll_base2_ = 0, sum_nll_nll_base_ = 0;
    double sum_kld_ = 0, sum_kld2_ = 0, sum_p_diff_ = 0, sum_p_diff2_ = 0, sum_p_diff4_ = 0;
    size_t n_same_top_ = 0, count_ = 0;
    std::vector<float> kld_values_, p_diff_values_;
};

}  // namespace bee
