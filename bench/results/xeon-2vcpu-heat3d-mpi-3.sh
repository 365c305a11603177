#!/usr/bin/env bash
# The target comparison of docs/scaling.md: heat3d on one process with 2 threads against
# heat3d_mpi on 2 ranks x 1 thread (ghost 16), 256^3, 100 steps, both tuned `thorough` on one
# fresh cache (the first round tunes, the later rounds hit the cache), three rounds.
export STENCIL_TUNE_CACHE="${STENCIL_TUNE_CACHE:-/tmp/stencil-mpi-target-thorough.json}"
export STENCIL_TUNE=thorough
rm -f "$STENCIL_TUNE_CACHE"
for round in 1 2 3; do
  echo "### round $round: heat3d, one process, 2 threads"
  target/release/examples/heat3d --size 256 --steps 100 --threads 2 --no-vti --png /tmp/h1.png | grep -E "^tuning|time loop|plain sweeps:"
  echo "### round $round: heat3d_mpi -np 2 --ghost 16 --check"
  mpirun --allow-run-as-root --oversubscribe -np 2 target/release/examples/heat3d_mpi --size 256 --steps 100 --ghost 16 --check --png /tmp/h2.png | grep -v "^mid-plane"
done
