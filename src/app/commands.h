// app/commands: the `bee` subcommands; each returns the process exit code (0 ok, 1 error, 2 usage).
#pragma once

namespace bee {

int cmd_run(int argc, char** argv);
int cmd_tokenize(int argc, char** argv);
int cmd_gguf(int argc, char** argv);
int cmd_gguf_synth(int argc, char** argv);  // bee gguf synth (cmd_synth.cpp)
int cmd_quantize(int argc, char** argv);
int cmd_bench(int argc, char** argv);
int cmd_serve(int argc, char** argv);
int cmd_perplexity(int argc, char** argv);
int cmd_chat(int argc, char** argv);
int cmd_devices(int argc, char** argv);     // also `bee --list-devices`
int cmd_train_data(int argc, char** argv);  // training data for tools/train-drafter (cmd_train_data.cpp)

}  // namespace bee
