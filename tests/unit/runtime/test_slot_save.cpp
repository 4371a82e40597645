// tests/unit/runtime/test_slot_save: slot save / erase / restore through files for every KV storage
// type (bytes and tokens come back exactly), and every way a restore must be refused — another KV type,
// another model, a file too large for the slot, truncated, corrupted or foreign files — with an Error
// that leaves the slot as it was.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "base/error.h"
#include "kv/kv_state.h"
#include "runtime/slot_save.h"

namespace fs = std::filesystem;
using namespace bee;
using namespace bee::runtime;

namespace {

KvCacheParams params_for(GgmlType tk, GgmlType tv) {
    KvCacheParams p;
    p.n_layer = 2;
    p.n_cells = 32;
    p.n_head_kv = 2;
    p.head_dim_k = p.head_dim_v = 64;
    p.n_embd_k = p.n_embd_v = 128;
    p.type_k = tk;
    p.type_v = tv;
    return p;
}

// n cells at positions [0, n) in `seq`, each row a distinct pattern; returns their tokens.
std::vector<int32_t> fill(KvCache& kv, int seq, int n) {
    std::vector<int32_t> pos(n), seqs(n, seq), cells(n), tokens(n);
    for (int i = 0; i < n; i++) pos[i] = i, tokens[i] = 1000 + 7 * i;
    EXPECT_TRUE(kv.alloc(n, pos.data(), seqs.data(), cells.data()));
    std::vector<float> row(128);
    for (int il = 0; il < 2; il++)
        for (int i = 0; i < n; i++) {
            for (int j = 0; j < 128; j++) row[j] = 0.01f * (float)((il * 131 + i * 37 + j * 11) % 200) - 1.0f;
            kv.write_k(il, cells[i], row.data());
            for (float& x : row) x = 0.5f - x;
            kv.write_v(il, cells[i], row.data());
        }
    return tokens;
}

std::vector<uint8_t> seq_bytes(const KvCache& kv, int seq) {
    SeqState st = seq_state_export(kv, seq);
    std::vector<uint8_t> out = st.k;
    out.insert(out.end(), st.v.begin(), st.v.end());
    for (int32_t p : st.pos) out.push_back((uint8_t)p);
    return out;
}

struct TempDir {
    fs::path dir = fs::temp_directory_path() / ("bee-slot-test-" + std::to_string(::getpid()));
    TempDir() { fs::create_directories(dir); }
    ~TempDir() { fs::remove_all(dir); }
    std::string file(const char* name) const { return (dir / name).string(); }
};

const char* kTag = "llama 2 layers (test), vocab 2000";

}  // namespace

TEST(SlotSave, RoundTripEveryKvType) {
    TempDir tmp;
    const char* names[] = {"f32",       "f16",       "bf16",       "q8_0",      "q4_0",   "q4_1",
                           "q5_0",      "q5_1",      "turbo2",     "turbo3",    "turbo4", "turbo2_64",
                           "turbo3_64", "turbo4_64", "turbo2_tcq", "turbo3_tcq"};
    for (const char* name : names) {
        SCOPED_TRACE(name);
        const GgmlType t = kv_type_from_name(name, "test");
        KvCache kv(params_for(GgmlType::Q8_0, t));  // asymmetric: K and V types both recorded
        SeqMemory mem_kv(kv, CutPolicy::any);       // the slot actions take the engine's sequence memory
        std::vector<int32_t> cache = fill(kv, 1, 9);
        const std::vector<int32_t> tokens = cache;
        const std::vector<uint8_t> before = seq_bytes(kv, 1);
        SlotActionResult s = slot_save(mem_kv, 1, cache, tmp.file("a.bin"), kTag);
        EXPECT_EQ(s.n_tokens, 9);
        EXPECT_EQ(s.n_bytes, fs::file_size(tmp.file("a.bin")));
        SlotActionResult e = slot_erase(mem_kv, 1, cache);
        EXPECT_EQ(e.n_tokens, 9);
        EXPECT_TRUE(cache.empty());
        EXPECT_EQ(kv.seq_n_cells(1), 0);
        fill(kv, 0, 3);  // other cells in use: the restored ones land elsewhere
        SlotActionResult r = slot_restore(mem_kv, 1, cache, 16, tmp.file("a.bin"), kTag);
        EXPECT_EQ(r.n_tokens, 9);
        EXPECT_EQ(r.n_bytes, s.n_bytes);
        EXPECT_EQ(cache, tokens);
        EXPECT_EQ(seq_bytes(kv, 1), before);
    }
}

