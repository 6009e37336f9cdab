# Sourced by scripts/main.sh and scripts/test.sh: points CMake at a copy of
# scripts/llama-cc under ~/.cache/conclave/bin, a path that is the same for every
# checkout. CMake keeps the launcher's path in the build directory's cache the first
# time it configures llama.cpp, so a target directory shared by several checkouts
# (CI's, in ~/.cache/conclave/target) must not remember one checkout's path: that
# checkout may be gone when llama.cpp is configured again. A plain `cargo build` uses
# the checkout's own copy (.cargo/config.toml), which these variables override.
_launcher_dir="${XDG_CACHE_HOME:-$HOME/.cache}/conclave/bin"
mkdir -p "$_launcher_dir"
cmp -s scripts/llama-cc "$_launcher_dir/llama-cc" 2>/dev/null || install -m 755 scripts/llama-cc "$_launcher_dir/llama-cc"
export CMAKE_C_COMPILER_LAUNCHER="$_launcher_dir/llama-cc"
export CMAKE_CXX_COMPILER_LAUNCHER="$_launcher_dir/llama-cc"
