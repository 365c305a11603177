#!/usr/bin/env bash
# The target comparison under the default `quick` tuning, after ranks on one machine size
# their blocking by their share of the last-level cache: heat3d on one process with 2
# threads against heat3d_mpi on 2 ranks x 1 thread (ghost 16), 256^3, 100 steps, one fresh
# cache (the first round tunes, the later rounds hit the cache), three rounds.
export STENCIL_TUNE_CACHE="${STENCIL_TUNE_CACHE:-/tmp/stencil-mpi-target-quick.json}"
unset STENCIL_TUNE
rm -f "$STENCIL_TUNE_CACHE"
for round in 1 2 3; do
  echo "### round $round: heat3d, one process, 2 threads"
  target/release/examples/heat3d --size 256 --steps 100 --threads 2 --no-vti --png /tmp/h1.png | grep -E "^tuning|time loop|plain sweeps:"
  echo "### round $round: heat3d_mpi -np 2 --ghost 16 --check"
  mpirun --allow-run-as-root --oversubscribe -np 2 target/release/examples/heat3d_mpi --size 256 --steps 100 --ghost 16 --check --png /tmp/h2.png | grep -v "^mid-plane"
done
