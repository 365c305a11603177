//! Performance models: predicted seconds per sweep for a point, used to order candidates and to
//! prune hopeless ones before they are measured.
//!
//! [`Roofline`] is the model the library uses: compulsory bytes and flops per point (from
//! `stencil_core::analysis`) against the machine's measured bandwidth and peak, times a
//! traffic factor from the point's block sizes ([`CacheFit`]): the ghost zones a block re-reads
//! and a penalty when the block's working set overflows the cache. A model only has to rank
//! points well; its absolute values matter for pruning, where the roofline errs on the fast
//! side (it is a lower bound when the traffic factor is 1).

use stencil_core::Kernel;
use stencil_core::analysis::{bytes_per_point, flops_per_point, radius};
use stencil_core::schedule::{DimValue, SearchSpace};

/// Predicted seconds per sweep of a point (lower is faster).
pub trait Model {
    /// The prediction for `point` (one index per dimension of the space searched).
    fn predict(&self, point: &[usize]) -> f64;
}

impl<F: Fn(&[usize]) -> f64> Model for F {
    fn predict(&self, point: &[usize]) -> f64 {
        self(point)
    }
}

/// The roofline model (see the module documentation).
#[derive(Clone, PartialEq, Debug)]
pub struct Roofline {
    /// Points computed per sweep.
    pub n_points: f64,
    /// Compulsory bytes moved per point.
    pub bytes_per_point: f64,
    /// Floating-point operations per point.
    pub flops_per_point: f64,
    /// Memory bandwidth in bytes per second (measured by the backend:
    /// `Backend::measure_bandwidth`).
    pub bandwidth: f64,
    /// Peak arithmetic rate in flops per second.
    pub peak_flops: f64,
    /// The block-size term; `None` predicts the bound for every point.
    pub cache_fit: Option<CacheFit>,
    /// The store term; `None`: stores cost their compulsory bytes whatever the point.
    pub stores: Option<StoreTerm>,
}

/// How plain and streaming stores change the traffic.
///
/// Plain stores of outputs that do not stay in cache read each output line before writing it
/// (write-allocate): `output_bytes_per_point` more per point. Streaming stores avoid that,
/// but when the sweep's grids do stay in cache they send outputs to memory that the next
/// sweep would have found in cache: their memory time is then counted
/// [`RESIDENT_STREAMING_PENALTY`] times.
#[derive(Clone, PartialEq, Debug)]
pub struct StoreTerm {
    /// The search dimension choosing the stores.
    pub dim: usize,
    /// Its value index meaning streaming stores.
    pub streaming: usize,
    /// Bytes written per point (every output once).
    pub output_bytes_per_point: f64,
    /// Whether the sweep's grids fit the largest cache (measured, not reported).
    pub resident: bool,
}

/// Factor on the memory time of streaming stores over grids that stay in cache.
pub const RESIDENT_STREAMING_PENALTY: f64 = 1.5;

/// How block sizes change the traffic: which search dimensions hold block extents.
#[derive(Clone, PartialEq, Debug)]
pub struct CacheFit {
    /// Cache capacity (bytes) the working set of a block should fit in.
    pub cache_bytes: f64,
    /// Bytes of working set per point of a block (the element sizes of the fields it touches).
    pub bytes_per_block_point: f64,
    /// Stencil radius (ghost-zone width).
    pub radius: usize,
    /// One entry per grid axis, outermost first.
    pub axes: Vec<BlockAxis>,
    /// Traffic factor when the working set does not fit (each point is then read from memory
    /// about once per plane of the stencil: `2 * radius + 1` is a good value).
    pub miss_penalty: f64,
}

/// The block extent along one grid axis.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum BlockAxis {
    /// Not tuned: the block spans this many points.
    Fixed(usize),
    /// The extent is the numeric value of search dimension `dim`; a value of 0 or more than
    /// `full` (the grid's extent) means the whole axis.
    Tuned {
        /// Index of the search dimension.
        dim: usize,
        /// The grid's extent along the axis.
        full: usize,
    },
}

impl Roofline {
    /// The roofline of `kernel` over `n_points` points against `bandwidth` (bytes/s) and
    /// `peak_flops` (flops/s), without a block-size term.
    pub fn for_kernel(
        kernel: &Kernel,
        n_points: usize,
        bandwidth: f64,
        peak_flops: f64,
    ) -> Roofline {
        Roofline {
            n_points: n_points as f64,
            bytes_per_point: bytes_per_point(kernel) as f64,
            flops_per_point: f64::from(flops_per_point(kernel)),
            bandwidth,
            peak_flops,
            cache_fit: None,
            stores: None,
        }
    }

    /// This model with the store term of `kernel`: search dimension `dim` chooses the stores,
    /// value `streaming` streams, and the grids stay in cache when all of `kernel`'s fields
    /// over the model's points fit `largest_cache_bytes`.
    pub fn with_stores(
        mut self,
        kernel: &Kernel,
        dim: usize,
        streaming: usize,
        largest_cache_bytes: f64,
    ) -> Roofline {
        let elem = kernel.elem().size_bytes() as f64;
        let outputs = kernel.outputs().count() as f64;
        let grids = kernel.fields.len() as f64;
        self.stores = Some(StoreTerm {
            dim,
            streaming,
            output_bytes_per_point: outputs * elem,
            resident: grids * elem * self.n_points <= largest_cache_bytes,
        });
        self
    }

