#!/usr/bin/env bash
# The cold release build README.md's "Build times" quotes: `cargo build --release --example
# heat3d` into a fresh target directory (crate sources already downloaded), timed by
# /usr/bin/time -v. Run from the repository root on an otherwise idle machine; prints the
# machine, the load before the build, and time's report.
set -euo pipefail
T="${T:-/tmp/stencil-cold-build-target}"
rm -rf "$T"
cargo fetch --quiet
echo "### $(date -u +%F) $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores"
rustc --version
echo "### load before: $(cut -d' ' -f1-3 /proc/loadavg)"
CARGO_TARGET_DIR="$T" /usr/bin/time -v cargo build --release --example heat3d 2>&1 \
    | grep -E "Finished|Elapsed \(wall|User time|System time|Percent of CPU|Maximum resident"
echo "### load after: $(cut -d' ' -f1-3 /proc/loadavg)"
rm -rf "$T"
