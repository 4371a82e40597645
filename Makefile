# Bee: the two commands. `make run` sets up, builds, fetches the default model and runs it; `make test` runs every test.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?= $(if $(CI),-DBEE_WERROR=ON,)
MODEL ?= models/SmolLM2-135M-Instruct.Q4_1.gguf
PROMPT ?= The capital of France is

.PHONY: all setup models build run test test-unit test-models asan fuzz clean format

all: build

setup:
	@bash scripts/setup.sh deps

models:
	@bash scripts/setup.sh models

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)

build: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

run: setup build models
	./$(BUILD)/bee run -m $(MODEL) -p "$(PROMPT)" -n 64

test: setup build models
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)
	python3 -m pytest -q tests/py

asan:
	cmake --preset asan
	cmake --build --preset asan -j $(JOBS)
	ctest --preset asan -j $(JOBS)

# New inputs the fuzzer finds go to build-fuzz/corpus-gguf; tests/data/tiny_fuzz_corpus keeps only the checked-in seeds.
fuzz:
	CXX=clang++ CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Debug -DBEE_FUZZ=ON -DBEE_SANITIZE=ON
	cmake --build build-fuzz -j $(JOBS) --target fuzz_gguf
	mkdir -p build-fuzz/corpus-gguf
	./build-fuzz/tests/fuzz_gguf -max_total_time=60 build-fuzz/corpus-gguf tests/data/tiny_fuzz_corpus

format:
	clang-format -i $$(git ls-files 'src/*.cpp' 'src/*.h' 'tests/*.cpp')

clean:
	rm -rf $(BUILD) build-asan build-fuzz
