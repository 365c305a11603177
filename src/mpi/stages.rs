//! Loops of several kernels per step across ranks: [`Domain`]'s side of
//! [`Stages::across`](crate::Stages::across), through the [`StageDistribution`] trait: the
//! layout a loop needs to place sparse points (owners, local copies), single exchanges, the
//! agreement of every rank on the loop before anything is exchanged, and the gathering of
//! receivers' partial sums.

use ::mpi::collective::{CommunicatorCollectives, Root, SystemOperation};
use ::mpi::datatype::PartitionMut;
use ::mpi::topology::Communicator;

use stencil_core::grid::Grid;
use stencil_core::{Error, ErrorKind, Result};

use crate::distribution::StageDistribution;

use super::{Domain, MpiElement};

/// Error kinds by their code on the wire (an unknown kind travels as `Backend`).
const KINDS: [ErrorKind; 14] = [
    ErrorKind::InvalidShape,
    ErrorKind::ShapeMismatch,
    ErrorKind::HaloTooNarrow,
    ErrorKind::DimensionMismatch,
    ErrorKind::ElementTypeMismatch,
    ErrorKind::BadArgument,
    ErrorKind::StaleHalo,
    ErrorKind::AliasedGrids,
    ErrorKind::InvalidKernel,
    ErrorKind::InvalidSchedule,
    ErrorKind::BackendUnavailable,
    ErrorKind::Backend,
    ErrorKind::VerificationFailed,
    ErrorKind::Io,
];

impl<T: MpiElement, const D: usize> StageDistribution<T, D> for Domain<D> {
    fn ghost(&self) -> usize {
        self.layout.ghost
    }

    fn global_shape(&self) -> [usize; D] {
        self.shape()
    }

    fn rank_and_ranks(&self) -> (usize, usize) {
        (self.rank, self.ranks())
    }

    fn owner(&self, point: [usize; D]) -> usize {
        self.layout.decomp.owner(point)
    }

    fn origin(&self) -> [isize; D] {
        self.local_origin()
    }

    fn local_copies(&self, point: [usize; D]) -> Vec<[usize; D]> {
        let (origin, extent) = self.layout.local_box(self.rank);
        let shape = self.shape();
        // Along each dimension, the local coordinates of the point and of its images one
        // period away (a periodic dimension's ghost zones hold images).
        let along: Vec<Vec<usize>> = (0..D)
            .map(|d| {
                let shifts: &[isize] = if self.layout.periodic[d] {
                    &[-1, 0, 1]
                } else {
                    &[0]
                };
                shifts
                    .iter()
                    .map(|s| point[d] as isize + s * shape[d] as isize - origin[d])
                    .filter(|&x| (0..extent[d] as isize).contains(&x))
                    .map(|x| x as usize)
                    .collect()
            })
            .collect();
        let mut out = vec![[0usize; D]];
        for (d, xs) in along.iter().enumerate() {
            out = out
                .iter()
                .flat_map(|p| {
                    xs.iter().map(move |&x| {
                        let mut q = *p;
                        q[d] = x;
                        q
                    })
                })
                .collect();
        }
        out
    }

    fn check_grid(&self, grid: &Grid<T, D>) -> Result<()> {
        Domain::check_grid(self, grid)
    }

    fn exchange(&self, grid: &mut Grid<T, D>) -> Result<()> {
        Domain::exchange(self, grid)
    }

    fn agree(&self, local: Result<()>, fingerprint: u64) -> Result<()> {
        let mut lowest = 0u64;
        let mut highest = 0u64;
        self.comm
            .all_reduce_into(&fingerprint, &mut lowest, SystemOperation::min());
        self.comm
            .all_reduce_into(&fingerprint, &mut highest, SystemOperation::max());
        let mine = if local.is_err() {
            self.rank as u64
        } else {
            u64::MAX
        };
        let mut failed = 0u64;
        self.comm
            .all_reduce_into(&mine, &mut failed, SystemOperation::min());
        if failed == u64::MAX {
            if lowest != highest {
                return Err(Error::new(
                    ErrorKind::BadArgument,
                    "the ranks disagree on the loop: every rank must give the same stages, \
                     chains, grid names, step count, first step, sources and receivers",
                ));
            }
            return Ok(());
        }
        // The lowest failing rank sends its error (kind, then message) to the others.
        let root = self.comm.process_at_rank(failed as i32);
        let mut head = [0u64; 2];
        let mut message = Vec::new();
        if let Err(e) = &local
            && failed == self.rank as u64
        {
            let kind = KINDS.iter().position(|k| *k == e.kind()).unwrap_or(11);
            message = e.message().as_bytes().to_vec();
            head = [kind as u64, message.len() as u64];
        }
        root.broadcast_into(&mut head[..]);
        message.resize(head[1] as usize, 0);
        root.broadcast_into(&mut message[..]);
        local?;
        Err(Error::new(
            KINDS[head[0] as usize],
            format!(
                "rank {failed} refused the loop, so no rank runs it: {}",
                String::from_utf8_lossy(&message)
            ),
        ))
    }

    fn all_gather(&self, mine: &[T], counts: &[usize]) -> Vec<T> {
        let total: usize = counts.iter().sum();
        let mut all = vec![T::ZERO; total];
        let counts: Vec<i32> = counts.iter().map(|&c| c as i32).collect();
        let displs: Vec<i32> = counts
            .iter()
            .scan(0, |at, &c| {
                let d = *at;
                *at += c;
                Some(d)
            })
            .collect();
        let mut partition = PartitionMut::new(&mut all[..], counts, displs);
        self.comm.all_gather_varcount_into(mine, &mut partition);
        all
    }
}
