// gpu/command_cache: command lists recorded once per key and resubmitted, least recently used first out.
#pragma once
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <vector>

#include "gpu/command_list.h"

namespace bee::gpu {

class CommandCache {
public:
    // Keeps up to `capacity` recorded lists of `max_dispatches` dispatches each; capacity 0 keeps none:
    // every get() records again into one list (the per-step recording path).
    CommandCache(Device& dev, int capacity, int max_dispatches);
    CommandCache(const CommandCache&) = delete;
    CommandCache& operator=(const CommandCache&) = delete;

    // The list recorded under `key`. On a miss `record` records it (begin() and end() are done here) into
    // a spare list, and the least recently used list becomes the spare when the cache is full (capacity + 1
    // lists at most). The key must say everything the
    // recording depends on (shapes, bindings): a hit is resubmitted as it was recorded. When `record`
    // throws, nothing is kept under the key.
    CommandList& get(const std::vector<int64_t>& key, const std::function<void(CommandList&)>& record);
    // Drops every recording (call when a buffer a recording binds is freed or replaced).
    void clear();

    int size() const { return (int)entries_.size(); }
    uint64_t hits() const { return hits_; }
    uint64_t misses() const { return misses_; }
    double record_seconds() const { return record_s_; }  // host time spent recording, all get() calls

private:
    struct Entry {
        std::vector<int64_t> key;
        std::unique_ptr<CommandList> list;
    };
    Device& dev_;
    int capacity_, max_dispatches_;
    std::list<Entry> entries_;  // most recently used first
    std::unique_ptr<CommandList> spare_;
    uint64_t hits_ = 0, misses_ = 0;
    double record_s_ = 0;
};

}  // namespace bee::gpu
