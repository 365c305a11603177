//! How far a kernel reads from the current point, per dimension and direction.

use crate::ir::{Expr, FieldId, Kernel, MAX_DIMS};

/// Largest read distance of a kernel in each dimension and direction (over all inputs).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct Radius {
    /// Largest distance towards lower indices, per dimension.
    pub low: [u32; MAX_DIMS],
    /// Largest distance towards higher indices, per dimension.
    pub high: [u32; MAX_DIMS],
}

impl Radius {
    /// Largest distance in any dimension and direction (the halo width a kernel needs).
    pub fn max(&self) -> u32 {
        self.low
            .iter()
            .chain(&self.high)
            .copied()
            .max()
            .unwrap_or(0)
    }

    /// Largest distance in dimension `dim`, either direction.
    pub fn in_dim(&self, dim: usize) -> u32 {
        self.low[dim].max(self.high[dim])
    }
}

/// The read radius of `kernel` (over every read of every input, used or not by a store).
pub fn radius(kernel: &Kernel) -> Radius {
    radius_where(kernel, |_| true)
}

/// How far `kernel` reads field `field` (over every read of it, used or not by a store): the
/// halo that field needs. Zero for a field read only at its own point, or not at all.
pub fn field_radius(kernel: &Kernel, field: FieldId) -> Radius {
    radius_where(kernel, |f| f == field)
}

fn radius_where(kernel: &Kernel, read: impl Fn(FieldId) -> bool) -> Radius {
    let mut r = Radius::default();
    for e in &kernel.exprs {
        if let Expr::Read { offset, field } = e
            && read(*field)
        {
            for d in 0..MAX_DIMS {
                let o = offset.get(d);
                if o < 0 {
                    r.low[d] = r.low[d].max(o.unsigned_abs());
                } else {
                    r.high[d] = r.high[d].max(o as u32);
                }
            }
        }
    }
    r
}
