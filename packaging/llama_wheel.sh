# Sourced by bootstrap.sh and build.sh: llama-cpp-python built for the architecture's baseline, not this machine.
#
# pip builds llama-cpp-python with -march=native. That build is not portable (the installer must not carry one
# machine's AVX-512/AMX code to other computers), and on some virtual machines its AMX kernels fault on the
# first decode. So both the venv and the installer use one portable build (x86-64: the v3 level, AVX2 and FMA,
# CPUs since 2013), compiled once (~11 minutes on 2 cores) and kept in the user's cache, keyed by the flags.

llama_version() {
    sed -n 's/^ *"llama-cpp-python==\([^"]*\)".*/\1/p' pyproject.toml
}

# Prints the path of the portable wheel, compiling it first if the cache does not hold it yet.
portable_llama_wheel() {
    local python=$1 version args dir wheel
    version=$(llama_version)
    args="-DGGML_NATIVE=OFF"
    if [ "$(uname -m)" = x86_64 ]; then
        args="$args -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON"
    fi
    dir="${XDG_CACHE_HOME:-$HOME/.cache}/parley/llama-wheels/$(uname -m)-$(printf %s "$args" | cksum | cut -d' ' -f1)"
    wheel=$(find "$dir" -name "llama_cpp_python-$version-*.whl" 2>/dev/null | head -1)
    if [ -z "$wheel" ]; then
        echo "llama.cpp: compiling a portable llama-cpp-python $version once (about 11 minutes on 2 cores)" >&2
        CMAKE_ARGS="$args" "$python" -m pip wheel -q --no-cache-dir --no-deps \
            "llama-cpp-python==$version" -w "$dir" >&2
        wheel=$(find "$dir" -name "llama_cpp_python-$version-*.whl" | head -1)
    fi
    [ -n "$wheel" ] || { echo "llama.cpp: the portable build of llama-cpp-python $version failed" >&2; return 1; }
    echo "$wheel"
}

# Installs the portable wheel into the venv of `python` unless that exact wheel is installed already.
install_portable_llama() {
    local python=$1 wheel marker
    wheel=$(portable_llama_wheel "$python")
    marker="$(dirname "$(dirname "$python")")/.parley-llama-wheel"
    if [ "$(cat "$marker" 2>/dev/null)" != "$wheel" ]; then
        "$python" -m pip install -q --no-deps --force-reinstall "$wheel"
        echo "$wheel" >"$marker"
    fi
}
