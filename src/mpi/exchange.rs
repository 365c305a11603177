//! The halo exchange: [`Domain::exchange`] and [`Domain::exchange_with`] (work overlapped
//! with the messages in flight), and how a rank's exchange plans are drawn up.

use std::sync::Arc;
use std::time::Instant;

use ::mpi::collective::CommunicatorCollectives;
use ::mpi::point_to_point::{Destination, Source as _};
use ::mpi::topology::Communicator;

use stencil_core::Result;
use stencil_core::grid::{Boundary, Grid, Side};

use super::plan::{FaceKind, Faces, Peer, Plan, face_kinds};
use super::stats::ExchangeStats;
use super::{Domain, MpiElement, TAG};

/// Message buffers kept between exchanges (send buffers, receive buffers) of one element
/// type, so that an exchange neither allocates nor faults in fresh pages.
type Buffers<T> = (Vec<Vec<T>>, Vec<Vec<T>>);

impl<const D: usize> Domain<D> {
    /// What the exchanges have cost on this rank so far.
    pub fn stats(&self) -> ExchangeStats {
        *self.stats.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sets the exchange statistics back to zero.
    pub fn reset_stats(&self) {
        *self.stats.lock().unwrap_or_else(|e| e.into_inner()) = ExchangeStats::default();
    }

    /// Fills every point of `grid` outside this rank's owned box (ghost zones and halo) as
    /// the [module documentation](super) says, from the ranks that own them and the grid's
    /// boundary conditions. Collective: every rank calls it for the same grid.
    ///
    /// # Errors
    /// [`ErrorKind::ShapeMismatch`] for a grid of another shape than
    /// [`local_shape`](Self::local_shape); [`ErrorKind::HaloTooNarrow`] for a halo narrower
    /// than the domain's; [`ErrorKind::BadArgument`] for periodic faces other than the
    /// domain's periodic dimensions. Every rank fails alike when the grids' faces agree.
    ///
    /// [`ErrorKind::ShapeMismatch`]: stencil_core::ErrorKind::ShapeMismatch
    /// [`ErrorKind::HaloTooNarrow`]: stencil_core::ErrorKind::HaloTooNarrow
    /// [`ErrorKind::BadArgument`]: stencil_core::ErrorKind::BadArgument
    pub fn exchange<T: MpiElement>(&self, grid: &mut Grid<T, D>) -> Result<()> {
        self.exchange_with(grid, |_| ())
    }

    /// [`exchange`](Self::exchange), with `work` run while the messages are in flight; it
    /// gets the grid read-only (its owned box is final; points outside it are not).
    ///
    /// # Errors
    /// As [`exchange`](Self::exchange).
    pub fn exchange_with<T: MpiElement, R>(
        &self,
        grid: &mut Grid<T, D>,
        work: impl FnOnce(&Grid<T, D>) -> R,
    ) -> Result<R> {
        self.check_grid(grid)?;
        let plan = self.plan(&face_kinds(grid.boundaries()))?;
        let copy_timer = Instant::now();
        let geom = *grid.geometry();
        let kept = self
            .buffers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        let (mut sends, mut recvs): Buffers<T> = kept
            .and_then(|b| b.downcast::<Buffers<T>>().ok())
            .map_or_else(Default::default, |b| *b);
        sends.resize_with(plan.send.len(), Vec::new);
        recvs.resize_with(plan.recv.len(), Vec::new);
        for (buf, peer) in sends.iter_mut().zip(&plan.send) {
            buf.clear();
            for (src, len) in &peer.runs {
                let at = geom.index(src);
                buf.extend_from_slice(&grid.as_slice()[at..at + len]);
            }
        }
        for (buf, peer) in recvs.iter_mut().zip(&plan.recv) {
            buf.resize(peer.points, T::ZERO);
        }
        let mut copy_seconds = copy_timer.elapsed().as_secs_f64();
        let (result, work_seconds, wait_seconds) = ::mpi::request::scope(|scope| {
            let mut requests = Vec::with_capacity(sends.len() + recvs.len());
            for (buf, peer) in recvs.iter_mut().zip(&plan.recv) {
                requests.push(
                    self.comm
                        .process_at_rank(peer.rank as i32)
                        .immediate_receive_into_with_tag(scope, &mut buf[..], TAG),
                );
            }
            for (buf, peer) in sends.iter().zip(&plan.send) {
                requests.push(
                    self.comm
                        .process_at_rank(peer.rank as i32)
                        .immediate_send_with_tag(scope, &buf[..], TAG),
                );
            }
            let work_timer = Instant::now();
            let result = work(grid);
            let work_seconds = work_timer.elapsed().as_secs_f64();
            let wait_timer = Instant::now();
            for request in requests {
                request.wait();
            }
            (result, work_seconds, wait_timer.elapsed().as_secs_f64())
        });
        let copy_timer = Instant::now();
        let faces = *grid.boundaries();
        let data = grid.time_loop_view().data;
        for (buf, peer) in recvs.iter().zip(&plan.recv) {
            let mut from = 0;
            for (dst, len) in &peer.runs {
                let at = geom.index(dst);
                data[at..at + len].copy_from_slice(&buf[from..from + len]);
                from += len;
            }
        }
        for (dst, src, len) in &plan.local {
            let (to, from) = (geom.index(dst), geom.index(src));
            data.copy_within(from..from + len, to);
        }
        for run in &plan.values {
            let Boundary::Dirichlet(value) = faces[run.face.0][run.face.1.index()] else {
                unreachable!("value runs come from Dirichlet faces (the plan's key)")
            };
            let at = geom.index(&run.dst);
            data[at..at + run.len].fill(value);
        }
        // Other points whose value comes from this rank (boundary values, copies of its own
        // points) are what the grid's own fill gives with rank faces left alone, now that
        // the points it copies from beyond rank faces have arrived: the fill's order
        // resolves each point by its last outside dimension, as the global fill does, and
        // on the faces it fills the local extent is the global one (or holds every point a
        // copying condition reads).
        if plan.own_fill {
            let local_faces = self.local_faces(&faces);
            stencil_core::grid::fill_halo(&mut grid.time_loop_view(), &local_faces);
        }
        grid.mark_halo_filled();
        copy_seconds += copy_timer.elapsed().as_secs_f64();
        let mut stats = self.stats.lock().unwrap_or_else(|e| e.into_inner());
        stats.exchanges += 1;
        stats.values_sent += sends.iter().map(Vec::len).sum::<usize>();
        stats.copy_seconds += copy_seconds;
        stats.wait_seconds += wait_seconds;
        stats.overlapped_seconds += work_seconds;
        drop(stats);
        *self.buffers.lock().unwrap_or_else(|e| e.into_inner()) = Some(Box::new((sends, recvs)));
        Ok(result)
    }

    /// The exchange plan for grids with faces `kinds`, built on first use (collectively:
    /// every rank meets the same grids in the same order).
    fn plan(&self, kinds: &Faces<D>) -> Result<Arc<Plan<D>>> {
        let mut plans = self.plans.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, plan)) = plans.iter().find(|(k, _)| k == kinds) {
            return Ok(plan.clone());
        }
        let plan = Arc::new(self.build_plan(kinds));
        plans.push((*kinds, plan.clone()));
        Ok(plan)
    }

    /// Builds this rank's plan: its fill runs, and from every other rank the runs it wants
    /// from this one (one all-to-all of counts, then the run lists).
    fn build_plan(&self, kinds: &Faces<D>) -> Plan<D> {
        let runs = self.layout.fill_runs(self.rank, kinds);
        let ranks = self.ranks();
        let n = self.local_shape();
        // A local Reflect fill mirrors within the local extent, the same as the global one
        // only when that extent is wider than the halo.
        let own_fill = (0..D).all(|d| {
            self.layout.decomp.dims()[d] == 1
                || n[d] > self.layout.halo
                || !kinds[d].contains(&FaceKind::Reflect)
        });
        // Whether any point of the run of `len` points from `p` (along the last dimension)
        // lies beyond a rank face, where the grid's own fill leaves it.
        let beyond_rank_face = |p: &[isize; D], len: usize| {
            !own_fill
                || (0..D).any(|d| {
                    let end = if d == D - 1 {
                        p[d] + len as isize
                    } else {
                        p[d] + 1
                    };
                    (p[d] < 0 && self.layout.rank_face(self.rank, d, Side::Low))
                        || (end > n[d] as isize && self.layout.rank_face(self.rank, d, Side::High))
                })
        };
        let mut recv: Vec<Peer<D>> = Vec::new();
        let mut local = Vec::new();
        let mut requests: Vec<Vec<i64>> = vec![Vec::new(); ranks];
        for c in &runs.copies {
            if c.owner == self.rank {
                if beyond_rank_face(&c.dst, c.len) {
                    local.push((c.dst, c.src, c.len));
                }
                continue;
            }
            if recv.last().is_none_or(|p| p.rank != c.owner) {
                recv.push(Peer {
                    rank: c.owner,
                    runs: Vec::new(),
                    points: 0,
                });
            }
            let peer = recv.last_mut().expect("pushed above");
            peer.runs.push((c.dst, c.len));
            peer.points += c.len;
            let request = &mut requests[c.owner];
            request.extend(c.src.iter().map(|&x| x as i64));
            request.push(c.len as i64);
        }
        // How many numbers each rank asks of each.
        let counts: Vec<i32> = requests.iter().map(|r| r.len() as i32).collect();
        let mut incoming = vec![0i32; ranks];
        self.comm.all_to_all_into(&counts[..], &mut incoming[..]);
        let mut asked: Vec<Vec<i64>> = incoming.iter().map(|&n| vec![0; n as usize]).collect();
        ::mpi::request::scope(|scope| {
            let mut pending = Vec::new();
            for (r, buf) in asked.iter_mut().enumerate() {
                if !buf.is_empty() {
                    pending.push(
                        self.comm
                            .process_at_rank(r as i32)
                            .immediate_receive_into_with_tag(scope, &mut buf[..], TAG + 1),
                    );
                }
            }
            for (r, buf) in requests.iter().enumerate() {
                if !buf.is_empty() {
                    pending.push(self.comm.process_at_rank(r as i32).immediate_send_with_tag(
                        scope,
                        &buf[..],
                        TAG + 1,
                    ));
                }
            }
            for p in pending {
                p.wait();
            }
        });
        let send = asked
            .into_iter()
            .enumerate()
            .filter(|(_, a)| !a.is_empty())
            .map(|(r, a)| {
                let runs: Vec<([isize; D], usize)> = a
                    .chunks_exact(D + 1)
                    .map(|c| (std::array::from_fn(|d| c[d] as isize), c[D] as usize))
                    .collect();
                Peer {
                    rank: r,
                    points: runs.iter().map(|r| r.1).sum(),
                    runs,
                }
            })
            .collect();
        Plan {
            recv,
            send,
            local,
            values: runs
                .values
                .into_iter()
                .filter(|v| beyond_rank_face(&v.dst, v.len))
                .collect(),
            own_fill,
        }
    }
}
