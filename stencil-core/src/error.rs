//! The run-time error type of the whole library.
//!
//! Three kinds of failure are kept apart: a mistake in kernel source is a
//! compile error with a span (the macro's business); run-time misuse is an [`Error`] with an
//! [`ErrorKind`] that callers may match on; a broken internal invariant is a bug and panics,
//! naming the pass.

use std::fmt;

use crate::verify::VerifyErrors;

/// What went wrong, for callers that want to react to it. New kinds may be added.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A grid shape with a zero extent, or one too large to allocate.
    InvalidShape,
    /// Grids given to one kernel call differ in interior shape.
    ShapeMismatch,
    /// An input grid's halo is narrower than the kernel reads in some dimension.
    HaloTooNarrow,
    /// A grid's dimension count differs from the kernel's.
    DimensionMismatch,
    /// A grid's or parameter's element type differs from the kernel's.
    ElementTypeMismatch,
    /// A kernel argument is missing, unknown, given twice, or of the wrong role.
    BadArgument,
    /// An input's halo depends on its interior (periodic, zero-gradient, reflect) and the
    /// interior changed since the halo was last filled: call `update_halo`.
    StaleHalo,
    /// The same grid storage was passed both as an input and as an output.
    AliasedGrids,
    /// A kernel built at run time failed verification.
    InvalidKernel,
    /// A schedule is not legal for this kernel and shape.
    InvalidSchedule,
    /// A backend is not available on this machine (no GPU, no driver, ...).
    BackendUnavailable,
    /// A backend failed while running a kernel.
    Backend,
    /// `verify` found a backend whose output differs from the reference interpreter.
    VerificationFailed,
    /// Reading or writing a file failed.
    Io,
}

/// A run-time error: an [`ErrorKind`] plus a message for humans.
#[derive(Clone, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
    message: String,
}

impl Error {
    /// An error of `kind` with a human-readable `message`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error {
            kind,
            message: message.into(),
        }
    }

    /// What went wrong.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The message (without the kind).
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Error({:?}: {})", self.kind, self.message)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

impl From<VerifyErrors> for Error {
    fn from(e: VerifyErrors) -> Self {
        Error::new(ErrorKind::InvalidKernel, e.to_string())
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::new(ErrorKind::Io, e.to_string())
    }
}

/// Result with the library's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
