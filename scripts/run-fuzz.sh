#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs the libFuzzer targets for a bounded time each, on copies of their seed corpora.
# Usage: scripts/run-fuzz.sh SECONDS [target...]   (default: every target in fuzz/corpus)
#
# The targets must be built already (make build-fuzz, in build/fuzz). Each one starts by
# running every file of fuzz/corpus/<name>/, subdirectories included (the regression
# cases), then fuzzes until SECONDS are spent. New inputs go to a scratch corpus under
# build/fuzz/corpus/, kept between runs (and replayed too), never to the source tree. A crash, leak,
# timeout or out-of-memory input is copied into fuzz/corpus/<name>/regressions/ so
# that every later run replays it, its path and the command that reproduces it are
# printed, and the script exits 1 once every target has run.
set -uo pipefail

seconds=${1:?usage: $0 SECONDS [target...]}
shift
cd "$(dirname "$0")/.."
build=build/fuzz
if [ $# -gt 0 ]; then
  names=("${@%_fuzz}")
else
  names=()
  for d in fuzz/corpus/*/; do names+=("$(basename "$d")"); done
fi

# Symbolized stacks in crash reports: the sanitizers do not find a versioned
# llvm-symbolizer on PATH by themselves.
if [ -z "${ASAN_SYMBOLIZER_PATH:-}" ]; then
  for s in /usr/lib/llvm-16/bin/llvm-symbolizer "$(command -v llvm-symbolizer || true)"; do
    if [ -n "$s" ] && [ -x "$s" ]; then export ASAN_SYMBOLIZER_PATH=$s; break; fi
  done
fi

failed=()
for name in "${names[@]}"; do
  target=${name}_fuzz
  bin=$build/fuzz/$target
  seeds=fuzz/corpus/$name
  if [ ! -x "$bin" ] || [ ! -d "$seeds" ]; then
    echo "fuzz: $target: no binary at $bin or no corpus at $seeds" >&2
    failed+=("$target(missing)")
    continue
  fi
  work=$build/corpus/$name
  artifacts=$build/artifacts/$name
  log=$build/logs/$target.log
  mkdir -p "$work" "$build/logs"
  rm -rf "$artifacts" && mkdir -p "$artifacts"
  # The scratch corpus only grows (libFuzzer never deletes inputs it loaded): past 2000
  # files, keep the subset that covers the same features.
  if [ "$(find "$work" -type f | wc -l)" -gt 2000 ]; then
    rm -rf "$work.min" && mkdir -p "$work.min"
    if "$bin" -merge=1 "$work.min" "$work" > "$build/logs/$target.merge.log" 2>&1; then
      rm -rf "$work" && mv "$work.min" "$work"
    fi
  fi
  # libFuzzer reads only the files directly inside a corpus directory: a fresh flat
  # copy of the seeds and regressions (named by purpose or content, so a clash is the
  # same input twice), read after the scratch corpus, which gets the new inputs.
  copy=$build/seeds/$name
  rm -rf "$copy" && mkdir -p "$copy"
  find "$seeds" -type f -exec cp {} "$copy/" \;

  # -timeout: one input running this long is a hang; the run fails with its input.
  UBSAN_OPTIONS=print_stacktrace=1 "$bin" -max_total_time="$seconds" -timeout=10 \
    -artifact_prefix="$artifacts/" -print_final_stats=1 "$work" "$copy" > "$log" 2>&1
  rc=$?

  runs=$(grep -oE '^Done [0-9]+ runs in [0-9]+ second' "$log" | grep -oE '[0-9]+ runs' || true)
  cov=$(grep -oE '^#[0-9]+.*cov: [0-9]+ ft: [0-9]+ corp: [0-9]+' "$log" | tail -1 | grep -oE 'cov: .*' || true)
  seed=$(grep -oE 'Seed: [0-9]+' "$log" | head -1 || true)
  replayed=$(grep -oE 'seed corpus: files: [0-9]+' "$log" | grep -oE '[0-9]+$' || true)
  if [ "$rc" -eq 0 ]; then
    echo "fuzz: $target: ok; replayed ${replayed:-?} inputs ($(find "$seeds" -type f | wc -l) checked in), then ${runs:-? runs} in ${seconds}s, $cov ($seed)"
    continue
  fi

  failed+=("$target")
  echo "fuzz: $target: FAILED (exit $rc, $seed); log: $log"
  # The report: from the first error line, up to 30 lines (the stack).
  awk '/ERROR: |runtime error: /{on=1} on && n++ < 30' "$log"
  found=0
  for a in "$artifacts"/crash-* "$artifacts"/leak-* "$artifacts"/timeout-* "$artifacts"/oom-*; do
    [ -f "$a" ] || continue
    found=1
    kind=$(basename "$a" | cut -d- -f1)
    mkdir -p "$seeds/regressions"
    dest=$seeds/regressions/$kind-$(sha1sum "$a" | cut -d' ' -f1)
    cp "$a" "$dest"
    echo "fuzz: $target: $kind input kept as regression case $dest"
    # Run on a file, libFuzzer allows 1200 s per input: a hang needs the limit given.
    if [ "$kind" = timeout ]; then opt="-timeout=10 "; else opt=""; fi
    echo "fuzz: reproduce: $bin $opt$dest"
  done
  if [ "$found" -eq 0 ]; then
    echo "fuzz: $target: no input was written; the end of the log:"
    tail -30 "$log"
  fi
done

if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: FAILED: ${failed[*]}"
  exit 1
fi
echo "fuzz: no failure"
