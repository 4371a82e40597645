# Bee: the two commands. `make run` sets up, builds, fetches the default model and runs it; `make test` runs every test.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?= $(if $(CI),-DBEE_WERROR=ON,)
MODEL ?= models/SmolLM2-135M-Instruct.Q4_1.gguf
PROMPT ?= The capital of France is
HOST ?= 127.0.0.1
PORT ?= 8080

.PHONY: all setup models build run test test-unit test-models asan fuzz clean format synth-models synth-qwen35

all: build

setup:
	@bash scripts/setup.sh deps

models:
	@bash scripts/setup.sh models

# The evaluation text of `bee perplexity` (also fetched by `make models`).
.PHONY: perplexity-data
perplexity-data:
	@bash scripts/setup.sh perplexity-data

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)

build: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

# Ends with the OpenAI-compatible server on the default model; it prints the chat page URL (Ctrl-C stops it).
run: setup build models
	./$(BUILD)/bee serve -m $(MODEL) -c 8192 -np 4 --host $(HOST) --port $(PORT)

# The old one-shot run: generate 64 tokens from PROMPT.
.PHONY: generate
generate: setup build models
	./$(BUILD)/bee run -m $(MODEL) -p "$(PROMPT)" -n 64

test: setup build models
	bash scripts/check_sizes.sh
	cd $(BUILD) && BEE_REQUIRE_GPU=1 ctest --output-on-failure -j $(JOBS)
	BEE_REQUIRE_GPU=1 python3 -m pytest -q tests/py
	BEE_BIN=$(BUILD)/bee python3 -m pytest -q tests/server

asan:
	cmake --preset asan
	cmake --build --preset asan -j $(JOBS)
	ctest --preset asan -j $(JOBS)

# 0.5B-class benchmark models (docs/PERFORMANCE.md): Qwen2.5-0.5B shape, seeded random weights, a padded
# GPT-2 BPE tokenizer; written by `bee gguf synth`, then quantized. Made once, into the ignored models/.
SYNTH := models/synth-qwen2.5-0.5b
synth-models: $(SYNTH)-q4_0.gguf $(SYNTH)-q8_0.gguf

$(SYNTH)-f16.gguf: | build
	./$(BUILD)/bee gguf synth $@ --vocab ../shared/data/vocab/ggml-vocab-gpt-2.gguf

$(SYNTH)-%.gguf: $(SYNTH)-f16.gguf
	./$(BUILD)/bee quantize $< $@ $*

# The hybrid qwen35 at Qwen3.5-0.8B's shape (Gated DeltaNet + gated attention, one MTP block), same recipe.
SYNTH35 := models/synth-qwen3.5-0.8b
synth-qwen35: $(SYNTH35)-q4_0.gguf $(SYNTH35)-q8_0.gguf

$(SYNTH35)-f16.gguf: | build
	./$(BUILD)/bee gguf synth $@ --shape qwen3.5-0.8b --vocab ../shared/data/vocab/ggml-vocab-gpt-2.gguf

$(SYNTH35)-%.gguf: $(SYNTH35)-f16.gguf
	./$(BUILD)/bee quantize $< $@ $*

# New inputs the fuzzers find go to build-fuzz/corpus-<name>; tests/data/tiny_fuzz_corpus keeps only the checked-in seeds.
fuzz:
	CXX=clang++ CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Debug -DBEE_FUZZ=ON -DBEE_SANITIZE=ON
	cmake --build build-fuzz -j $(JOBS) --target fuzz_gguf
	mkdir -p build-fuzz/corpus-gguf
	./build-fuzz/tests/fuzz_gguf -max_total_time=60 build-fuzz/corpus-gguf tests/data/tiny_fuzz_corpus
	cmake --build build-fuzz -j $(JOBS) --target fuzz_chat
	mkdir -p build-fuzz/corpus-chat
	./build-fuzz/tests/fuzz_chat -max_total_time=60 -timeout=30 build-fuzz/corpus-chat tests/data/tiny_fuzz_corpus/chat
	cmake --build build-fuzz -j $(JOBS) --target fuzz_server
	mkdir -p build-fuzz/corpus-server
	./build-fuzz/tests/fuzz_server -max_total_time=60 -timeout=30 -rss_limit_mb=4096 build-fuzz/corpus-server tests/data/tiny_fuzz_corpus/server
	cmake --build build-fuzz -j $(JOBS) --target fuzz_sample_gbnf fuzz_sample_schema fuzz_sample_regex
	for t in gbnf schema regex; do mkdir -p build-fuzz/corpus-$$t && ./build-fuzz/tests/fuzz_sample_$$t -max_total_time=60 \
	  -timeout=10 -dict=tests/fuzz/$$t.dict build-fuzz/corpus-$$t tests/data/tiny_fuzz_corpus/$$t || exit 1; done

format:
	clang-format -i $$(git ls-files 'src/*.cpp' 'src/*.h' 'tests/*.cpp')

clean:
	rm -rf $(BUILD) build-asan build-fuzz
