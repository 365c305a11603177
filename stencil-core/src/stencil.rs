//! [`Stencil`]: a verified kernel ready to run, with its CPU specialisation when it has one.

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use crate::element::Element;
use crate::error::{Error, ErrorKind, Result};
use crate::hash::{KernelHash, structural_hash};
use crate::ir::Kernel;
use crate::row::RowFn;
use crate::verify::verify;

/// A verified kernel of element type `T`, plus the point loop the `stencil!` macro generated
/// for it (kernels built at run time have none and run through the backends' generic paths).
///
/// Cheap to clone (the IR is shared).
pub struct Stencil<T: Element> {
    kernel: Arc<Kernel>,
    hash: KernelHash,
    cpu_rows: Option<RowFn<T>>,
    /// Whether `cpu_rows` takes several adjacent rows per call (`RowArgs::rows`).
    row_blocks: bool,
    _elem: PhantomData<fn() -> T>,
}

impl<T: Element> Clone for Stencil<T> {
    fn clone(&self) -> Self {
        Stencil {
            kernel: Arc::clone(&self.kernel),
            hash: self.hash,
            cpu_rows: self.cpu_rows,
            row_blocks: self.row_blocks,
            _elem: PhantomData,
        }
    }
}

impl<T: Element> fmt::Debug for Stencil<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Stencil")
            .field("kernel", &self.kernel.name)
            .field("elem", &T::ELEM)
            .field("specialised", &self.cpu_rows.is_some())
            .finish()
    }
}

impl<T: Element> Stencil<T> {
    /// Wraps a kernel built at run time.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidKernel`] if the kernel fails verification;
    /// [`ErrorKind::ElementTypeMismatch`] if its element type is not `T`.
    pub fn new(kernel: Kernel) -> Result<Self> {
        Self::build(kernel, None, false)
    }

    /// Wraps a kernel together with a CPU point loop that computes one row per call
    /// (`args.rows()` is always 1 for it); `rows` must implement exactly `kernel`.
    ///
    /// # Errors
    /// As [`Stencil::new`].
    pub fn with_cpu_rows(kernel: Kernel, rows: RowFn<T>) -> Result<Self> {
        Self::build(kernel, Some(rows), false)
    }

    /// Wraps a kernel together with a CPU point loop that computes `args.rows()` adjacent rows
    /// per call (a register block; see [`crate::row`]), as the code the `stencil!` macro emits
    /// does; `rows` must implement exactly `kernel` (the macro generates both from the same
    /// IR).
    ///
    /// # Errors
    /// As [`Stencil::new`].
    pub fn with_cpu_row_blocks(kernel: Kernel, rows: RowFn<T>) -> Result<Self> {
        Self::build(kernel, Some(rows), true)
    }

    fn build(kernel: Kernel, cpu_rows: Option<RowFn<T>>, row_blocks: bool) -> Result<Self> {
        verify(&kernel)?;
        if kernel.elem() != T::ELEM {
            return Err(Error::new(
                ErrorKind::ElementTypeMismatch,
                format!(
                    "kernel `{}` has element type {}, not {}",
                    kernel.name,
                    kernel.elem(),
                    T::ELEM
                ),
            ));
        }
        Ok(Stencil {
            hash: structural_hash(&kernel),
            kernel: Arc::new(kernel),
            cpu_rows,
            row_blocks: row_blocks && cpu_rows.is_some(),
            _elem: PhantomData,
        })
    }

    /// The IR.
    pub fn kernel(&self) -> &Kernel {
        &self.kernel
    }

    /// The kernel's [`structural_hash`] (computed once, when the stencil was built).
    pub fn hash(&self) -> KernelHash {
        self.hash
    }

    /// The generated CPU point loop, if the kernel came from `stencil!`.
    pub fn cpu_rows(&self) -> Option<RowFn<T>> {
        self.cpu_rows
    }

    /// Whether [`cpu_rows`](Self::cpu_rows) computes several adjacent rows per call (built
    /// with [`with_cpu_row_blocks`](Self::with_cpu_row_blocks)); a backend hands a point loop
    /// without them one row at a time.
    pub fn cpu_row_blocks(&self) -> bool {
        self.row_blocks
    }

    /// The same kernel without its generated point loop (forces generic paths; for tests and
    /// for comparing the two).
    pub fn without_cpu_rows(&self) -> Self {
        Stencil {
            kernel: Arc::clone(&self.kernel),
            hash: self.hash,
            cpu_rows: None,
            row_blocks: false,
            _elem: PhantomData,
        }
    }
}