TEST(SlotSave, RefusesMismatchesAndLeavesTheSlot) {
    TempDir tmp;
    KvCache q8(params_for(GgmlType::Q8_0, GgmlType::Q8_0));
    SeqMemory mem_q8(q8, CutPolicy::any);  // the slot actions take the engine's sequence memory
    std::vector<int32_t> cache = fill(q8, 0, 6);
    slot_save(mem_q8, 0, cache, tmp.file("q8.bin"), kTag);

    KvCache f16(params_for(GgmlType::F16, GgmlType::F16));
    SeqMemory mem_f16(f16, CutPolicy::any);  // the slot actions take the engine's sequence memory
    std::vector<int32_t> mine = fill(f16, 0, 4);
    const std::vector<int32_t> mine0 = mine;
    const std::vector<uint8_t> bytes0 = seq_bytes(f16, 0);
    auto expect_refused = [&](const std::string& path, int32_t n_ctx, const char* words) {
        try {
            slot_restore(mem_f16, 0, mine, n_ctx, path, kTag);
            ADD_FAILURE() << "restore of " << path << " was accepted";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
        }
        EXPECT_EQ(mine, mine0);
        EXPECT_EQ(seq_bytes(f16, 0), bytes0);
    };
    expect_refused(tmp.file("q8.bin"), 16, "q8_0/q8_0");  // another KV type, named in the message
    expect_refused(tmp.file("missing.bin"), 16, "cannot open");

    slot_save(mem_f16, 0, mine, tmp.file("f16.bin"), "another model, vocab 5");
    expect_refused(tmp.file("f16.bin"), 16, "another model");
    slot_save(mem_f16, 0, mine, tmp.file("f16.bin"), kTag);
    expect_refused(tmp.file("f16.bin"), 4, "slot's context is 4");

    // Every truncation, a flipped byte, and a file that is not a slot file at all.
    std::ifstream in(tmp.file("f16.bin"), std::ios::binary);
    const std::string good((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto write = [&](const std::string& data) {
        std::ofstream(tmp.file("bad.bin"), std::ios::binary | std::ios::trunc) << data;
        return tmp.file("bad.bin");
    };
    for (size_t n = 0; n < good.size(); n += 1 + n / 8) expect_refused(write(good.substr(0, n)), 16, "slot file");
    std::string flipped = good;
    flipped[flipped.size() / 2] ^= 0x40;
    expect_refused(write(flipped), 16, "corrupted");
    expect_refused(write("GGUF and then some bytes that are not a slot file"), 16, "not a Bee slot file");
    // And the good file still restores.
    EXPECT_EQ(slot_restore(mem_f16, 0, mine, 16, tmp.file("f16.bin"), kTag).n_tokens, 4);
}

TEST(SlotSave, FilenameRules) {
    for (const char* ok : {"x.bin", "slot-0.bin", "a b.bin", ".hidden", "日本.bin"})
        EXPECT_TRUE(valid_slot_filename(ok)) << ok;
    for (const char* bad :
         {"", ".", "..", "../x.bin", "a/b.bin", "a\\b.bin", "x..bin", "c:x", " x.bin", "x.bin ", "x\n.bin"})
        EXPECT_FALSE(valid_slot_filename(bad)) << bad;
    EXPECT_FALSE(valid_slot_filename(std::string(256, 'a')));
}
