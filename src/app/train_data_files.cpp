// app/train_data_files: .npy shards and manifest.json of `bee train-data` (see the header for the layout).
#include "app/train_data_files.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "base/error.h"
#include "base/log.h"
#include "base/mapped_file.h"

namespace bee {

namespace {

const char* kFormat = "bee-train-data";
constexpr int kVersion = 1;

void write_all(FILE* f, const void* data, size_t bytes, const std::string& path) {
    if (bytes && fwrite(data, 1, bytes, f) != bytes) {
        fclose(f);
        fail("cannot write %s: %s (disk full?)", path.c_str(), strerror(errno));
    }
}

std::string shard_file(int shard, const char* what) { return strfmt("shard-%05d.%s.npy", shard, what); }

}  // namespace

void write_npy(const std::string& path, const char* descr, const std::vector<int64_t>& shape, const void* data,
               size_t bytes) {
    std::string dims;  // numpy's tuple: "(5,)" or "(5, 3, 576)"
    for (size_t i = 0; i < shape.size(); i++) dims += (i ? ", " : "") + std::to_string(shape[i]);
    if (shape.size() == 1) dims += ",";
    std::string header = strfmt("{'descr': '%s', 'fortran_order': False, 'shape': (%s), }", descr, dims.c_str());
    // magic (6) + version (2) + length (2) + header, padded with spaces to a multiple of 64, ending in '\n'
    const size_t total = (10 + header.size() + 1 + 63) / 64 * 64;
    header.append(total - 10 - header.size() - 1, ' ');
    header += '\n';
    const uint16_t len = (uint16_t)header.size();
    const std::string tmp = path + ".part";
    FILE* f = fopen(tmp.c_str(), "wb");
    if (!f) fail("cannot create %s: %s", tmp.c_str(), strerror(errno));
    const unsigned char magic[8] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
    const unsigned char len_le[2] = {(unsigned char)(len & 0xff), (unsigned char)(len >> 8)};
    write_all(f, magic, sizeof magic, tmp);
    write_all(f, len_le, sizeof len_le, tmp);
    write_all(f, header.data(), header.size(), tmp);
    write_all(f, data, bytes, tmp);
    if (fclose(f) != 0) fail("cannot write %s: %s", tmp.c_str(), strerror(errno));
    if (rename(tmp.c_str(), path.c_str()) != 0) fail("cannot rename %s: %s", tmp.c_str(), strerror(errno));
}

TrainDataWriter::TrainDataWriter(std::string dir, nlohmann::json settings, int n_layers, int n_embd, int top_k,
                                 int shard_size, bool resume)
    : dir_(std::move(dir)), n_layers_(n_layers), n_embd_(n_embd), top_k_(top_k), shard_size_(shard_size) {
    std::error_code ec;
    std::filesystem::create_directories(dir_, ec);
    if (ec) fail("cannot create the folder %s: %s", dir_.c_str(), ec.message().c_str());
    const std::string path = dir_ + "/manifest.json";
    if (!std::filesystem::exists(path)) {
        manifest_ = {{"format", kFormat},
                     {"version", kVersion},
                     {"settings", settings},
                     {"shards", nlohmann::json::array()}};
        write_manifest();
        return;
    }
    if (!resume)
        fail("%s already holds a dump (%s): pass --resume to continue it, or choose another --out", dir_.c_str(),
             path.c_str());
    manifest_ = nlohmann::json::parse(read_file(path), nullptr, false);
    if (!manifest_.is_object() || manifest_.value("format", "") != kFormat || !manifest_.contains("shards"))
        fail("%s is not a manifest of bee train-data: remove the folder or choose another --out", path.c_str());
    const nlohmann::json& old = manifest_["settings"];
    for (auto it = settings.begin(); it != settings.end(); ++it)
        if (!old.contains(it.key()) || old[it.key()] != it.value())
            fail(
                "--resume: %s was made with %s = %s, this run has %s: resume with the same settings or use another "
                "--out",
                dir_.c_str(), it.key().c_str(), old.contains(it.key()) ? old[it.key()].dump().c_str() : "(none)",
                it.value().dump().c_str());
    for (const nlohmann::json& sh : manifest_["shards"]) {
        for (const nlohmann::json& s : sh["sequences"]) done_.insert(s["prompt"].get<int>());
        rows_written_ += sh["n_rows"].get<int64_t>();
        n_shards_++;
    }
    BEE_LOG_INFO("train-data: resuming %s: %d shards, %zu prompts, %lld rows already written", dir_.c_str(), n_shards_,
                 done_.size(), (long long)rows_written_);
}

void TrainDataWriter::add(TrainSequence&& s) {
    pending_.push_back(std::move(s));
    if ((int)pending_.size() >= shard_size_) write_shard();
}

void TrainDataWriter::finish() {
    if (!pending_.empty()) write_shard();
}

void TrainDataWriter::write_shard() {
    const int shard = n_shards_;
    int64_t n = 0;
    for (const TrainSequence& s : pending_) n += s.n_rows();
    std::vector<int32_t> tokens, ids;
    std::vector<uint16_t> hidden;
    std::vector<float> logp;
    tokens.reserve(n);
    hidden.reserve((size_t)n * n_layers_ * n_embd_);
    ids.reserve((size_t)n * top_k_);
    logp.reserve((size_t)n * top_k_);
    nlohmann::json seqs = nlohmann::json::array();
    int64_t row0 = 0;
    for (const TrainSequence& s : pending_) {
        tokens.insert(tokens.end(), s.tokens.begin(), s.tokens.end());
        hidden.insert(hidden.end(), s.hidden.begin(), s.hidden.end());
        ids.insert(ids.end(), s.topk_ids.begin(), s.topk_ids.end());
        logp.insert(logp.end(), s.topk_logp.begin(), s.topk_logp.end());
        seqs.push_back({{"prompt", s.prompt_index},
                        {"row0", row0},
                        {"n_rows", s.n_rows()},
                        {"n_prompt", s.n_prompt},
                        {"eog", s.eog},
                        {"prompt_text", s.prompt_text},
                        {"response_text", s.response_text}});
        row0 += s.n_rows();
    }
    const std::string base = dir_ + "/";
    write_npy(base + shard_file(shard, "tokens"), "<i4", {n}, tokens.data(), tokens.size() * 4);
    write_npy(base + shard_file(shard, "hidden"), "<f2", {n, n_layers_, n_embd_}, hidden.data(), hidden.size() * 2);
    write_npy(base + shard_file(shard, "topk_ids"), "<i4", {n, top_k_}, ids.data(), ids.size() * 4);
    write_npy(base + shard_file(shard, "topk_logp"), "<f4", {n, top_k_}, logp.data(), logp.size() * 4);
    manifest_["shards"].push_back({{"name", strfmt("shard-%05d", shard)},
                                   {"n_rows", n},
                                   {"tokens", shard_file(shard, "tokens")},
                                   {"hidden", shard_file(shard, "hidden")},
                                   {"topk_ids", shard_file(shard, "topk_ids")},
                                   {"topk_logp", shard_file(shard, "topk_logp")},
                                   {"sequences", seqs}});
    write_manifest();
    for (const TrainSequence& s : pending_) done_.insert(s.prompt_index);
    pending_.clear();
    rows_written_ += n;
    n_shards_++;
}

void TrainDataWriter::write_manifest() const {
    const std::string path = dir_ + "/manifest.json", tmp = path + ".part";
    const std::string text = manifest_.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    FILE* f = fopen(tmp.c_str(), "wb");
    if (!f) fail("cannot create %s: %s", tmp.c_str(), strerror(errno));
    write_all(f, text.data(), text.size(), tmp);
    if (fclose(f) != 0) fail("cannot write %s: %s", tmp.c_str(), strerror(errno));
    if (rename(tmp.c_str(), path.c_str()) != 0) fail("cannot rename %s: %s", tmp.c_str(), strerror(errno));
}

}  // namespace bee
