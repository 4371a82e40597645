// base/mapped_file: a read-only memory map of a whole file (moves, unmaps on destruction), and read_file.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace bee {

class MappedFile {
public:
    MappedFile() = default;
    // Throws Error naming the path and the OS reason if the file cannot be opened or mapped.
    explicit MappedFile(const std::string& path);
    ~MappedFile();
    MappedFile(MappedFile&& o) noexcept;
    MappedFile& operator=(MappedFile&& o) noexcept;
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;

    const uint8_t* data() const { return data_; }
    size_t size() const { return size_; }
    const std::string& path() const { return path_; }

private:
    std::string path_;
    const uint8_t* data_ = nullptr;
    size_t size_ = 0;
};

// The whole file as bytes; throws Error naming the path and the OS reason if it cannot be read.
std::string read_file(const std::string& path);

}  // namespace bee
