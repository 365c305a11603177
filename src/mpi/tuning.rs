//! Tuning shared between ranks: the lowest rank of every group of ranks with the same local
//! shape tunes, and sends its CPU schedule to the rest of the group (in the wire format of
//! [`stencil_core::schedule::wire`]).

use ::mpi::collective::{CommunicatorCollectives, Root};
use ::mpi::topology::Communicator;

use stencil_core::schedule::wire;
use stencil_core::{Error, ErrorKind, Result};

use super::Domain;

impl<const D: usize> Domain<D> {
    /// Runs `choose` on the lowest rank of each group of ranks whose local `shape` is the
    /// same, and gives its CPU schedule to the rest of the group (other schedules are chosen
    /// by every rank). Collective.
    pub(crate) fn share(
        &self,
        shape: &[usize],
        choose: &mut dyn FnMut() -> Result<crate::TuneReport>,
    ) -> Result<crate::TuneReport> {
        let ranks = self.ranks();
        let mine: Vec<u64> = (0..D)
            .map(|d| shape.get(d).copied().unwrap_or(0) as u64)
            .collect();
        let mut all = vec![0u64; D * ranks];
        self.comm.all_gather_into(&mine[..], &mut all[..]);
        let leader = (0..ranks)
            .find(|&r| all[r * D..(r + 1) * D] == mine[..])
            .expect("this rank's own shape is among the gathered ones");
        let group = self
            .comm
            .split_by_color(::mpi::topology::Color::with_value(leader as i32))
            .ok_or_else(|| Error::new(ErrorKind::Backend, "MPI_Comm_split gave no communicator"))?;
        // Rank 0 of the group is its leader (ranks keep their order in a split). It sends
        // its schedule, or word 0 set when its tuning failed (which would otherwise leave
        // the group waiting).
        let root = group.process_at_rank(0);
        let mut code = [0u64; wire::WORDS + 1];
        if group.rank() == 0 {
            let report = choose();
            match &report {
                Ok(r) => code[1..].copy_from_slice(&wire::encode(&r.schedule)),
                Err(_) => code[0] = 1,
            }
            // Non-blocking, as the others' receive is (collectives match only their kind).
            ::mpi::request::scope(|scope| {
                root.immediate_broadcast_into(scope, &mut code[..]).wait();
            });
            return report;
        }
        // The others wait without spinning, so the leader's trials have the machine's other
        // cores as quiet as in a run of one process.
        ::mpi::request::scope(|scope| {
            let mut request = root.immediate_broadcast_into(scope, &mut code[..]);
            loop {
                match request.test() {
                    Ok(_) => break,
                    Err(pending) => {
                        request = pending;
                        std::thread::sleep(std::time::Duration::from_micros(500));
                    }
                }
            }
        });
        if code[0] != 0 {
            return Err(Error::new(
                ErrorKind::Backend,
                format!("tuning failed on rank {leader}, which tunes for this rank"),
            ));
        }
        let code: [u64; wire::WORDS] = std::array::from_fn(|i| code[i + 1]);
        match wire::decode(&code) {
            Some(schedule) => Ok(crate::TuneReport::plain(
                crate::TuningSource::Shared,
                schedule,
                format!("from rank {leader}"),
            )),
            // Not a CPU schedule: this rank chooses its own.
            None => choose(),
        }
    }
}
