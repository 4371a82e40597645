// tests/fuzz/fuzz_gguf: libFuzzer target for the GGUF reader; any input must parse or throw bee::Error, never crash.
#include <cstddef>
#include <cstdint>

#include "base/error.h"
#include "gguf/gguf.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        bee::GgufFile f = bee::GgufFile::parse(data, size, "fuzz.gguf");
        // Touch the first and last byte of every tensor so the sanitizer checks the ranges.
        volatile uint8_t sink = 0;
        for (const bee::GgufTensor& t : f.tensors())
            if (t.nbytes > 0) sink = sink + t.data[0] + t.data[t.nbytes - 1];
        // The getters must report wrong types as Error too.
        for (const auto& kv : f.metadata()) {
            try {
                f.get_int(kv.first);
            } catch (const bee::Error&) {}
            try {
                f.get_float_array(kv.first);
            } catch (const bee::Error&) {}
        }
    } catch (const bee::Error&) {}
    return 0;
}