    /// This model with the block-size term of `kernel` (its radius, and the element sizes of
    /// all its fields as working set per point), blocks described by `axes`.
    pub fn with_cache_fit(
        mut self,
        kernel: &Kernel,
        cache_bytes: f64,
        axes: Vec<BlockAxis>,
    ) -> Roofline {
        let r = radius(kernel).max() as usize;
        let per_point: usize = kernel.fields.iter().map(|f| f.elem.size_bytes()).sum();
        self.cache_fit = Some(CacheFit {
            cache_bytes,
            bytes_per_block_point: per_point as f64,
            radius: r,
            axes,
            miss_penalty: (2 * r + 1) as f64,
        });
        self
    }

    /// The machine's bound: no schedule is faster than this many seconds per sweep.
    pub fn bound_seconds(&self) -> f64 {
        let memory = self.bytes_per_point * self.n_points / self.bandwidth;
        let compute = self.flops_per_point * self.n_points / self.peak_flops;
        memory.max(compute)
    }

    /// Achieved bytes per second at `seconds` per sweep (compulsory traffic only).
    pub fn bytes_per_second(&self, seconds: f64) -> f64 {
        self.bytes_per_point * self.n_points / seconds
    }

    /// The fraction of the bound achieved at `seconds` per sweep (1 = at the machine's limit).
    pub fn fraction_of_bound(&self, seconds: f64) -> f64 {
        self.bound_seconds() / seconds
    }

    /// Predicted seconds per sweep of `point` of `space`: the bound with the memory time
    /// scaled by [`traffic_factor`](Roofline::traffic_factor).
    pub fn predict(&self, space: &SearchSpace, point: &[usize]) -> f64 {
        let factor = self.traffic_factor(space, point);
        let mut bytes = self.bytes_per_point;
        if let Some(st) = &self.stores {
            let streaming = point.get(st.dim) == Some(&st.streaming);
            match (streaming, st.resident) {
                (false, false) => bytes += st.output_bytes_per_point,
                (true, true) => bytes *= RESIDENT_STREAMING_PENALTY,
                _ => {}
            }
        }
        let memory = factor * bytes * self.n_points / self.bandwidth;
        let compute = self.flops_per_point * self.n_points / self.peak_flops;
        memory.max(compute)
    }

    /// The traffic factor of `point` of `space` (1 without a block-size term): the ghost-zone
    /// re-reads of its blocks, times the miss penalty when a block's working set overflows
    /// the cache. Block extents are the numeric values of the tuned dimensions.
    pub fn traffic_factor(&self, space: &SearchSpace, point: &[usize]) -> f64 {
        let values = |dim: usize, index: usize| {
            space
                .dims()
                .get(dim)
                .and_then(|d| d.values.get(index))
                .and_then(DimValue::as_int)
        };
        let Some(fit) = &self.cache_fit else {
            return 1.0;
        };
        let r = fit.radius as f64;
        let extents: Vec<f64> = fit
            .axes
            .iter()
            .map(|axis| match *axis {
                BlockAxis::Fixed(e) => e.max(1) as f64,
                BlockAxis::Tuned { dim, full } => {
                    let v = point.get(dim).and_then(|&i| values(dim, i)).unwrap_or(0);
                    if v <= 0 || v as usize > full {
                        full.max(1) as f64
                    } else {
                        v as f64
                    }
                }
            })
            .collect();
        let ghost: f64 = extents.iter().map(|e| (e + 2.0 * r) / e).product();
        // Working set when a block streams through its outermost axis: 2r+1 planes of the
        // inner axes, ghost zones included.
        let plane: f64 = extents.iter().skip(1).map(|e| e + 2.0 * r).product();
        let working_set = plane * (2.0 * r + 1.0) * fit.bytes_per_block_point;
        let miss = if working_set > fit.cache_bytes {
            fit.miss_penalty
        } else {
            1.0
        };
        ghost * miss
    }
}

/// A roofline bound to a space: numeric values are read from the space's dimensions.
pub struct RooflineModel<'a> {
    /// The model.
    pub roofline: Roofline,
    /// The space whose points are predicted.
    pub space: &'a SearchSpace,
}

