// spec/drafters/ngram_cache_file: n-gram statistics updates and the lookup-cache file format.
#include <algorithm>
#include <cstdio>
#include <memory>

#include "base/error.h"
#include "spec/drafters/ngram_cache.h"

namespace bee {

NgramKey ngram_key(const int32_t* tokens, int n) {
    NgramKey k;
    k.fill(-1);
    for (int i = 0; i < n; i++) k[i] = tokens[i];
    return k;
}

void ngram_cache_update(NgramCache& c, const std::vector<int32_t>& tokens, int from) {
    for (int i = std::max(from, 1); i < (int)tokens.size(); i++)
        for (int n = 1; n <= kNgramCacheMax && n <= i; n++) c[ngram_key(&tokens[i - n], n)][tokens[i]]++;
}

void ngram_cache_merge(NgramCache& into, const NgramCache& from) {
    for (const auto& [key, hist] : from) {
        NgramHistogram& h = into[key];
        for (const auto& [tok, count] : hist) h[tok] += count;
    }
}

NgramCache ngram_cache_load(const std::string& path) {
    std::unique_ptr<FILE, int (*)(FILE*)> f(fopen(path.c_str(), "rb"), fclose);
    if (!f) fail("lookup cache '%s': cannot open it (create it with -lcd, or check the path)", path.c_str());
    NgramCache c;
    long offset = 0;
    for (;;) {
        int32_t rec[kNgramCacheMax + 1];
        const size_t got = fread(rec, 1, sizeof(rec), f.get());  // bytes, so a partial record is seen
        if (got == 0 && feof(f.get())) break;
        if (got != sizeof(rec) || rec[kNgramCacheMax] < 0 || rec[kNgramCacheMax] > (1 << 24))
            fail("lookup cache '%s': truncated or malformed record at byte %ld (not a lookup-cache file?)",
                 path.c_str(), offset);
        NgramKey key;
        for (int i = 0; i < kNgramCacheMax; i++) key[i] = rec[i];
        const int32_t n = rec[kNgramCacheMax];
        offset += (long)sizeof(rec);
        NgramHistogram& h = c[key];
        for (int32_t i = 0; i < n; i++) {
            int32_t e[2];
            if (fread(e, 1, sizeof(e), f.get()) != sizeof(e) || e[1] < 0)
                fail("lookup cache '%s': truncated or malformed entry at byte %ld", path.c_str(), offset);
            h[e[0]] += e[1];
            offset += (long)sizeof(e);
        }
    }
    return c;
}

void ngram_cache_save(const NgramCache& c, const std::string& path) {
    std::unique_ptr<FILE, int (*)(FILE*)> f(fopen(path.c_str(), "wb"), fclose);
    if (!f) fail("lookup cache '%s': cannot write it", path.c_str());
    for (const auto& [key, hist] : c) {
        const int32_t n = (int32_t)hist.size();
        fwrite(key.data(), sizeof(int32_t), kNgramCacheMax, f.get());
        fwrite(&n, sizeof(n), 1, f.get());
        for (const auto& [tok, count] : hist) {
            const int32_t e[2] = {tok, count};
            fwrite(e, sizeof(int32_t), 2, f.get());
        }
    }
    if (ferror(f.get())) fail("lookup cache '%s': write failed", path.c_str());
}

}  // namespace bee
