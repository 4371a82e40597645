// model/engine: batch validation, KV cell allocation, attention visibility lists, the layer loop and
// the output head.
#include "model/engine.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/error.h"
#include "base/log.h"
#include "kernels/kernels.h"
#include "quant/quant.h"
#include "quant/turbo.h"

namespace bee {

Engine::Engine(const Model& model, const EngineParams& params) : model_(model), params_(params) {
    const HParams& hp = model.hparams();
    if (params_.n_ctx <= 0) params_.n_ctx = hp.n_ctx_train;
    if (params_.n_ctx > hp.n_ctx_train)
        BEE_LOG_WARN("context %d is larger than the model's training context %d", params_.n_ctx, hp.n_ctx_train);
    if (params_.n_ubatch <= 0) fail("n_ubatch must be at least 1 (got %d)", params_.n_ubatch);
    params_.n_ubatch = std::min(params_.n_ubatch, params_.n_ctx);
    if (params_.n_seq_max < 1 || params_.n_seq_max > kMaxSequences)
        fail("number of sequences must be 1..%d (got %d)", kMaxSequences, params_.n_seq_max);
    if (params_.n_threads <= 0) params_.n_threads = default_thread_count();
    pool_ = std::make_unique<ThreadPool>(params_.n_threads);
    KvCacheParams kp;
    kp.n_layer = hp.n_kv_layers();
    kp.n_cells = params_.n_ctx;
    kp.n_partitions = params_.kv_split ? std::min(params_.n_seq_max, params_.n_ctx) : 1;
    kp.n_embd_k = (int64_t)hp.n_head_kv * hp.head_dim;
    kp.n_embd_v = (int64_t)hp.n_head_kv * hp.head_dim_v;
    kp.n_head_kv = hp.n_head_kv;
    kp.head_dim_k = hp.head_dim;
    kp.head_dim_v = hp.head_dim_v;
    check_kv_types(hp);
    kp.type_k = params_.type_k;
    kp.type_v = params_.type_v;
    kp.rotate = params_.kv_rotate;
    std::string why;  // boundary V (kv/kv_layers.h): some layers keep q8_0 V
    kp.type_v_layer = kv_v_layer_types(params_.type_v, kp.n_layer, params_.kv_boundary_layers, &why);
    kv_ = std::make_unique<KvCache>(kp);
    if (hp.n_recurrent_layers() > 0) {
        rs_ = std::make_unique<RecurrentState>(hp, model.weights(), params_.n_seq_max, params_.recurrent_keep, *pool_);
        rs_->set_checkpoint_limits(params_.ctx_checkpoints, params_.checkpoint_every_n);
        BEE_LOG_INFO(
            "recurrent state: %d layers, %.1f MiB per sequence (f32), up to %.1f MiB more per sequence to cut "
            "inside its last %d batch rows (speculative rollback), and up to %d checkpoints of %.1f MiB each per "
            "sequence (--ctx-checkpoints)",
            rs_->n_layers(), rs_->state_bytes() / 1048576.0, rs_->rollback_bytes() / 1048576.0, rs_->n_keep(),
            rs_->max_checkpoints(), rs_->state_bytes() / 1048576.0);
    }
    mem_ = std::make_unique<SeqMemory>(*kv_, params_.cut_policy, rs_.get());
    load_lora();
    if (!kp.type_v_layer.empty()) {
        std::string layers;
        for (int il : kv_->v_promoted_layers())
            layers += strfmt("%s%d (%s)", layers.empty() ? "" : ", ", il, ggml_type_name(kv_->v_type(il)));
        BEE_LOG_INFO("KV cache: V of layers %s instead of %s: %s", layers.c_str(), ggml_type_name(kp.type_v),
                     why.c_str());
    }
    BEE_LOG_INFO("KV cache: K %s, V %s: %zu bytes per token, %.1f MiB for %d cells", ggml_type_name(kp.type_k),
                 ggml_type_name(kp.type_v), kv_->bytes_per_token(), kv_->total_bytes() / 1048576.0, kp.n_cells);
    int v_rot = 0;  // the largest rotation group of any layer's V (promoted q8_0 layers are rotated too)
    for (int il = 0; il < kp.n_layer; il++) v_rot = std::max(v_rot, kv_->v_rot_group(il));
    if (kv_->k_rot_group() > 0 || v_rot > 0)
        BEE_LOG_INFO("KV cache: %s%s%s stored Hadamard-rotated in groups of %d (--kv-rotate off disables)",
                     kv_->k_rot_group() > 0 ? "K" : "", kv_->k_rot_group() > 0 && v_rot > 0 ? " and " : "",
                     v_rot > 0 ? "V" : "", std::max(kv_->k_rot_group(), v_rot));
    start_offload();
    scratch_.resize(hp, params_.n_ubatch);
    x_.assign((size_t)params_.n_ubatch * hp.n_embd, 0);
    vis_full_.resize(params_.n_ubatch);
    vis_swa_.resize(params_.n_ubatch);
    for (int i = 0; i < params_.n_ubatch; i++) {
        vis_full_ptr_.push_back(&vis_full_[i]);
        vis_swa_ptr_.push_back(&vis_swa_[i]);
    }
}

// -ngl / -ot / -nkvo: the layers and head OffloadPlan puts on the device, or none.
void Engine::start_offload() {
    const OffloadParams& op = params_.offload;
    if (op.n_gpu_layers <= 0 && op.overrides.empty()) return;
    const OffloadPlan plan = plan_offload(model_, op);  // bad -ot patterns are refused even without a device
    for (const std::string& note : plan.notes) BEE_LOG_INFO("-ot: %s", note.c_str());
    const std::string what = op.n_gpu_layers > 0 ? strfmt("-ngl %d", op.n_gpu_layers) : std::string("-ot");
    if (!plan.any()) {
        BEE_LOG_INFO("%s: every layer runs on the CPU", what.c_str());
    } else if (op.device == "none") {  // llama.cpp's -dev none
        BEE_LOG_INFO("%s with --device none: every layer runs on the CPU", what.c_str());
    } else if (!lora_.empty()) {
        BEE_LOG_WARN("%s: LoRA adapters run on the CPU only: every layer runs on the CPU", what.c_str());
    } else {
        std::string no_device;
        offload_ = Offload::create(model_, *kv_, params_.n_ubatch, op, plan, &no_device);
        if (offload_) {
            mem_->set_offload(offload_.get());
            BEE_LOG_INFO("offload: %s", offload_->describe().c_str());
        } else {
            BEE_LOG_WARN("%s: %s: every layer runs on the CPU", what.c_str(), no_device.c_str());
        }
    }
}

void Engine::load_lora() {
    for (const LoraSpec& spec : params_.lora) {
        if (!std::isfinite(spec.scale)) fail("LoRA adapter %s: the scale must be a finite number", spec.path.c_str());
        lora_.push_back(LoraAdapter::load(spec.path, model_));
        lora_default_.push_back(params_.lora_init_without_apply ? 0.0f : spec.scale);
        const LoraAdapter& a = *lora_.back();
        BEE_LOG_INFO("LoRA adapter %zu: %s, %d weights, alpha %g, scale %g%s", lora_.size() - 1, a.path().c_str(),
                     a.n_pairs(), a.alpha(), spec.scale, params_.lora_init_without_apply ? " (not applied yet)" : "");
    }
    mem_->init_lora(lora_default_);
}

// The adapters this ubatch's rows apply, from each row's sequence (SeqMemory::lora); nullptr: none.
LoraBatch* Engine::lora_rows(const Batch& b, int r0, int n) {
    if (lora_.empty()) return nullptr;
    lora_batch_.uses.clear();
    lora_batch_.n_rows = n;
    for (size_t i = 0; i < lora_.size(); i++) {
        LoraUse u;
        u.adapter = lora_[i].get();
        for (int j = 0; j < n; j++) {
            const float s = mem_->lora(b.seq[r0 + j])[i];
            if (s == 0) continue;  // a zero scale costs nothing and changes no bit
            u.rows.push_back(j);
            u.scale.push_back(s);
        }
        if (!u.rows.empty()) lora_batch_.uses.push_back(std::move(u));
    }
    return lora_batch_.uses.empty() ? nullptr : &lora_batch_;
}

// The same uses for the rows returning logits: want[j] is the ubatch row of hidden row j.
LoraBatch* Engine::lora_head_rows(const std::vector<int32_t>& want) {
    lora_head_.uses.clear();
    lora_head_.n_rows = (int)want.size();
    for (const LoraUse& u : lora_batch_.uses) {
        if (!u.adapter->output()) continue;
        LoraUse h;
        h.adapter = u.adapter;
        for (size_t k = 0, j = 0; k < u.rows.size() && j < want.size();) {  // both ascending
            if (u.rows[k] < want[j]) k++;
            else if (u.rows[k] > want[j]) j++;
            else {
                h.rows.push_back((int32_t)j);
                h.scale.push_back(u.scale[k]);
                k++;
                j++;
            }
        }
        if (!h.rows.empty()) lora_head_.uses.push_back(std::move(h));
    }
    return lora_head_.uses.empty() ? nullptr : &lora_head_;
}

// Start-up checks of the KV types (DESIGN.md invariant 3): unsupported types are refused here, never
// mid-request, and fragile K is protected (kv_protect_k_type) unless --kv-auto-asymmetric off.
void Engine::check_kv_types(const HParams& hp) {
    for (const auto& [name, t] : {std::pair{"K", params_.type_k}, std::pair{"V", params_.type_v}})
        if (!kv_type_supported(t) || !attention_supports_kv_type(t))
            fail("KV cache: %s type %s is not supported (use one of %s with -ctk/-ctv)", name,
                 ggml_type_name(t) ? ggml_type_name(t) : "(unknown)", kv_type_names());
    if (hp.head_dim_v != hp.head_dim && (is_turbo_type(params_.type_k) || is_turbo_type(params_.type_v)))
        fail("TurboQuant KV types need equal K and V head sizes (model has %d and %d); use q8_0 or f16", hp.head_dim,
             hp.head_dim_v);
    std::string why;
    const GgmlType k = kv_protect_k_type(params_.type_k, hp.n_head, hp.n_head_kv, hp.n_embd, &why);
    if (k != params_.type_k) {
        if (params_.kv_auto_asymmetric) {
            BEE_LOG_WARN(
                "KV cache: K kept at %s instead of %s: %s (turbo K breaks such models; "
                "--kv-auto-asymmetric off forces it)",
                ggml_type_name(k), ggml_type_name(params_.type_k), why.c_str());
            params_.type_k = k;
        } else {
            BEE_LOG_WARN("KV cache: %s K on a fragile model (%s), as asked (--kv-auto-asymmetric off)",
                         ggml_type_name(params_.type_k), why.c_str());
        }
    }
    for (GgmlType t : {params_.type_k, params_.type_v})
        if (kv_padded_dim(t, hp.head_dim) != hp.head_dim)
            BEE_LOG_INFO("KV cache: %s pads %d-wide heads to %d%s", ggml_type_name(t), hp.head_dim,
                         kv_padded_dim(t, hp.head_dim),
                         hp.head_dim % 64 == 0 && is_turbo_type(t) ? " (the *_64 turbo types avoid this)" : "");
}

void Engine::validate(const Batch& b) const {
    const int n = b.size();
    const HParams& hp = model_.hparams();
    if (n == 0) fail("decode: empty batch");
    if ((int)b.pos.size() != n || (int)b.seq.size() != n || (int)b.logits.size() != n ||
        (!b.parent.empty() && (int)b.parent.size() != n))
        fail("decode: batch arrays have different lengths");
    std::vector<int32_t> last(params_.n_seq_max, -2);
    for (int r = 0; r < n; r++) {
        if (b.token[r] < 0 || b.token[r] >= hp.n_vocab)
            fail("decode: batch row %d: token id %d is out of range [0, %d)", r, b.token[r], hp.n_vocab);
        if (b.seq[r] < 0 || b.seq[r] >= params_.n_seq_max)
            fail("decode: batch row %d: sequence id %d is out of range [0, %d)", r, b.seq[r], params_.n_seq_max);
        if (b.pos[r] < 0) fail("decode: batch row %d: negative position %d", r, b.pos[r]);
        const int s = b.seq[r];
        if (last[s] == -2) last[s] = kv_->seq_pos_max(s);
        if (b.parent.empty()) {
            if (b.pos[r] <= last[s])
                fail(
                    "decode: batch row %d: position %d of sequence %d is not after its previous position %d "
                    "(remove cached positions first)",
                    r, b.pos[r], s, last[s]);
            last[s] = b.pos[r];
        } else {
            const int p = b.parent[r];
            if (p < -1 || p >= r) fail("decode: batch row %d: parent %d must be -1 or an earlier row", r, p);
            const int32_t want = p < 0 ? kv_->seq_pos_max(s) + 1 : b.pos[p] + 1;
            if (p >= 0 && b.seq[p] != s) fail("decode: batch row %d: parent row %d is in another sequence", r, p);
            if (b.pos[r] != want)
                fail("decode: batch row %d: tree position %d, expected %d (parent position + 1)", r, b.pos[r], want);
        }
    }
    if (!b.capture_layers.empty()) {
        if (!b.capture.empty() && (int)b.capture.size() != n) fail("decode: batch capture flags have another length");
        for (int32_t il : b.capture_layers)
            if (il < 0 || il > hp.n_layer) fail("decode: capture layer %d is out of range [0, %d]", il, hp.n_layer);
    }
    if (!b.parent.empty() && n > params_.n_ubatch)
        fail("decode: tree batch of %d rows is larger than n_ubatch %d", n, params_.n_ubatch);
    if (rs_) validate_recurrent(b);
    const int n_free = kv_->n_cells() - kv_->n_used();
    if (n > n_free)
        fail("decode: KV cache is full: the batch needs %d cells, %d of %d are free (raise -c / --ctx-size)", n, n_free,
             kv_->n_cells());
}

// Recurrent layers carry one state per sequence along one path of tokens: a sequence's rows must be its
// next positions in order, and a tree batch may only hold chains.
void Engine::validate_recurrent(const Batch& b) const {
    std::vector<int32_t> next(params_.n_seq_max, -1), last_row(params_.n_seq_max, -1);
    for (int r = 0; r < b.size(); r++) {
        const int s = b.seq[r];
        if (next[s] < 0) next[s] = kv_->seq_pos_max(s) + 1;
        if (!b.parent.empty() && b.parent[r] != last_row[s])
            fail(
                "decode: batch row %d: a draft tree (parent %d, not the previous row %d of sequence %d) cannot be "
                "decoded by a model with recurrent layers (%s): its state follows one path; draft chains instead",
                r, b.parent[r], last_row[s], s, model_.hparams().arch.c_str());
        if (b.pos[r] != next[s])
            fail(
                "decode: batch row %d: position %d of sequence %d, expected %d: a model with recurrent layers (%s) "
                "takes each sequence's positions in order, without gaps",
                r, b.pos[r], s, next[s], model_.hparams().arch.c_str());
        next[s]++;
        last_row[s] = r;
    }
}

void Engine::apply_shifts() {
    std::vector<int32_t> delta;
    if (!kv_->take_shifts(delta)) return;
    const HParams& hp = model_.hparams();
    if (offload_) offload_->pull_kv(*kv_);  // the device layers' rows are rotated on the host, then sent back
    std::vector<float> row(kv_->params().n_embd_k);
    for (int il = 0; il < hp.n_layer; il++) {
        const int kl = hp.layers[il].kv_layer;
        if (kl < 0) continue;
        for (int c = 0; c < kv_->n_cells(); c++) {
            if (delta[c] == 0) continue;
            kv_->read_k(kl, c, row.data());  // any KV type: dequantize, rotate, requantize
            rope(row.data(), hp.n_head_kv, hp.head_dim, delta[c], hp.layers[il].rope);
            kv_->write_k(kl, c, row.data());
        }
    }
    if (offload_) offload_->push_kv(*kv_);
}

// note: each list is sorted by position, so attention reduces in an order that depends only on the
// row's own sequence history, not on cell placement or on the rest of the batch (invariant 2).
void Engine::build_visible(const Batch& b, int r0, int n, const int32_t* cells) {
    const HParams& hp = model_.hparams();
    const bool tree = !b.parent.empty();
    int cur_seq = -1;
    for (int i = 0; i < n; i++) {
        const int r = r0 + i;
        const int s = b.seq[r];
        const int32_t pos = b.pos[r];
        if (s != cur_seq) {
            kv_->seq_cells_sorted(s, seq_cells_);
            cur_seq = s;
        }
        std::vector<int32_t>& full = vis_full_[i];
        full.clear();
        if (!tree) {
            for (const auto& [p, c] : seq_cells_) {
                if (p > pos) break;
                full.push_back(c);
            }
        } else {
            std::vector<int32_t> chain;
            for (int a = r; a >= 0; a = b.parent[a]) chain.push_back(a);
            const int32_t first_batch_pos = b.pos[chain.back()];
            for (const auto& [p, c] : seq_cells_) {
                if (p >= first_batch_pos) break;
                full.push_back(c);
            }
            for (auto it = chain.rbegin(); it != chain.rend(); ++it) full.push_back(cells[*it]);
        }
        if (hp.n_swa > 0) {
            std::vector<int32_t>& swa = vis_swa_[i];
            swa.clear();
            for (int32_t c : full)
                if (pos - kv_->cell(c).pos < hp.n_swa) swa.push_back(c);
        }
    }
}

void Engine::forward_ubatch(const Batch& b, int r0, int n, const int32_t* cells, DecodeOutput& out) {
    const HParams& hp = model_.hparams();
    const ModelWeights& w = model_.weights();
    float* x = x_.data();
    get_rows(w.tok_embd.type, w.tok_embd.data, hp.n_embd, &b.token[r0], n, x);
    if (hp.embd_scale != 1.0f) scale(x, hp.embd_scale, (int64_t)n * hp.n_embd);
    build_visible(b, r0, n, cells);
    ForwardCtx c{hp, w,       *pool_, *kv_, n, &b.pos[r0], cells + r0, vis_full_ptr_.data(), vis_swa_ptr_.data(),
                 x,  scratch_};
    c.seq = &b.seq[r0];
    c.rs = rs_.get();
    c.lora = lora_rows(b, r0, n);
    const bool capture = !b.capture_layers.empty();
    if (capture) {  // rows first, then one slot per captured layer, filled as the layers run
        for (int i = 0; i < n; i++)
            if (b.capture.empty() || b.capture[r0 + i]) out.hidden_rows.push_back(r0 + i);
        out.hidden.resize(out.hidden_rows.size() * b.capture_layers.size() * (size_t)hp.n_embd);
    }
    if (offload_) {
        OffloadStep s;
        s.n_rows = n;
        s.pos = &b.pos[r0];
        s.cells = cells + r0;
        s.visible_full = vis_full_ptr_.data();
        s.visible_swa = vis_swa_ptr_.data();
        offload_->begin(s);
    }
    bool last_on_device = false;  // the layer before il ran on the device (x_ was downloaded after it)
    for (int il = 0; il < hp.n_layer;) {
        if (offload_ && offload_->on_device(il)) {
            int end = il + 1;
            while (end < hp.n_layer && offload_->on_device(end)) end++;
            forward_device(b, r0, n, c, il, end, out);
            il = end;
            last_on_device = true;
            continue;
        }
        if (capture) capture_rows(b, r0, n, il, out);
        // the device does not write the CPU layer's attention-norm input (layer_output does that on the CPU)
        if (last_on_device) norm_rows(c, x, w.layers[(size_t)il].attn_norm, scratch_.xn.data(), hp.n_embd);
        model_.arch().forward_layer(c, il);
        last_on_device = false;
        il++;
    }
    if (capture) capture_rows(b, r0, n, hp.n_layer, out);

    std::vector<int32_t> want;
    for (int i = 0; i < n; i++)
        if (b.logits[r0 + i]) want.push_back(i);
    if (want.empty()) return;
    const size_t base = out.logits.size();
    out.logits.resize(base + want.size() * (size_t)hp.n_vocab);
    float* logits = out.logits.data() + base;
    if (offload_ && offload_->has_head()) {
        if (!last_on_device) offload_->upload_x(x);  // the last layer ran on the CPU
        offload_->head(want, logits);
    } else {
        hidden_.resize(want.size() * (size_t)hp.n_embd);
        for (size_t j = 0; j < want.size(); j++)
            rms_norm(x + (size_t)want[j] * hp.n_embd, (const float*)w.output_norm.data, &hidden_[j * hp.n_embd],
                     hp.n_embd, hp.norm_eps);
        matmul(*pool_, w.output.type, w.output.data, hp.n_vocab, hp.n_embd, hidden_.data(), (int64_t)want.size(),
               logits, w.output.layout);
        if (c.lora)
            if (LoraBatch* head = lora_head_rows(want))
                lora_apply(*pool_, *head, -1, LoraTarget::q, hidden_.data(), logits);
    }
    if (hp.final_softcap > 0) softcap(logits, hp.final_softcap, (int64_t)want.size() * hp.n_vocab);
    for (int32_t i : want) out.rows.push_back(r0 + i);
}

// Layers [l0, l1) of the ubatch on the device, in segments that end where a captured layer starts: x goes up
// first, and comes back to the host at each segment's end when something on the host reads it (a capture, a
// CPU layer after l1, or the output head when it is not on the device). With -nkvo each layer's attention
// runs on the host (model/forward.cpp attend: rope, K/V write, attention into the scratch's att).
void Engine::forward_device(const Batch& b, int r0, int n, ForwardCtx& c, int l0, int l1, DecodeOutput& out) {
    const int n_layer = model_.hparams().n_layer;
    const bool capture = !b.capture_layers.empty();
    const HostAttention host = [&c](int il, float* q, float* k, float* v) -> const float* {
        attend(c, il, q, k, v);
        return c.s.att.data();
    };
    offload_->upload_x(x_.data());
    for (int il = l0; il < l1;) {
        if (capture) capture_rows(b, r0, n, il, out);
        int end = l1;
        for (int32_t cl : b.capture_layers)
            if (cl > il && cl < end) end = cl;
        offload_->run_layers(il, end, host);
        il = end;
        if (il < l1 || l1 < n_layer || capture || !offload_->has_head()) offload_->download_x(x_.data());
    }
}

// Copies x (the residual stream entering layer il; il = n_layer: after the last layer) of this ubatch's
// captured rows into their slot for il. The rows of the ubatch are the last ones in out.hidden_rows.
void Engine::capture_rows(const Batch& b, int r0, int n, int il, DecodeOutput& out) {
    const int n_embd = model_.hparams().n_embd;
    const size_t n_slots = b.capture_layers.size();
    for (size_t j = 0; j < n_slots; j++) {
        if (b.capture_layers[j] != il) continue;
        for (size_t i = out.hidden_rows.size(); i-- > 0 && out.hidden_rows[i] >= r0;) {
            const int local = out.hidden_rows[i] - r0;
            if (local >= n) continue;
            std::memcpy(&out.hidden[(i * n_slots + j) * (size_t)n_embd], x_.data() + (size_t)local * n_embd,
                        (size_t)n_embd * sizeof(float));
        }
    }
}

void Engine::decode(const Batch& b, DecodeOutput& out) {
    validate(b);
    apply_shifts();
    out.n_vocab = model_.hparams().n_vocab;
    out.rows.clear();
    out.logits.clear();
    out.n_embd = model_.hparams().n_embd;
    out.hidden_layers = b.capture_layers;
    out.hidden_rows.clear();
    out.hidden.clear();
    const int n = b.size();
    std::vector<int32_t> first(params_.n_seq_max, -1), count(params_.n_seq_max, 0);
    for (int r = 0; r < n; r++) {  // the first row of a sequence in the batch is its lowest position
        if (first[b.seq[r]] < 0) first[b.seq[r]] = b.pos[r];
        count[b.seq[r]]++;
    }
    std::vector<int32_t> cells(n);
    if (!kv_->alloc(n, b.pos.data(), b.seq.data(), cells.data()))
        fail("decode: KV cache is full (raise -c / --ctx-size)");
    for (int s = 0; s < params_.n_seq_max; s++)
        if (count[s] > 0) mem_->begin_batch(s, first[s], count[s]);
    for (int r0 = 0; r0 < n; r0 += params_.n_ubatch)
        forward_ubatch(b, r0, std::min(params_.n_ubatch, n - r0), cells.data(), out);
}

int Engine::rewind(int seq, int32_t p, int32_t p_tokens0, const std::vector<int32_t>& tokens) {
    const int32_t c = mem_->cut_point(seq, p);
    if (c < p_tokens0)
        fail("rewind: sequence %d can only be cut at position %d, but the tokens given start at %d", seq, c, p_tokens0);
    if (p > p_tokens0 + (int32_t)tokens.size())
        fail("rewind: %zu tokens from position %d do not reach position %d", tokens.size(), p_tokens0, p);
    mem_->cut(seq, c);
    if (c == p) return 0;
    Batch b;
    DecodeOutput out;
    for (int32_t q = c; q < p; q++) b.add(tokens[(size_t)(q - p_tokens0)], q, seq, false);
    for (int r0 = 0; r0 < b.size(); r0 += params_.n_ubatch) {  // chunks: a batch may not exceed the free cells
        Batch chunk;
        for (int r = r0; r < std::min(b.size(), r0 + params_.n_ubatch); r++)
            chunk.add(b.token[r], b.pos[r], seq, false);
        decode(chunk, out);
    }
    return p - c;
}

}  // namespace bee
