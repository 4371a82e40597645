// kv/kv_state: sequence KV export/import through KvCache's public API (cells, rows, alloc).
#include "kv/kv_state.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "base/error.h"

namespace bee {

SeqState seq_state_export(const KvCache& kv, int seq, int32_t p1) {
    SeqState st;
    const KvCacheParams& p = kv.params();
    st.n_layer = p.n_layer;
    st.type_k = p.type_k;
    st.type_v = p.type_v;
    st.k_row_bytes = kv.k_row_bytes();
    st.v_row_bytes = kv.v_row_bytes();
    st.rot_k = kv.k_rot_group();
    st.rot_v = kv.v_rot_group();
    if (!kv.v_promoted_layers().empty())
        for (int il = 0; il < p.n_layer; il++)
            st.v_layers.push_back({kv.v_type(il), kv.v_row_bytes(il), kv.v_rot_group(il)});
    std::vector<std::pair<int32_t, int32_t>> cells;  // (pos, cell) ascending
    kv.seq_cells_sorted(seq, cells);
    if (p1 >= 0)
        while (!cells.empty() && cells.back().first >= p1) cells.pop_back();
    const size_t n = cells.size();
    for (const auto& [pos, c] : cells) st.pos.push_back(pos);
    st.k.resize((size_t)p.n_layer * n * st.k_row_bytes);
    st.v.resize(n * (kv.bytes_per_token() - (size_t)p.n_layer * st.k_row_bytes));
    uint8_t* vd = st.v.data();
    for (int il = 0; il < p.n_layer; il++) {
        uint8_t* kd = st.k.data() + (size_t)il * n * st.k_row_bytes;
        const size_t vb = kv.v_row_bytes(il);
        for (size_t i = 0; i < n; i++) {
            memcpy(kd + i * st.k_row_bytes, kv.k_data(il) + (size_t)cells[i].second * st.k_row_bytes, st.k_row_bytes);
            memcpy(vd + i * vb, kv.v_data(il) + (size_t)cells[i].second * vb, vb);
        }
        vd += n * vb;
    }
    return st;
}

void seq_state_check(const KvCache& kv, const SeqState& st, const char* what) {
    const KvCacheParams& p = kv.params();
    if (st.n_layer != p.n_layer || st.type_k != p.type_k || st.type_v != p.type_v ||
        st.k_row_bytes != kv.k_row_bytes() || st.v_row_bytes != kv.v_row_bytes())
        fail(
            "%s: the state has %d layers, KV types %s/%s (K/V), rows of %zu/%zu bytes; this cache has %d layers, "
            "%s/%s, %zu/%zu bytes (use the same model and -ctk/-ctv/--kv-auto-asymmetric as when it was saved)",
            what, st.n_layer, ggml_type_name(st.type_k), ggml_type_name(st.type_v), st.k_row_bytes, st.v_row_bytes,
            p.n_layer, ggml_type_name(p.type_k), ggml_type_name(p.type_v), kv.k_row_bytes(), kv.v_row_bytes());
    if (st.rot_k != kv.k_rot_group() || st.rot_v != kv.v_rot_group())
        fail(
            "%s: the state's K/V rows are Hadamard-rotated in groups of %d/%d (0: not rotated), this cache's in "
            "groups of %d/%d (use the same --kv-rotate as when it was saved)",
            what, st.rot_k, st.rot_v, kv.k_rot_group(), kv.v_rot_group());
    for (int il = 0; il < p.n_layer; il++) {
        const SeqState::VLayer l = st.v_layer(il);
        if (l.type != kv.v_type(il) || l.row_bytes != kv.v_row_bytes(il) || l.rot != kv.v_rot_group(il))
            fail(
                "%s: layer %d of the state has V type %s (rows of %zu bytes, rotation group %d), this cache's layer %d "
                "has %s (%zu bytes, %d): the per-layer V types differ (use the same -ctv and --kv-boundary-layers as "
                "when it was saved)",
                what, il, ggml_type_name(l.type) ? ggml_type_name(l.type) : "(unknown)", l.row_bytes, l.rot, il,
                ggml_type_name(kv.v_type(il)), kv.v_row_bytes(il), kv.v_rot_group(il));
    }
}

bool seq_state_import(KvCache& kv, int seq, const SeqState& st) {
    const KvCacheParams& p = kv.params();
    seq_state_check(kv, st, "KV state import");
    if (kv.seq_n_cells(seq) != 0) fail("KV state import: sequence %d is not empty (remove its cells first)", seq);
    const int n = st.n_cells();
    if (n == 0) return true;
    std::vector<int32_t> seqs(n, seq), cells(n);
    if (!kv.alloc(n, st.pos.data(), seqs.data(), cells.data())) return false;
    const uint8_t* vd = st.v.data();
    for (int il = 0; il < p.n_layer; il++) {
        const uint8_t* kd = st.k.data() + (size_t)il * n * st.k_row_bytes;
        const size_t vb = kv.v_row_bytes(il);
        for (int i = 0; i < n; i++) {
            memcpy(kv.k_row(il, cells[i]), kd + (size_t)i * st.k_row_bytes, st.k_row_bytes);
            memcpy(kv.v_row(il, cells[i]), vd + (size_t)i * vb, vb);
        }
        vd += (size_t)n * vb;
    }
    return true;
}

namespace {

constexpr char kSeqMagicV5[8] = {'B', 'E', 'E', 'S', 'E', 'Q', '0', '5'};  // + recurrent state
constexpr char kSeqMagic[8] = {'B', 'E', 'E', 'S', 'E', 'Q', '0', '4'};
constexpr char kSeqMagicV3[8] = {'B', 'E', 'E', 'S', 'E', 'Q', '0', '3'};  // no LoRA scales
constexpr char kSeqMagicV2[8] = {'B', 'E', 'E', 'S', 'E', 'Q', '0', '2'};  // no per-layer V layouts
constexpr char kSeqMagicV1[8] = {'B', 'E', 'E', 'S', 'E', 'Q', '0', '1'};  // no rotation fields either

template <typename T>
void put(std::string& out, T v) {
    out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

void put_bytes(std::string& out, const void* p, size_t n) { out.append(static_cast<const char*>(p), n); }

// Bounds-checked reads from a loaded file; every failure names the file and the field.
struct Reader {
    const std::string& path;
    const std::string& data;
    size_t at = 0;
    void take(void* dst, size_t n, const char* field) {
        if (n > data.size() - at)
            fail("slot file '%s': truncated in %s (byte %zu of %zu)", path.c_str(), field, at, data.size());
        memcpy(dst, data.data() + at, n);
        at += n;
    }
    template <typename T>
    T get(const char* field) {
        T v;
        take(&v, sizeof v, field);
        return v;
    }
};

}  // namespace

size_t seq_file_write(const std::string& path, const SeqFile& f) {
    const SeqState& st = f.state;
    std::string out;
    out.reserve(64 + f.model.size() + f.tokens.size() * 4 + st.bytes());
    const bool v5 = !st.recurrent.empty();
    put_bytes(out, v5 ? kSeqMagicV5 : kSeqMagic, sizeof kSeqMagic);
    put(out, (uint32_t)f.model.size());
    put_bytes(out, f.model.data(), f.model.size());
    put(out, (int32_t)st.n_layer);
    put(out, (uint32_t)st.type_k);
    put(out, (uint32_t)st.type_v);
    put(out, (uint64_t)st.k_row_bytes);
    put(out, (uint64_t)st.v_row_bytes);
    put(out, (int32_t)st.rot_k);
    put(out, (int32_t)st.rot_v);
    put(out, (uint32_t)st.v_layers.size());
    for (const SeqState::VLayer& l : st.v_layers) {
        put(out, (uint32_t)l.type);
        put(out, (uint64_t)l.row_bytes);
        put(out, (int32_t)l.rot);
    }
    put(out, (uint32_t)st.lora.size());
    put_bytes(out, st.lora.data(), st.lora.size() * sizeof(float));
    put(out, (uint32_t)f.tokens.size());
    put(out, (uint32_t)st.pos.size());
    if (v5) put(out, (uint64_t)st.recurrent.size());
    put_bytes(out, f.tokens.data(), f.tokens.size() * sizeof(int32_t));
    put_bytes(out, st.pos.data(), st.pos.size() * sizeof(int32_t));
    put_bytes(out, st.k.data(), st.k.size());
    put_bytes(out, st.v.data(), st.v.size());
    put_bytes(out, st.recurrent.data(), st.recurrent.size() * sizeof(float));
    put(out, (uint64_t)XXH3_64bits(out.data(), out.size()));
    // O_NOFOLLOW: a symlink planted in the slot folder is refused, never written through.
    const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0)
        fail("cannot create slot file '%s': %s", path.c_str(),
             errno == ELOOP ? "it is a symbolic link" : strerror(errno));
    size_t done = 0;
    while (done < out.size()) {
        const ssize_t n = ::write(fd, out.data() + done, out.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            const int err = errno;
            close(fd);
            fail("cannot write slot file '%s' (%zu bytes): %s", path.c_str(), out.size(), strerror(err));
        }
        done += (size_t)n;
    }
    if (close(fd) != 0) fail("cannot write slot file '%s' (%zu bytes): %s", path.c_str(), out.size(), strerror(errno));
    return out.size();
}

SeqFile seq_file_read(const std::string& path, size_t* n_read) {
    // O_NOFOLLOW and a regular file only: no symlink out of the slot folder, no FIFO or device to hang on.
    const int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        fail("cannot open slot file '%s': %s", path.c_str(),
             errno == ELOOP ? "it is a symbolic link" : strerror(errno));
    struct stat sb {};
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        fail("slot file '%s' is not a regular file", path.c_str());
    }
    std::string data((size_t)sb.st_size, '\0');
    size_t got = 0;
    while (got < data.size()) {
        const ssize_t n = ::read(fd, data.data() + got, data.size() - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got += (size_t)n;
    }
    close(fd);
    data.resize(got);
    const auto magic = [&](const char* m) { return data.size() >= 8 && memcmp(data.data(), m, 8) == 0; };
    const bool v1 = magic(kSeqMagicV1), v2 = magic(kSeqMagicV2), v3 = magic(kSeqMagicV3), v5 = magic(kSeqMagicV5);
    if (data.size() < sizeof kSeqMagic + 8 || (!v1 && !v2 && !v3 && !v5 && !magic(kSeqMagic)))
        fail("slot file '%s' is not a Bee slot file (no BEESEQ05, BEESEQ04, BEESEQ03, BEESEQ02 or BEESEQ01 header)",
             path.c_str());
    uint64_t sum;
    memcpy(&sum, data.data() + data.size() - 8, 8);
    if (sum != XXH3_64bits(data.data(), data.size() - 8))
        fail("slot file '%s' is corrupted (checksum mismatch over %zu bytes)", path.c_str(), data.size());
    const std::string body = data.substr(0, data.size() - 8);
    Reader r{path, body, sizeof kSeqMagic};
    SeqFile f;
    const uint32_t n_model = r.get<uint32_t>("model name length");
    if (n_model > body.size() - r.at)  // checked before allocating: a damaged length must not ask for 4 GiB
        fail("slot file '%s': model name length %u but %zu bytes follow", path.c_str(), n_model, body.size() - r.at);
    f.model.resize(n_model);
    r.take(f.model.data(), f.model.size(), "model name");
    SeqState& st = f.state;
    st.n_layer = r.get<int32_t>("layer count");
    st.type_k = (GgmlType)r.get<uint32_t>("K type");
    st.type_v = (GgmlType)r.get<uint32_t>("V type");
    st.k_row_bytes = r.get<uint64_t>("K row bytes");
    st.v_row_bytes = r.get<uint64_t>("V row bytes");
    if (!v1) {
        st.rot_k = r.get<int32_t>("K rotation group");
        st.rot_v = r.get<int32_t>("V rotation group");
    }
    if (!v1 && !v2) {
        const uint32_t n_v = r.get<uint32_t>("per-layer V count");
        if (n_v != 0 && (int64_t)n_v != (int64_t)st.n_layer)
            fail("slot file '%s': %u per-layer V layouts for %d layers", path.c_str(), n_v, st.n_layer);
        for (uint32_t il = 0; il < n_v; il++) {
            SeqState::VLayer l;
            l.type = (GgmlType)r.get<uint32_t>("per-layer V type");
            l.row_bytes = r.get<uint64_t>("per-layer V row bytes");
            l.rot = r.get<int32_t>("per-layer V rotation group");
            st.v_layers.push_back(l);
        }
    }
    if (!v1 && !v2 && !v3) {
        const uint32_t n_lora = r.get<uint32_t>("LoRA scale count");
        if (n_lora > (body.size() - r.at) / sizeof(float))
            fail("slot file '%s': %u LoRA scales but %zu bytes follow", path.c_str(), n_lora, body.size() - r.at);
        st.lora.resize(n_lora);
        r.take(st.lora.data(), n_lora * sizeof(float), "LoRA scales");
    }
    const uint32_t n_tokens = r.get<uint32_t>("token count"), n_cells = r.get<uint32_t>("cell count");
    const uint64_t n_rec = v5 ? r.get<uint64_t>("recurrent value count") : 0;
    // Sizes are checked against what is left before anything is allocated (a damaged header must not
    // ask for gigabytes).
    const uint64_t left_all = body.size() - r.at;
    if (n_rec > left_all / sizeof(float))
        fail("slot file '%s': %llu recurrent values but %zu bytes follow", path.c_str(), (unsigned long long)n_rec,
             (size_t)left_all);
    const uint64_t left = left_all - n_rec * sizeof(float);
    bool sizes_ok = st.n_layer >= 0 && st.k_row_bytes <= left && st.v_row_bytes <= left;
    uint64_t cell = 0;  // K and V bytes of one cell over all layers
    if (sizes_ok && st.n_layer > 0 && st.v_layers.empty()) {
        sizes_ok = st.k_row_bytes + st.v_row_bytes <= left / (uint64_t)st.n_layer;
        cell = (uint64_t)st.n_layer * (st.k_row_bytes + st.v_row_bytes);
    }
    for (const SeqState::VLayer& l : st.v_layers) {
        if (!sizes_ok) break;
        cell += st.k_row_bytes + l.row_bytes;
        sizes_ok = l.row_bytes <= left && cell <= left;
    }
    uint64_t need = ((uint64_t)n_tokens + n_cells) * sizeof(int32_t);
    if (sizes_ok && n_cells > 0) sizes_ok = cell <= left / n_cells;
    if (sizes_ok) need += (uint64_t)n_cells * cell;
    if (!sizes_ok || need != left)
        fail(
            "slot file '%s': the header describes %u tokens and %u cells of %d layers (%zu+%zu bytes per row%s) but "
            "%zu bytes follow",
            path.c_str(), n_tokens, n_cells, st.n_layer, st.k_row_bytes, st.v_row_bytes,
            st.v_layers.empty() ? "" : ", V per layer", (size_t)left);
    f.tokens.resize(n_tokens);
    r.take(f.tokens.data(), n_tokens * sizeof(int32_t), "tokens");
    st.pos.resize(n_cells);
    r.take(st.pos.data(), n_cells * sizeof(int32_t), "positions");
    st.k.resize((size_t)st.n_layer * n_cells * st.k_row_bytes);
    r.take(st.k.data(), st.k.size(), "K rows");
    st.v.resize((size_t)(n_cells * (cell - (uint64_t)st.n_layer * st.k_row_bytes)));
    r.take(st.v.data(), st.v.size(), "V rows");
    st.recurrent.resize((size_t)n_rec);
    r.take(st.recurrent.data(), st.recurrent.size() * sizeof(float), "recurrent state");
    *n_read = data.size();
    return f;
}

}  // namespace bee
