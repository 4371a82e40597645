// app/main: `bee <command> [options]` — dispatch to the subcommands.
#include <cstdio>
#include <cstring>
#include <exception>

#include "app/commands.h"

namespace {

struct Command {
    const char* name;
    int (*fn)(int, char**);
    const char* help;
};

const Command kCommands[] = {
    {"serve", bee::cmd_serve, "OpenAI-compatible HTTP server with a chat page (llama-server style flags)"},
    {"run", bee::cmd_run, "generate text from a prompt (llama-cli style flags)"},
    {"chat", bee::cmd_chat, "interactive terminal chat with the model's chat template"},
    {"tokenize", bee::cmd_tokenize, "print the token ids of a text as a JSON array"},
    {"gguf", bee::cmd_gguf, "inspect a GGUF file: bee gguf info FILE"},
    {"quantize", bee::cmd_quantize, "convert a GGUF model's weights: bee quantize IN OUT TYPE"},
    {"bench", bee::cmd_bench, "measure pp/tg speed like llama-bench, or memory bandwidth (--bandwidth)"},
    {"perplexity", bee::cmd_perplexity, "perplexity over a text file, KL divergence against a base run"},
    {"train-data", bee::cmd_train_data,
     "dump hidden states and top-k log-probs while answering prompts (drafter data)"},
    {"devices", bee::cmd_devices, "list the Vulkan devices (also: bee --list-devices)"},
};

void usage(FILE* out) {
    fprintf(out, "usage: bee <command> [options]\n\ncommands:\n");
    for (const Command& c : kCommands) fprintf(out, "  %-10s %s\n", c.name, c.help);
    fprintf(out, "\n`bee <command> --help` lists a command's options.\n");
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    const char* name = strcmp(argv[1], "--list-devices") ? argv[1] : "devices";  // llama.cpp's flag
    for (const Command& c : kCommands) {
        if (strcmp(name, c.name) != 0) continue;
        try {
            return c.fn(argc - 2, argv + 2);
        } catch (const std::exception& e) {  // last resort: never die with an uncaught exception
            fprintf(stderr, "error: %s\n", e.what());
            return 1;
        }
    }
    fprintf(stderr, "error: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return 2;
}