impl Model for RooflineModel<'_> {
    fn predict(&self, point: &[usize]) -> f64 {
        self.roofline.predict(self.space, point)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roofline() -> Roofline {
        Roofline {
            n_points: 1.0e6,
            bytes_per_point: 16.0,
            flops_per_point: 8.0,
            bandwidth: 1.0e10,
            peak_flops: 1.0e10,
            cache_fit: None,
            stores: None,
        }
    }

    #[test]
    fn bound_is_the_larger_of_memory_and_compute_time() {
        let r = roofline();
        // memory: 16e6 / 1e10 = 1.6e-3 s; compute: 8e6 / 1e10 = 0.8e-3 s.
        assert!((r.bound_seconds() - 1.6e-3).abs() < 1e-12);
        let compute_bound = Roofline {
            peak_flops: 1.0e9,
            ..roofline()
        };
        assert!((compute_bound.bound_seconds() - 8.0e-3).abs() < 1e-12);
        assert!((r.fraction_of_bound(3.2e-3) - 0.5).abs() < 1e-12);
        assert!((r.bytes_per_second(1.6e-3) - 1.0e10).abs() < 1.0);
    }

    #[test]
    fn cache_fit_penalises_blocks_that_overflow_and_thin_blocks() {
        let space = SearchSpace::new().with_ints("tile_y", [0, 4, 16, 64, 256]);
        let mut r = roofline();
        r.cache_fit = Some(CacheFit {
            cache_bytes: 64.0 * 1024.0,
            bytes_per_block_point: 16.0,
            radius: 1,
            axes: vec![
                BlockAxis::Fixed(256),
                BlockAxis::Tuned { dim: 0, full: 256 },
                BlockAxis::Fixed(256),
            ],
            miss_penalty: 3.0,
        });
        let model = RooflineModel {
            roofline: r,
            space: &space,
        };
        let t: Vec<f64> = (0..5).map(|i| model.predict(&[i])).collect();
        // Working set of tile_y = e: (e + 2) * 258 planes-of-rows * 3 planes * 16 bytes.
        let bound = 1.6e-3;
        // tile 4: ghost (258/256)^2 * 6/4, overflow (6*258*48 = 74304 > 65536) -> * 3.
        let expected_4 = bound * (258.0f64 / 256.0).powi(2) * 1.5 * 3.0;
        assert!(
            (t[1] - expected_4).abs() < 1e-12,
            "{} vs {expected_4}",
            t[1]
        );
        // 0 and 256 mean the whole axis: the same prediction.
        assert_eq!(t[0], t[4]);
        // A larger cache lets tile 4 fit: only the ghost factor is left.
        let mut big = model.roofline.clone();
        if let Some(fit) = big.cache_fit.as_mut() {
            fit.cache_bytes = 1.0e6;
        }
        let model = RooflineModel {
            roofline: big,
            space: &space,
        };
        let expected_fit = bound * (258.0f64 / 256.0).powi(2) * 1.5;
        assert!((model.predict(&[1]) - expected_fit).abs() < 1e-12);
        // Thin blocks pay more ghost traffic than thick ones when both fit.
        assert!(model.predict(&[1]) > model.predict(&[2]));
    }

    /// A 3-D 7-point f64 kernel built by hand: out = c * (sum of 6 neighbours) + in.
    fn seven_point() -> Kernel {
        use stencil_core::{ElemType, KernelBuilder};
        let mut b = KernelBuilder::new("heat", 3, ElemType::F64);
        let input = b.input("u");
        let output = b.output("v");
        let c = b.param("c");
        let centre = b.read(input, &[0, 0, 0]);
        let mut sum = b.read(input, &[1, 0, 0]);
        for offset in [[-1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1]] {
            let r = b.read(input, &offset);
            sum = b.add(sum, r);
        }
        let c = b.param_ref(c);
        let scaled = b.mul(c, sum);
        let value = b.add(scaled, centre);
        b.store(output, value);
        b.finish().expect("valid kernel")
    }

    #[test]
    fn roofline_of_a_kernel_counts_its_bytes_and_flops() {
        let kernel = seven_point();
        // One f64 read stream and one f64 write stream: 16 bytes; 5 adds + 1 mul + 1 add = 7.
        let r = Roofline::for_kernel(&kernel, 1000, 1.6e10, 1.0e12);
        assert_eq!(r.bytes_per_point, 16.0);
        assert_eq!(r.flops_per_point, 7.0);
        assert!((r.bound_seconds() - 1.0e-6).abs() < 1e-18);
        let space = SearchSpace::new().with_ints("tile_y", [2, 64]);
        let axes = vec![
            BlockAxis::Fixed(10),
            BlockAxis::Tuned { dim: 0, full: 64 },
            BlockAxis::Fixed(64),
        ];
        let r = r.with_cache_fit(&kernel, 1.0e9, axes);
        let fit = r.cache_fit.as_ref().expect("fit");
        assert_eq!(
            (fit.radius, fit.bytes_per_block_point, fit.miss_penalty),
            (1, 16.0, 3.0)
        );
        // Thin tiles re-read more ghost rows: (2 + 2) / 2 against (64 + 2) / 64 along y.
        let thin = r.traffic_factor(&space, &[0]);
        let thick = r.traffic_factor(&space, &[1]);
        assert!((thin / thick - (4.0 / 2.0) / (66.0 / 64.0)).abs() < 1e-12);
        assert!(r.predict(&space, &[0]) > r.predict(&space, &[1]));
    }

    #[test]
    fn closures_are_models() {
        let m = |p: &[usize]| p[0] as f64 * 2.0;
        assert_eq!(Model::predict(&m, &[3]), 6.0);
    }
}
