// runtime/scheduler: slot assignment, batch building, decode, sampling — all on one thread.
#include "runtime/scheduler.h"

#include <algorithm>

#include "base/error.h"
#include "base/log.h"
#include "base/timer.h"
#include "kv/kv_state.h"

namespace bee::runtime {

Scheduler::Scheduler(Engine& engine, const SchedulerParams& params) : eng_(engine), params_(params) {
    if (params_.n_parallel < 1 || params_.n_parallel > engine.params().n_seq_max)
        fail("scheduler: %d slots but the engine has %d sequences", params_.n_parallel, engine.params().n_seq_max);
    const int n_ctx = engine.params().n_ctx;
    n_ctx_slot_ = params_.kv_unified ? n_ctx : n_ctx / params_.n_parallel;
    if (n_ctx_slot_ < 2)
        fail("context %d split over %d slots leaves %d tokens per slot (raise -c or lower -np)", n_ctx,
             params_.n_parallel, n_ctx_slot_);
    const int32_t n_vocab = engine.model().hparams().n_vocab;
    const bool one_path = !engine.memory().can_decode_trees();  // recurrent layers: one state per sequence
    const char* arch = engine.model().hparams().arch.c_str();
    if (one_path && params_.context_shift)
        fail(
            "--context-shift: %s has recurrent layers, whose state cannot drop tokens from the middle of a sequence; "
            "run without it (a full slot stops) or with a larger -c",
            arch);
    if (one_path && params_.spec.suffix_tree_nodes > 0)
        fail(
            "--spec-suffix-tree %d: %s has recurrent layers, whose state follows one path, so a draft tree cannot "
            "be verified exactly; drop the flag (suffix then drafts chains)",
            params_.spec.suffix_tree_nodes, arch);
    if (params_.spec.types.empty() && params_.spec.auto_mtp && engine.model().weights().nextn) {
        params_.spec.types = {"draft-mtp"};
        BEE_LOG_INFO("speculative: draft-mtp, the model's own MTP block (--spec-type none turns it off)");
    }
    if (params_.spec.enabled()) spec_ = std::make_unique<SpecShared>(params_.spec, engine.model(), &engine.pool());
    for (int i = 0; i < params_.n_parallel; i++) {
        slots_.emplace_back(i, engine.model().tokenizer(), n_vocab, spec_.get());
        slots_.back().context_shift = params_.context_shift;
        slots_.back().chains_only = one_path;
        if (params_.extra_drafter) slots_.back().add_drafter(params_.extra_drafter(i));
    }
    for (Slot& s : slots_) s.on_finish = [this](const FinishInfo& f) { on_finished(f); };
    if (params_.cache_ram_bytes > 0) ram_ = std::make_unique<PromptCacheRam>(params_.cache_ram_bytes);
    publish();
    thread_ = std::thread([this] { run(); });
}

Scheduler::~Scheduler() { shutdown(); }

static void fail_task(Task& t, int status = 503, const char* type = "unavailable_error",
                      const std::string& message = "the server is shutting down") {
    TaskEvent ev;
    ev.kind = TaskEvent::error;
    ev.http_status = status;
    ev.error_type = type;
    ev.error_message = message;
    t.channel->push(std::move(ev));
}

void Scheduler::shutdown() {
    {
        std::lock_guard<std::mutex> lk(mu_);
        if (stop_) return;
        stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
    for (Slot& s : slots_)
        if (!s.idle()) s.fail(503, "unavailable_error", "the server is shutting down");
    for (auto& t : waiting_) fail_task(*t);
    waiting_.clear();
    std::lock_guard<std::mutex> lk(mu_);
    for (auto& t : incoming_) fail_task(*t);
    incoming_.clear();
}

void Scheduler::submit(std::shared_ptr<Task> task) {
    {
        std::lock_guard<std::mutex> lk(mu_);
        if (stop_) {
            fail_task(*task);
            return;
        }
        incoming_.push_back(std::move(task));
    }
    cv_.notify_one();
}

std::vector<SlotSnapshot> Scheduler::slots() const {
    std::lock_guard<std::mutex> lk(mu_);
    return snapshot_;
}

SchedulerMetrics Scheduler::metrics(bool reset_bucket) {
    std::lock_guard<std::mutex> lk(mu_);
    SchedulerMetrics m = metrics_;
    if (reset_bucket) {
        metrics_.bucket_prompt_tokens = metrics_.bucket_predicted_tokens = 0;
        metrics_.bucket_prompt_seconds = metrics_.bucket_predicted_seconds = 0;
    }
    return m;
}

void Scheduler::restore_metrics(const SchedulerMetrics& m) {
    std::lock_guard<std::mutex> lk(mu_);
    const uint64_t processing = metrics_.requests_processing, deferred = metrics_.requests_deferred;
    metrics_ = m;
    metrics_.requests_processing = processing;
    metrics_.requests_deferred = deferred;
}

bool Scheduler::idle() const {
    std::lock_guard<std::mutex> lk(mu_);
    return incoming_.empty() && metrics_.requests_processing == 0 && metrics_.requests_deferred == 0;
}

void Scheduler::run() {
    for (;;) {
        {
            std::unique_lock<std::mutex> lk(mu_);
            const bool busy =
                !waiting_.empty() || std::any_of(slots_.begin(), slots_.end(), [](const Slot& s) { return !s.idle(); });
            if (!busy) cv_.wait(lk, [&] { return stop_ || !incoming_.empty(); });
            if (stop_) return;
            for (auto& t : incoming_) waiting_.push_back(std::move(t));
            incoming_.clear();
        }
        const double now = time_ms();
        // A client that went away frees its slot at the next step boundary.
        for (Slot& s : slots_)
            if (!s.idle() && s.task()->channel->cancelled()) s.cancel();
        admit(now);
        if (build_batch()) {
            decode_step();
            learn_step_cost(time_ms() - now);
        }
        publish();
    }
}

// The LoRA scales a task runs under: its own, else the engine's.
const std::vector<float>& Scheduler::task_lora(const Task& t) const {
    return t.params.lora.empty() ? eng_.lora_default() : t.params.lora;
}

// Pinned slot if asked (and idle); else the idle slot whose cache shares the largest part of the prompt
// (at least slot_prompt_similarity of it) under the same LoRA scales; else the least recently used idle
// slot. -1: all busy.
int Scheduler::pick_slot(const Task& t) const {
    if (t.params.id_slot >= 0) return slots_[t.params.id_slot].idle() ? t.params.id_slot : -1;
    int best = -1;
    double best_sim = params_.slot_prompt_similarity;
    if (t.params.cache_prompt) {
        for (const Slot& s : slots_) {
            if (!s.idle() || eng_.memory().lora(s.id()) != task_lora(t)) continue;  // other scales: nothing reusable
            const double sim = (double)common_prefix(s.cache, t.prompt) / (double)t.prompt.size();
            if (sim > best_sim) {
                best_sim = sim;
                best = s.id();
            }
        }
    }
    if (best >= 0) return best;
    for (const Slot& s : slots_)
        if (s.idle() && (best < 0 || s.t_last_used < slots_[best].t_last_used)) best = s.id();
    return best;
}

void Scheduler::admit(double now) {
    for (auto it = waiting_.begin(); it != waiting_.end();) {
        if ((*it)->channel->cancelled()) {
            it = waiting_.erase(it);
            continue;
        }
        const int si = pick_slot(**it);
        if (si < 0) {
            ++it;
            continue;
        }
        std::shared_ptr<Task> task = std::move(*it);
        it = waiting_.erase(it);
        if (task->slot_action) {  // slot save/restore/erase: between two steps, on this thread
            try {
                task->slot_action(eng_.memory(), slots_[si].cache, n_ctx_slot_);
            } catch (const std::exception& e) {
                fail_task(*task, 400, "invalid_request_error", e.what());
            }
            continue;
        }
        if (task->engine_action) {  // embeddings, reranking: between two steps, on this thread
            run_engine_action(slots_[si], *task, now);
            continue;
        }
        try {
            start_on_slot(slots_[si], task, now);
        } catch (const std::exception& e) {  // e.g. sampling parameters the sampler refuses
            slots_[si].cancel();
            fail_task(*task, 400, "invalid_request_error", e.what());
        }
    }
}

void Scheduler::run_engine_action(Slot& s, Task& t, double now) {
    if (params_.kv_unified) make_room((int)t.prompt.size());
    s.t_last_used = now;
    try {
        use_lora(s, task_lora(t));
        const int32_t n_reused = t.engine_action(eng_, s.id(), s.cache);
        // as llama-server: an embedding's prompt is counted (one decode, no token predicted)
        {
            std::lock_guard<std::mutex> lk(mu_);
            metrics_.n_decode_total++;
            metrics_.prompt_tokens_total += (uint64_t)t.prompt.size() - (uint64_t)n_reused;
            metrics_.prompt_tokens_cached_total += (uint64_t)n_reused;
        }
        TaskEvent done;  // after the metrics, so a reply never precedes its count
        done.kind = TaskEvent::done;
        t.channel->push(std::move(done));
    } catch (const std::exception& e) {  // the sequence's cells are in doubt: drop them
        eng_.memory().clear(s.id());
        s.cache.clear();
        fail_task(t, 500, "server_error", e.what());
    }
}

// Keeps the longest cached prefix (cache_prompt), dropping the rest of the slot's KV sequence. At least
// one prompt token is always evaluated again, so the first sample has fresh logits.
void Scheduler::start_on_slot(Slot& s, std::shared_ptr<Task> t, double now) {
    const std::vector<float>& lora = task_lora(*t);
    size_t keep = 0;
    if (t->params.cache_prompt) {
        // K/V computed under other LoRA scales is never reused (the RAM cache may hold some that fits)
        const bool same_lora = eng_.memory().lora(s.id()) == lora;
        keep = same_lora ? common_prefix(s.cache, t->prompt) : 0;
        if (ram_) keep = restore_from_ram(s, t->prompt, lora, keep);
        if (t->params.n_cache_reuse > 0 && eng_.memory().lora(s.id()) == lora)
            keep = reuse_chunks(s, t->prompt, keep, t->params.n_cache_reuse);
    }
    keep = std::min(keep, t->prompt.size() - 1);
    // A memory that cannot be cut there (recurrent rules) keeps what it can: the prompt is processed from it.
    keep = (size_t)eng_.memory().cut_point(s.id(), (int32_t)keep);
    eng_.memory().cut(s.id(), (int32_t)keep);
    s.cache.resize(keep);
    // --ctx-checkpoints: the forward copies the state kCheckpointTail tokens before the prompt's end
    if ((int32_t)t->prompt.size() - kCheckpointTail > (int32_t)keep)
        eng_.memory().checkpoint_ahead(s.id(), (int32_t)t->prompt.size() - kCheckpointTail);
    use_lora(s, lora);
    s.t_last_used = now;
    BEE_LOG_DEBUG("slot %d: task %llu, prompt %zu tokens, %zu cached", s.id(), (unsigned long long)t->id,
                  t->prompt.size(), keep);
    s.start(std::move(t), (int32_t)keep, now);
}

// The slot's sequence runs under `lora` from now on; K/V computed under other scales is dropped first.
void Scheduler::use_lora(Slot& s, const std::vector<float>& lora) {
    if (eng_.memory().lora(s.id()) == lora) return;
    eng_.memory().clear(s.id());
    s.cache.clear();
    eng_.memory().set_lora(s.id(), lora);
}

// --ctx-checkpoints: a sequence with recurrent state keeps its state a few tokens before the end of each
// prompt (copied by the forward as it passes that row), so the next prompt of a conversation, which often leaves
// this one near its end (a chat template's generation prompt, a reasoning block left out of the history),
// restarts there instead of from the start. Periodic checkpoints come from the memory (begin_batch).
void Scheduler::checkpoint_prompt_end(Slot& s) {
    SeqMemory& mem = eng_.memory();
    if (!mem.recurrent() || s.cache.size() <= (size_t)kCheckpointTail) return;
    // the state the forward copied there (start_on_slot asked for it) or the tape reaches, else the nearest
    // position the tape reaches below it
    const int32_t want = (int32_t)s.cache.size() - kCheckpointTail;
    for (int32_t p : {want, mem.cut_point(s.id(), want)})
        if (mem.checkpoint(s.id(), p)) {
            BEE_LOG_DEBUG("slot %d: checkpoint at position %d (%zu kept)", s.id(), p, mem.checkpoints(s.id()).size());
            return;
        }
}

// --cache-ram: a slot's tokens and sequence state, before they are dropped (smaller caches are cheaper to
// recompute than to store).
void Scheduler::save_to_ram(Slot& s) {
    if (!ram_ || s.cache.size() < kRamMinTokens) return;
    ram_->save(s.cache, eng_.memory().save(s.id(), (int32_t)s.cache.size()));
}

// --cache-ram: before most of a slot's cache is dropped for a new prompt, its tokens and KV go to the
// RAM store; then if a stored entry shares a longer prefix with the new prompt than the slot does, that
// entry's KV replaces the slot's. Returns the number of prompt tokens now in the cache.
size_t Scheduler::restore_from_ram(Slot& s, const std::vector<int32_t>& prompt, const std::vector<float>& lora,
                                   size_t n_past) {
    SeqMemory& mem = eng_.memory();
    if (n_past < s.cache.size() / 2) save_to_ram(s);
    size_t n = 0;
    const PromptCacheRam::Entry* e = ram_->best(prompt, lora, std::max(n_past + 1, kRamMinTokens), &n);
    if (!e) return n_past;
    // Recurrent state restarts only where it was kept: the entry's end or one of its checkpoints.
    if (mem.recurrent() && (int32_t)ram_cut_point(e->state, n) <= mem.cut_point(s.id(), (int32_t)n_past)) return n_past;
    mem.clear(s.id());
    s.cache.clear();
    if (params_.kv_unified) make_room(e->state.n_cells());  // other idle slots' cells (they go to RAM first)
    if (!mem.load(s.id(), e->state)) {                      // unified KV without room: recompute instead
        BEE_LOG_WARN("slot %d: no room to restore %zu cached tokens from RAM", s.id(), e->tokens.size());
        return 0;
    }
    s.cache = e->tokens;
    BEE_LOG_DEBUG("slot %d: restored %zu tokens from the RAM cache (%zu entries, %.1f MiB)", s.id(), n, ram_->size(),
                  ram_->bytes() / 1048576.0);
    return n;
}

// --cache-reuse: after the common prefix, chunks of the old cache that reappear later in the prompt
// (in the same order, at least min_chunk tokens long) are moved down to their new positions with a KV
// position shift (the engine re-rotates their keys) instead of being computed again. Cache index ==
// position throughout: the gap between the prompt head and the cache head is removed before each move.
// Returns the number of prompt tokens now in the cache.
size_t Scheduler::reuse_chunks(Slot& s, const std::vector<int32_t>& prompt, size_t n_past, int32_t min_chunk) {
    SeqMemory& mem = eng_.memory();
    if (!mem.can_move(s.id())) return n_past;  // recurrent rules: chunks cannot be moved
    size_t head_c = n_past, head_p = n_past;
    while (head_c < s.cache.size() && head_p < prompt.size()) {
        size_t n = 0;
        while (head_c + n < s.cache.size() && head_p + n < prompt.size() && s.cache[head_c + n] == prompt[head_p + n])
            n++;
        if (n < (size_t)min_chunk) {
            head_c++;
            continue;
        }
        try {
            mem.move_down(s.id(), (int32_t)head_p, (int32_t)head_c, (int32_t)(head_c + n));
        } catch (const Error& e) {  // e.g. shared cells: fall back to recomputing from here
            BEE_LOG_WARN("slot %d: cache reuse stopped: %s", s.id(), e.what());
            break;
        }
        for (size_t i = 0; i < n; i++) s.cache[head_p + i] = s.cache[head_c + i];
        BEE_LOG_DEBUG("slot %d: reused %zu cached tokens from position %zu at %zu", s.id(), n, head_c, head_p);
        head_c += n;
        head_p += n;
        n_past = head_p;
    }
    return n_past;  // the caller drops the leftovers past n_past (seq_rm + resize)
}

// With a unified KV cache the slots share cells: make room by dropping idle slots' caches (kept in the RAM
// prompt cache first, with --cache-ram), and if the generating slots alone no longer fit, end the newest
// ones with llama.cpp's error.
void Scheduler::make_room(int rows_needed) {
    const KvCache& kv = eng_.kv();
    auto free_cells = [&] { return kv.n_cells() - kv.n_used(); };
    for (Slot& s : slots_) {
        if (free_cells() >= rows_needed) return;
        if (s.idle() && !s.cache.empty()) {
            save_to_ram(s);
            eng_.memory().clear(s.id());
            s.cache.clear();
        }
    }
}

// --context-shift (llama.cpp's): a generating slot whose context is full keeps its first n_keep tokens
// (after BOS; -1: the whole prompt), drops the next n_discard (0: half of the rest) and moves the rest
// down (the engine re-rotates their keys at the next decode). False if nothing can be dropped.
bool Scheduler::shift_context(Slot& s) {
    const GenParams& g = s.task()->params;
    const Tokenizer& tok = eng_.model().tokenizer();
    const int32_t n_past = (int32_t)s.cache.size();
    const int32_t bos = !s.cache.empty() && tok.bos() >= 0 && s.cache[0] == tok.bos() ? 1 : 0;
    const int32_t keep = std::min(g.n_keep < 0 ? (int32_t)s.task()->prompt.size() : g.n_keep + bos, n_past);
    const int32_t n_left = n_past - keep;
    const int32_t n_discard = g.n_discard > 0 ? std::min(g.n_discard, n_left) : n_left / 2;
    if (n_discard <= 0) return false;
    s.cache.erase(s.cache.begin() + keep, s.cache.begin() + keep + n_discard);
    if (eng_.memory().can_move(s.id())) {
        eng_.memory().move_down(s.id(), keep, keep + n_discard, n_past);
    } else {  // recurrent rules: the shortened text is processed again from its start
        eng_.memory().clear(s.id());
        eng_.rewind(s.id(), (int32_t)s.cache.size(), 0, s.cache);
    }
    s.context_shifted();
    BEE_LOG_DEBUG("slot %d: context shift: kept %d, dropped %d, moved %d tokens", s.id(), keep, n_discard,
                  n_left - n_discard);
    return true;
}

// Appends a row. Once a tree draft has switched the batch to explicit parents, a row's parent is the
// previous row of its sequence (-1: its first row in this batch).
static void add_row(Batch& b, int32_t token, int32_t pos, int32_t seq, bool logits) {
    if (!b.parent.empty()) {
        int32_t prev = -1;
        for (int q = b.size() - 1; q >= 0 && prev < 0; q--)
            if (b.seq[q] == seq) prev = q;
        b.parent.push_back(prev);
    }
    b.add(token, pos, seq, logits);
}

bool Scheduler::build_batch() {
    batch_.clear();
    std::vector<Slot*> gen, pre;
    for (Slot& s : slots_) {
        s.step_rows = 0;
        if (s.state() == Slot::State::generate) gen.push_back(&s);
        if (s.state() == Slot::State::prefill) pre.push_back(&s);
    }
    // A full slot is still generating only with --context-shift: make room in it, or end it.
    for (size_t i = 0; i < gen.size();) {
        if ((int32_t)gen[i]->cache.size() < n_ctx_slot_ || shift_context(*gen[i])) {
            i++;
            continue;
        }
        gen[i]->end_context_full(time_ms());
        gen.erase(gen.begin() + (std::ptrdiff_t)i);
    }
    int free_cells = eng_.kv().n_cells();
    if (params_.kv_unified) {
        make_room((int)gen.size());
        free_cells = eng_.kv().n_cells() - eng_.kv().n_used();
        if ((int)gen.size() > free_cells) {
            for (Slot* s : gen) s->fail(500, "server_error", "Context size has been exceeded.");
            return false;
        }
    }
    // One row per generating slot, or [last token + draft] for a speculating one. A batch holding a tree
    // is decoded as one ubatch, and drafts take cells: each slot drafts within what is left of both
    // after the rows already added and one row for every generating slot after it.
    const int row_cap = std::min(eng_.params().n_ubatch, free_cells);
    // Only a step that decodes one slot's generation rows and nothing else times its cycle for the depth
    // policy (drafters.md 2.9): in a shared step the time is mostly the other slots' rows.
    const bool timed = gen.size() == 1 && pre.empty();
    int n_out = 0;
    const double t_draft = time_ms();  // the slots draft in plan_draft, draft_queued and add_draft_rows
    // Several generating slots: drafters that compute (EAGLE-3, DFlash) queue their requests, and draft
    // every slot in one pass after all have planned (SpecShared::draft_queued): the drafter's weights are
    // read once per step, as the target's are.
    // A drafter that throws ends its slot's request (500), not the server; the slot adds no row.
    const bool group = spec_ && gen.size() > 1;
    std::vector<uint8_t> planned(gen.size(), 0), failed(gen.size(), 0);
    int rows = 0, n_queued = 0;  // rows the slots before the i-th expect to add
    for (size_t i = 0; i < gen.size(); i++) {
        Slot& s = *gen[i];
        const int later = (int)(gen.size() - 1 - i);  // slots after this one: one row each at least
        // the rows of the slots before it (their drafts included) and after it, and one token from each
        try {
            planned[i] =
                s.plan_draft(n_ctx_slot_, row_cap - rows - later, timed, rows + later, (int)gen.size() - 1, group);
        } catch (const std::exception& e) {
            failed[i] = 1;
            drafting_failed(s, e.what());
            continue;
        }
        rows += s.planned_rows();
        n_queued += s.draft_queued();
    }
    double queued_ms = 0;  // each queued slot's share of the shared pass
    if (n_queued > 0) {
        const double t0 = time_ms();
        spec_->draft_queued();
        queued_ms = (time_ms() - t0) / n_queued;
    }
    for (size_t i = 0; i < gen.size(); i++) {
        Slot& s = *gen[i];
        const int later = (int)(gen.size() - 1 - i);
        const int room = row_cap - batch_.size() - later;
        if (failed[i]) continue;
        try {
            if (planned[i] && s.add_draft_rows(batch_, room, queued_ms)) {
                s.step_out0 = n_out;  // every row of a draft asks for logits
                n_out += s.step_rows;
                continue;
            }
        } catch (const std::exception& e) {  // a later drafter's draft(): nothing was added for the slot
            drafting_failed(s, e.what());
            continue;
        }
        s.step_row0 = batch_.size();
        s.step_out0 = n_out++;
        s.step_rows = 1;
        add_row(batch_, s.last_token(), (int32_t)s.cache.size(), s.id(), true);
    }
    step_draft_ms_ = time_ms() - t_draft;
    step_cost_rows_ = 0;  // a shared step of generation rows only is a sample of the verify cost curve
    if (gen.size() > 1 && pre.empty()) {
        step_cost_rows_ = batch_.size();
        step_cost_pos_ = 0;
        for (const Slot* s : gen) step_cost_pos_ = std::max(step_cost_pos_, (int32_t)s->cache.size());
    }
    // Prefill chunks, oldest task first, in what is left of the logical batch (and, unified, of the cache;
    // with a tree in the batch, of the ubatch).
    int budget = params_.n_batch - batch_.size();
    if (!batch_.parent.empty()) budget = std::min(budget, eng_.params().n_ubatch - batch_.size());
    if (params_.kv_unified) {
        make_room(batch_.size() + std::min(budget, 64));
        budget = std::min(budget, eng_.kv().n_cells() - eng_.kv().n_used() - batch_.size());
    }
    std::sort(pre.begin(), pre.end(), [](Slot* a, Slot* b) { return a->task()->id < b->task()->id; });
    for (Slot* s : pre) {
        const int n = std::min(budget, s->prompt_left());
        if (n <= 0) break;
        s->step_row0 = batch_.size();
        s->step_rows = n;
        const int32_t p0 = (int32_t)s->cache.size();
        const bool last_chunk = n == s->prompt_left();
        for (int i = 0; i < n; i++)
            add_row(batch_, s->task()->prompt[p0 + i], p0 + i, s->id(), last_chunk && i == n - 1);
        s->step_out0 = last_chunk ? n_out++ : -1;
        budget -= n;
    }
    set_capture();
    return batch_.size() > 0;
}

void Scheduler::drafting_failed(Slot& s, const char* what) {
    BEE_LOG_ERROR("slot %d: drafting failed: %s", s.id(), what);
    s.fail(500, "server_error", std::string("speculative decoding failed: ") + what);
}

// A shared step of generation rows (plain rows and drafts of several slots) priced like a cycle with that
// many rows but one (VerifyCostModel), without the slots' drafting time (each slot's depth controller adds
// its own): the depth controllers of slots that are rarely alone learn the curve from these, and price a
// draft by the step it joins (DepthPolicy::set_batch).
void Scheduler::learn_step_cost(double ms) {
    if (spec_ && step_cost_rows_ > 1)
        spec_->verify_cost()->add(step_cost_pos_, step_cost_rows_ - 1, std::max(0.0, ms - step_draft_ms_));
}

// Hidden-state capture for the slots whose drafters read the target's hidden states: the union of their
// layers for the batch, and only their rows captured (no capture at all when no slot asks).
void Scheduler::set_capture() {
    for (const Slot& s : slots_) {
        if (s.step_rows == 0) continue;
        for (int32_t il : s.capture_layers())
            if (std::find(batch_.capture_layers.begin(), batch_.capture_layers.end(), il) ==
                batch_.capture_layers.end())
                batch_.capture_layers.push_back(il);
    }
    if (batch_.capture_layers.empty()) return;
    std::sort(batch_.capture_layers.begin(), batch_.capture_layers.end());
    batch_.capture.assign(batch_.size(), 0);
    for (const Slot& s : slots_)
        if (s.step_rows > 0 && !s.capture_layers().empty())
            std::fill(batch_.capture.begin() + s.step_row0, batch_.capture.begin() + s.step_row0 + s.step_rows, 1);
}

void Scheduler::decode_step() {
    int n_busy = 0;
    for (const Slot& s : slots_) n_busy += s.step_rows > 0;
    try {
        eng_.decode(batch_, out_);
    } catch (const std::exception& e) {
        // The engine left the cache as it was; the slots in this batch cannot continue.
        BEE_LOG_ERROR("decode failed: %s", e.what());
        for (Slot& s : slots_)
            if (s.step_rows > 0) s.fail(500, "server_error", e.what());
        return;
    }
    const double now = time_ms();
    {
        std::lock_guard<std::mutex> lk(mu_);
        metrics_.n_decode_total++;
        metrics_.n_busy_slots_total += n_busy;
    }
    for (Slot& s : slots_) {
        if (s.step_rows == 0) continue;
        s.t_last_used = now;
        if (s.state() == Slot::State::generate) s.count_decode();
        if (s.drafting()) {  // verify_draft keeps s.cache in step with the KV cache
            try {
                s.verify_draft(batch_, out_, eng_, n_ctx_slot_, now);
            } catch (const std::exception& e) {  // the sequence's cells are in doubt: drop them
                BEE_LOG_ERROR("slot %d: speculative step failed: %s", s.id(), e.what());
                eng_.memory().clear(s.id());
                s.cache.clear();
                if (!s.idle()) s.fail(500, "server_error", std::string("speculative decoding failed: ") + e.what());
            }
            continue;
        }
        for (int i = 0; i < s.step_rows; i++) s.cache.push_back(batch_.token[s.step_row0 + i]);
        try {
            s.observe_target(batch_, out_, s.state() == Slot::State::prefill);
        } catch (const std::exception& e) {  // the KV cache is right; the slot's drafters are in doubt
            BEE_LOG_ERROR("slot %d: a drafter failed to read the decoded rows: %s", s.id(), e.what());
            s.fail(500, "server_error", std::string("speculative decoding failed: ") + e.what());
            continue;
        }
        if (s.state() == Slot::State::prefill) {
            s.report_progress(now);
            if (s.prompt_left() > 0) continue;
            checkpoint_prompt_end(s);
            if (s.prompt_done(now)) continue;
        }
        s.sample(out_.logits_at(s.step_out0), n_ctx_slot_, now);
    }
}

void Scheduler::on_finished(const FinishInfo& f) {
    std::lock_guard<std::mutex> lk(mu_);
    const uint64_t n_prompt = (uint64_t)(f.n_prompt - f.n_cached);
    metrics_.prompt_tokens_total += n_prompt;
    metrics_.prompt_tokens_cached_total += (uint64_t)f.n_cached;
    metrics_.prompt_seconds_total += f.prompt_ms / 1000.0;
    metrics_.tokens_predicted_total += (uint64_t)f.n_predicted;
    metrics_.tokens_predicted_seconds_total += f.predicted_ms / 1000.0;
    metrics_.n_drafted_total += (uint64_t)f.draft_n;
    metrics_.n_drafted_accepted_total += (uint64_t)f.draft_n_accepted;
    metrics_.n_draft_rounds_total += (uint64_t)f.draft_rounds;
    metrics_.n_drafted_grammar_cut_total += (uint64_t)f.draft_n_grammar_cut;
    metrics_.bucket_prompt_tokens += n_prompt;
    metrics_.bucket_prompt_seconds += f.prompt_ms / 1000.0;
    metrics_.bucket_predicted_tokens += (uint64_t)f.n_predicted;
    metrics_.bucket_predicted_seconds += f.predicted_ms / 1000.0;
}

void Scheduler::publish() {
    std::vector<SlotSnapshot> snap;
    uint64_t processing = 0, max_tokens = 0;
    for (const Slot& s : slots_) {
        SlotSnapshot v;
        v.id = s.id();
        v.processing = !s.idle();
        v.prefilling = s.state() == Slot::State::prefill;
        v.n_ctx = n_ctx_slot_;
        v.n_cached = (int32_t)s.cache.size();
        if (v.processing) {
            v.task_id = s.task()->id;
            v.n_prompt = (int32_t)s.task()->prompt.size();
            v.n_predicted = s.n_predicted();
            v.spec_types = s.spec_types();
        }
        processing += v.processing;
        max_tokens = std::max<uint64_t>(max_tokens, s.cache.size());
        snap.push_back(v);
    }
    std::lock_guard<std::mutex> lk(mu_);
    snapshot_ = std::move(snap);
    metrics_.requests_processing = processing;
    metrics_.requests_deferred = waiting_.size();
    metrics_.n_tokens_max = std::max(metrics_.n_tokens_max, max_tokens);
}

}  // namespace bee::runtime
