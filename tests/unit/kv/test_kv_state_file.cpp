// tests/unit/kv/test_kv_state_file: crafted and planted slot files — lengths checked before allocating,
// symlinks refused on write and read, only regular files read, LoRA scales kept.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <string>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "base/error.h"
#include "kv/kv_state.h"

namespace bee {
namespace {

std::string error_of(const std::string& path) {
    size_t n = 0;
    try {
        seq_file_read(path, &n);
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

// A file with a valid checksum whose header claims a model name of almost 4 GiB.
TEST(KvStateFile, HugeLengthRefusedBeforeAllocating) {
    std::string img = "BEESEQ03";
    const uint32_t n_model = 0xFFFFFFF0u;
    img.append(reinterpret_cast<const char*>(&n_model), 4);
    img.append(64, '\0');
    const uint64_t sum = XXH3_64bits(img.data(), img.size());
    img.append(reinterpret_cast<const char*>(&sum), 8);
    const std::string path = ::testing::TempDir() + "kv_state_huge.bin";
    std::ofstream(path, std::ios::binary | std::ios::trunc).write(img.data(), (std::streamsize)img.size());
    const std::string msg = error_of(path);
    EXPECT_NE(msg.find("model name length 4294967280 but 64 bytes follow"), std::string::npos) << msg;
    unlink(path.c_str());
}

TEST(KvStateFile, SymlinksAndSpecialFilesRefused) {
    const std::string dir = ::testing::TempDir();
    const std::string target = dir + "kv_state_target.bin", link = dir + "kv_state_link.bin";
    std::ofstream(target) << "precious";
    unlink(link.c_str());
    ASSERT_EQ(symlink(target.c_str(), link.c_str()), 0);
    SeqFile f;
    f.model = "m";
    try {
        seq_file_write(link, f);
        ADD_FAILURE() << "wrote through a symlink";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("symbolic link"), std::string::npos) << e.what();
    }
    std::string kept;
    std::ifstream(target) >> kept;
    EXPECT_EQ(kept, "precious");
    EXPECT_NE(error_of(link).find("symbolic link"), std::string::npos);
    const std::string fifo = dir + "kv_state_fifo.bin";
    unlink(fifo.c_str());
    ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
    EXPECT_NE(error_of(fifo).find("not a regular file"), std::string::npos);
    for (const std::string& p : {target, link, fifo}) unlink(p.c_str());
}

// The LoRA scales a state was computed under travel with it (BEESEQ04).
TEST(KvStateFile, LoraScalesRoundTrip) {
    SeqFile f;
    f.model = "m";
    f.state.lora = {0.5f, 0.0f, -1.25f};
    const std::string path = ::testing::TempDir() + "kv_state_lora.bin";
    seq_file_write(path, f);
    size_t n = 0;
    EXPECT_EQ(seq_file_read(path, &n).state.lora, f.state.lora);
    unlink(path.c_str());
}

}  // namespace
}  // namespace bee
