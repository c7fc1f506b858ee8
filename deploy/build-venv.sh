#!/bin/sh
# Build the virtualenv the container image ships, from the locked dependencies (no dev
# tools, no torch: pyproject's override-dependencies keeps it out of the lock) and the
# project's own wheel. The Dockerfile runs this; tests/test_image_build.py runs the same
# script into a temporary directory, since no container engine is needed to check it.
#
#   sh deploy/build-venv.sh TARGET [SOURCE_DIR]      (BUILD_PYTHON=python3.11 to pick one)
set -eu

# `uv run` names its own executable in UV; elsewhere uv is on the PATH.
uv="${UV:-uv}"

target="$1"
src="${2:-.}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

"$uv" export --project "$src" --frozen --no-dev --no-emit-project --format requirements-txt \
    --quiet --output-file "$work/requirements.txt"
"$uv" build "$src" --wheel --out-dir "$work/dist" --quiet
"$uv" venv "$target" --python "${BUILD_PYTHON:-python3}" --quiet
# sync, not install: exactly the locked set. An install would resolve again and bring
# torch back in through silero-vad's own requirement.
"$uv" pip sync --python "$target/bin/python" --quiet "$work/requirements.txt"
"$uv" pip install --python "$target/bin/python" --quiet --no-deps "$work"/dist/*.whl
"$target/bin/duplex-proxy" --version
