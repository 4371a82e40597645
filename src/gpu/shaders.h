// gpu/shaders: the SPIR-V modules compiled from gpu/shaders/*.comp at build time (cmake/gpu.cmake).
#pragma once
#include <cstddef>

namespace bee::gpu {

struct ShaderBlob {
    const char* name;           // file name without .comp, e.g. "matmul_q4_0"
    const unsigned char* code;  // SPIR-V words, little endian, 4-byte aligned
    size_t size;                // bytes
};

// Defined in the generated shaders_spv.cpp.
extern const ShaderBlob kShaders[];
extern const int kShaderCount;

// The module called `name`, or nullptr.
const ShaderBlob* find_shader(const char* name);

}  // namespace bee::gpu
