export STENCIL_TUNE_CACHE=/tmp/mpi-tc-scale.json
B=/work/main/target/release/examples/heat3d_mpi
R="mpirun --allow-run-as-root --oversubscribe"
for cfg in "1 256 4" "2 256 4" "4 256 4" "2 256 0" "1 203 4" "4 322 4"; do
  set -- $cfg
  echo "### np=$1 size=$2 ghost=$3"
  $R -np $1 $B --size $2 --steps 40 --ghost $3 --png /tmp/hs.png | grep -E "exchange alone|aggregate|halo exchange|^rank 0"
  $R -np $1 $B --size $2 --steps 40 --ghost $3 --png /tmp/hs.png | grep -E "exchange alone|aggregate|halo exchange|^rank 0"
done
