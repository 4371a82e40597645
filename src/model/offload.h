// model/offload: the last layers of a model and its output head on a Vulkan device (-ngl): their
// weights uploaded once, their K/V cells in device memory, the residual stream crossing to and from the
// host only at the boundary. Engine::decode runs the first layers on the CPU and hands the rest here.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kv/kv_cache.h"

namespace bee {

class Model;

struct OffloadParams {
    int n_gpu_layers = 0;  // the last N layers on the device; N >= n_layer: every layer and the output head
    std::string device;    // gpu::Device selector: "" the best device, an index of --list-devices, or a name part
    // Command lists kept recorded per shape (layers, rows, input spans) and resubmitted, LRU; 0 records
    // every submission anew (the environment's BEE_GPU_LISTS=N overrides it, for comparisons).
    int n_lists = 16;
};

// Whether this build has the Vulkan layer (BEE_VULKAN); without it create() always throws.
bool offload_built();

// One ubatch as the device sees it (Engine::build_visible's lists).
struct OffloadStep {
    int n_rows = 0;
    const int32_t* pos = nullptr;                               // [n_rows]
    const int32_t* cells = nullptr;                             // [n_rows] KV cell of each row
    const std::vector<int32_t>* const* visible_full = nullptr;  // [n_rows] cells, ascending position
    const std::vector<int32_t>* const* visible_swa = nullptr;   // [n_rows], read for sliding-window layers
};

class Offload {
public:
    // Opens the device and uploads the weights of layers [n_layer - n_gpu_layers, n_layer) (and of the head
    // when n_gpu_layers >= n_layer); allocates their K/V for kv's cells. Returns nullptr with the reason in
    // *no_device when the build has no Vulkan or no device opens (p.device empty: the caller runs on the
    // CPU). Throws Error saying why when p.device names no device, or something is not supported on the
    // device yet: the architecture (ArchDef::block), a weight type without a device matmul, a KV type
    // other than f16, heads of unequal K/V width or wider than 256.
    static std::unique_ptr<Offload> create(const Model& model, const KvCache& kv, int n_ubatch, const OffloadParams& p,
                                           std::string* no_device);
    virtual ~Offload() = default;

    virtual int first_layer() const = 0;  // layers [first_layer(), n_layer) run here
    virtual bool has_head() const = 0;    // the output norm and head run here
    // "layers 10..29 and the output head on NVIDIA H200 (83.2 MiB of weights, 45.0 MiB of KV)"
    virtual std::string describe() const = 0;

    // Takes one ubatch: x (n_rows, n_embd) is the residual stream entering first_layer().
    virtual void begin(const OffloadStep& s, const float* x) = 0;
    // Runs layers [l0, l1) of the ubatch on the device (first_layer() <= l0 < l1 <= n_layer), in order.
    virtual void run_layers(int l0, int l1) = 0;
    // The residual stream after the last layer run, back into x (n_rows, n_embd).
    virtual void download_x(float* x) = 0;
    // The output norm and head for the ubatch rows `rows` (after every layer): logits (rows, n_vocab),
    // before the final soft-cap. Only when has_head().
    virtual void head(const std::vector<int32_t>& rows, float* logits) = 0;

    // The device K/V of the offloaded layers, byte for byte into kv's rows of those layers (every cell), and
    // back. The host rows of offloaded layers hold nothing current otherwise: sequence memory pulls before
    // it reads or rewrites rows (save, load, K shift) and pushes after it rewrote them.
    virtual void pull_kv(KvCache& kv) = 0;
    virtual void push_kv(const KvCache& kv) = 0;

    // Submissions so far: recorded anew, and resubmitted as recorded (OffloadParams::n_lists); host
    // seconds spent recording.
    struct ListStats {
        uint64_t recorded = 0, reused = 0;
        double record_s = 0;
    };
    virtual ListStats list_stats() const = 0;
};

}  // namespace bee
