// app/args_compat: the llama.cpp flags Bee accepts without acting on them (each reported once at
// start-up with the reason) or refuses (with the reason), one table row per flag.
#pragma once
#include "app/args.h"

namespace bee {

// Which commands take a row: flags of the model and its devices (every command with -m), of
// speculative decoding, of generation (run, chat, serve), of the server, of llama-bench (bee bench).
enum CompatGroup : unsigned {
    kCompatModel = 1,
    kCompatSpec = 2,
    kCompatGen = 4,
    kCompatServer = 8,
    kCompatBench = 16,
};

// Registers the rows of the given groups (a bitmask of CompatGroup).
void add_compat_options(ArgParser& p, unsigned groups);

}  // namespace bee
