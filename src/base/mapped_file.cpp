// base/mapped_file: mmap wrapper.
#include "base/mapped_file.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/error.h"

namespace bee {

MappedFile::MappedFile(const std::string& path) : path_(path) {
    int fd = open(path.c_str(), O_RDONLY);
    if (fd < 0) fail("%s: cannot open: %s", path.c_str(), strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        fail("%s: cannot stat: %s", path.c_str(), strerror(e));
    }
    if (S_ISDIR(st.st_mode)) {
        close(fd);
        fail("%s: is a directory, expected a file", path.c_str());
    }
    size_ = (size_t)st.st_size;
    if (size_ > 0) {
        void* p = mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            int e = errno;
            close(fd);
            fail("%s: cannot mmap %zu bytes: %s", path.c_str(), size_, strerror(e));
        }
        data_ = (const uint8_t*)p;
    }
    close(fd);
}

MappedFile::~MappedFile() {
    if (data_) munmap((void*)data_, size_);
}

MappedFile::MappedFile(MappedFile&& o) noexcept : path_(std::move(o.path_)), data_(o.data_), size_(o.size_) {
    o.data_ = nullptr;
    o.size_ = 0;
}

MappedFile& MappedFile::operator=(MappedFile&& o) noexcept {
    if (this != &o) {
        if (data_) munmap((void*)data_, size_);
        path_ = std::move(o.path_);
        data_ = o.data_;
        size_ = o.size_;
        o.data_ = nullptr;
        o.size_ = 0;
    }
    return *this;
}

std::string read_file(const std::string& path) {
    MappedFile m(path);
    return std::string((const char*)m.data(), m.size());
}

}  // namespace bee
