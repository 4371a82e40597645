// app/train_data_files: what `bee train-data` writes into its folder — shards of finished sequences as
// numpy .npy arrays (format 1.0, little-endian, C order) and manifest.json listing the settings and the
// shards, rewritten after each shard so an interrupted dump can be resumed. Layout (tools/train-drafter/README.md):
//   shard-NNNNN.tokens.npy     int32   (rows)               token ids, sequences one after another
//   shard-NNNNN.hidden.npy     float16 (rows, 3, n_embd)    residual stream entering each captured layer
//   shard-NNNNN.topk_ids.npy   int32   (rows, k)            the target's k likeliest next tokens at the row
//   shard-NNNNN.topk_logp.npy  float32 (rows, k)            their log-probabilities (full-vocabulary softmax)
#pragma once
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace bee {

// Writes one whole array as a .npy file. descr: numpy's type string ("<i4", "<f2", "<f4").
void write_npy(const std::string& path, const char* descr, const std::vector<int64_t>& shape, const void* data,
               size_t bytes);

// One finished sequence (prompt then response), n rows.
struct TrainSequence {
    int prompt_index = 0;     // line of the prompt file, from 0
    std::string prompt_text;  // the prompt after the chat template (what `bee tokenize --special` reads)
    std::string response_text;
    int n_prompt = 0;               // the first n_prompt rows are the templated prompt
    bool eog = false;               // the response ends with an end-of-generation token (else it hit -n)
    std::vector<int32_t> tokens;    // (n)
    std::vector<uint16_t> hidden;   // (n, n_layers, n_embd) f16
    std::vector<int32_t> topk_ids;  // (n, k)
    std::vector<float> topk_logp;   // (n, k)
    int n_rows() const { return (int)tokens.size(); }
};

class TrainDataWriter {
public:
    // settings: what the dump was made with (model, layers, k, prompts, sampling, ...). A folder that already
    // holds a manifest is refused unless `resume`; with `resume` its settings must equal these, and the
    // prompts of its shards are skipped (done_prompts()). Throws Error saying what to do.
    TrainDataWriter(std::string dir, nlohmann::json settings, int n_layers, int n_embd, int top_k, int shard_size,
                    bool resume);
    const std::set<int>& done_prompts() const { return done_; }
    // Holds the sequence; writes a shard once shard_size sequences are held.
    void add(TrainSequence&& s);
    // Writes the sequences still held (the last, smaller shard).
    void finish();
    int64_t rows_written() const { return rows_written_; }
    int n_shards() const { return n_shards_; }

private:
    void write_shard();
    void write_manifest() const;
    std::string dir_;
    nlohmann::json manifest_;
    int n_layers_, n_embd_, top_k_, shard_size_;
    std::vector<TrainSequence> pending_;
    std::set<int> done_;
    int64_t rows_written_ = 0;
    int n_shards_ = 0;
};

}  // namespace bee
