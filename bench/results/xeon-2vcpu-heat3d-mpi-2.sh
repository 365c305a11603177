#!/usr/bin/env bash
# The runs behind docs/scaling.md's target table: one process of heat3d with 2 threads, then
# heat3d_mpi on 2 ranks x 1 thread with several ghost depths (tuned, and time depth pinned),
# 256^3, 100 steps, on one fresh tuning cache. Run from the repository root after
# `cargo build --release --example heat3d && cargo build --release --features mpi --example heat3d_mpi`.
export STENCIL_TUNE_CACHE="${STENCIL_TUNE_CACHE:-/tmp/stencil-mpi-target-cache.json}"
rm -f "$STENCIL_TUNE_CACHE"
R="mpirun --allow-run-as-root --oversubscribe"
B=target/release/examples/heat3d_mpi
for round in 1 2; do
  echo "### round $round: heat3d, one process, 2 threads"
  target/release/examples/heat3d --size 256 --steps 100 --threads 2 --no-vti --png /tmp/h1.png | grep -E "^tuning|time loop|plain sweeps:"
  for cfg in "0" "4" "8" "16" "8 --time-depth 8" "16 --time-depth 16" "16 --time-depth 8"; do
    echo "### round $round: heat3d_mpi -np 2 --ghost $cfg"
    $R -np 2 $B --size 256 --steps 100 --ghost $cfg --png /tmp/h2.png | grep -E "exchange alone|aggregate|halo exchange|^rank 0"
  done
done
