#!/usr/bin/env bash
# Instructions per point of the loops in cache (the bench's `cache` section), counted by
# callgrind: for each loop and way (the naive C loop as gcc contracts it, the same with
# -ffp-contract=off, the library's default schedule), the instructions of 12 sweeps minus
# those of 2, over 10 sweeps' points, so that setup and the C compiler's run cancel out.
# Instruction counts repeat exactly on a noisy machine, where timings do not.
#
#   bash bench/instructions.sh [MARCH]      (default x86-64-v3; needs valgrind and cc)
#
# Both the library and the C loops are built for MARCH (Rust's target-cpu, gcc's -march):
# callgrind runs AVX2 (x86-64-v3) but not AVX-512 code, so on an AVX-512 machine these are the
# counts of the AVX2 loops, which a machine without AVX-512 runs.
set -euo pipefail
cd "$(dirname "$0")/.."
march="${1:-x86-64-v3}"
export CARGO_TARGET_DIR="target/instructions-$march" RUSTFLAGS="-C target-cpu=$march"
export STENCIL_BENCH_MARCH="$march"
cargo build --quiet --release --example bench
bin="$CARGO_TARGET_DIR/release/examples/bench"
count() {
    valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bin" --sweeps-of "$1:$2:$3" 2>&1 \
        | awk '/Collected/ {print $4}'
}
echo "instructions per point, $march ($(cc --version | head -1); $(rustc --version))"
printf "%-10s %10s %10s %10s\n" loop "C" "C nofma" library
for symbol in w1_f64 w1_f32 w2_f64 w2_f32 w3_f64 w3_f32 star4_f64 star4_f32; do
    points=$("$bin" --sweeps-of "$symbol:library:0" | sed 's/.*(\([0-9]*\) points).*/\1/')
    line=$(printf "%-10s" "$symbol")
    for way in c c-nofma library; do
        two=$(count "$symbol" "$way" 2)
        twelve=$(count "$symbol" "$way" 12)
        line="$line $(awk -v a="$two" -v b="$twelve" -v p="$points" 'BEGIN {printf "%10.2f", (b - a) / 10 / p}')"
    done
    echo "$line"
done
