// gpu/command_cache: the LRU of recorded command lists.
#include "gpu/command_cache.h"

#include <chrono>

namespace bee::gpu {

CommandCache::CommandCache(Device& dev, int capacity, int max_dispatches)
    : dev_(dev), capacity_(capacity < 0 ? 0 : capacity), max_dispatches_(max_dispatches) {}

CommandList& CommandCache::get(const std::vector<int64_t>& key, const std::function<void(CommandList&)>& record) {
    for (auto it = entries_.begin(); it != entries_.end(); ++it)
        if (it->key == key) {
            ++hits_;
            entries_.splice(entries_.begin(), entries_, it);
            return *entries_.front().list;
        }
    ++misses_;
    // Recorded into the spare list: a recording that throws costs no kept list.
    std::unique_ptr<CommandList> list =
        spare_ ? std::move(spare_) : std::make_unique<CommandList>(dev_, max_dispatches_, 1);
    const auto t0 = std::chrono::steady_clock::now();
    try {
        list->begin();
        record(*list);
        list->end();
    } catch (...) {
        spare_ = std::move(list);  // begin() resets it for the next recording
        throw;
    }
    record_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (capacity_ == 0) {
        spare_ = std::move(list);
        return *spare_;
    }
    if ((int)entries_.size() >= capacity_) {  // the least recently used one becomes the spare
        spare_ = std::move(entries_.back().list);
        entries_.pop_back();
    }
    entries_.push_front({key, std::move(list)});
    return *entries_.front().list;
}

void CommandCache::clear() {
    if (!spare_ && !entries_.empty()) spare_ = std::move(entries_.front().list);
    entries_.clear();
}

}  // namespace bee::gpu
