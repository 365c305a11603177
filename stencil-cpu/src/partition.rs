//! The static partition of core blocks over threads (Datta et al.'s chunks dealt
//! round-robin, 002_..., section 4.1), and through [`Topology::placement`] over NUMA nodes.
//!
//! A job's core blocks are numbered in C order (see `tiling`). With `chunk = 0` worker `w` of
//! `W` owns the contiguous range `w * n / W .. (w + 1) * n / W`; with `chunk = c > 0` block `b`
//! belongs to worker `(b / c) % W`. The owner depends only on the schedule and the shape, never
//! on timing: the same point is always computed by the same worker, which is what makes
//! first-touch allocation ([`crate::first_touch`]) put each page on the node that uses it.

use crate::machine::Topology;

/// Which worker owns each core block of a job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Partition {
    n_blocks: usize,
    workers: usize,
    chunk: usize,
}

impl Partition {
    /// `n_blocks` core blocks over `workers` workers (at least 1) in chunks of `chunk` blocks
    /// (0: one contiguous range per worker).
    pub fn new(n_blocks: usize, workers: usize, chunk: usize) -> Partition {
        Partition {
            n_blocks,
            workers: workers.max(1),
            chunk,
        }
    }

    /// Number of workers.
    pub fn workers(&self) -> usize {
        self.workers
    }

    /// The worker that computes core block `block`.
    pub fn owner(&self, block: usize) -> usize {
        debug_assert!(block < self.n_blocks);
        match block.checked_div(self.chunk) {
            Some(chunk_index) => chunk_index % self.workers,
            // The largest `w` with `w * n / W <= block`.
            None => ((block + 1) * self.workers - 1) / self.n_blocks,
        }
    }

    /// The core blocks worker `worker` computes, ascending.
    pub fn blocks_of(&self, worker: usize) -> impl Iterator<Item = usize> + '_ {
        let (n, w, c) = (self.n_blocks, self.workers, self.chunk);
        let (start, end, step) = if c == 0 {
            (worker * n / w, (worker + 1) * n / w, n.max(1))
        } else {
            (worker * c, n, c * w)
        };
        (start..end)
            .step_by(step.max(1))
            .flat_map(move |first| first..(first + if c == 0 { end - start } else { c }).min(end))
    }

    /// The NUMA node whose memory core block `block` should live in: the node of the worker
    /// that computes it, placed by `topology`.
    pub fn node_of_block(&self, block: usize, topology: &Topology) -> usize {
        topology.placement(self.owner(block), self.workers).0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every block has exactly one owner, `blocks_of` lists exactly the owned blocks.
    fn check(n_blocks: usize, workers: usize, chunk: usize) {
        let p = Partition::new(n_blocks, workers, chunk);
        let mut seen = vec![usize::MAX; n_blocks];
        for w in 0..p.workers() {
            let mut last = None;
            for b in p.blocks_of(w) {
                assert_eq!(seen[b], usize::MAX, "block {b} listed twice");
                assert!(last < Some(b), "blocks out of order");
                last = Some(b);
                seen[b] = w;
            }
        }
        for (b, &w) in seen.iter().enumerate() {
            assert_eq!(
                w,
                p.owner(b),
                "n {n_blocks} W {workers} c {chunk} block {b}"
            );
        }
    }

    #[test]
    fn partitions_cover_every_block_once() {
        for n in [1, 2, 3, 7, 8, 64, 101] {
            for w in [1, 2, 3, 5, 8, 200] {
                for c in [0, 1, 2, 3, 16] {
                    check(n, w, c);
                }
            }
        }
    }

    #[test]
    fn contiguous_and_round_robin_owners() {
        let p = Partition::new(8, 2, 0);
        assert_eq!(
            (0..8).map(|b| p.owner(b)).collect::<Vec<_>>(),
            [0, 0, 0, 0, 1, 1, 1, 1]
        );
        let p = Partition::new(8, 2, 1);
        assert_eq!(
            (0..8).map(|b| p.owner(b)).collect::<Vec<_>>(),
            [0, 1, 0, 1, 0, 1, 0, 1]
        );
        let p = Partition::new(7, 2, 2);
        assert_eq!(
            (0..7).map(|b| p.owner(b)).collect::<Vec<_>>(),
            [0, 0, 1, 1, 0, 0, 1]
        );
    }

    #[test]
    fn blocks_map_to_the_nodes_of_their_workers() {
        // Two nodes of four cores; eight workers; 16 blocks in contiguous ranges: the first
        // half of the grid lives on node 0, the second on node 1.
        let topology = Topology::new(vec![vec![0, 1, 2, 3], vec![4, 5, 6, 7]]);
        let p = Partition::new(16, 8, 0);
        let nodes: Vec<usize> = (0..16).map(|b| p.node_of_block(b, &topology)).collect();
        assert_eq!(nodes, [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1]);
        // Round-robin chunks of 2 over 4 workers on the two nodes: workers 0, 1 on node 0.
        let p = Partition::new(16, 4, 2);
        let nodes: Vec<usize> = (0..16).map(|b| p.node_of_block(b, &topology)).collect();
        assert_eq!(nodes, [0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1]);
    }
}
