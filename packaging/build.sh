#!/usr/bin/env bash
# The installer in one command: a one-folder build of Parley with its models, in dist/parley/.
#   bash packaging/build.sh                      the trimmed build (what ships)
#   PARLEY_NO_TRIM=1 bash packaging/build.sh     without trimming, to measure what the trim saves
# Needs .venv/ from `bash packaging/bootstrap.sh test`; installs PyInstaller into it when missing.
# Then: dist/parley/parley self-test
set -euo pipefail
cd "$(dirname "$0")/.."
source packaging/llama_wheel.sh
DIST=${PARLEY_DIST:-dist}
WORK=${PARLEY_WORK:-build/pyinstaller}

if [ ! -x .venv/bin/python ]; then
    echo "build: no .venv/; create it first with 'bash packaging/bootstrap.sh test'" >&2
    exit 2
fi
.venv/bin/python -c "import PyInstaller" 2>/dev/null || .venv/bin/python -m pip install -q "pyinstaller>=6.10"
install_portable_llama .venv/bin/python  # the installer must not carry a -march=native llama.cpp (a no-op here)

start=$(date +%s)
.venv/bin/pyinstaller --noconfirm --clean --log-level "${PYINSTALLER_LOG_LEVEL:-WARN}" \
    --distpath "$DIST" --workpath "$WORK" packaging/parley.spec
echo "build: $DIST/parley/ in $(($(date +%s) - start)) s, $(du -sm "$DIST/parley" | cut -f1) MiB unpacked"
