//! The emulator's error type: one struct over a `#[non_exhaustive]` kind, with the PTX source
//! line where one is known.
//!
//! Parse errors name the line and the construct; run-time faults name the instruction (line and
//! text), the thread and block, and the address or register involved.

use std::fmt;

/// What went wrong in the emulator. New kinds may be added.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[non_exhaustive]
pub enum EmulatorErrorKind {
    /// The PTX text is malformed or uses a construct outside the supported subset.
    Parse,
    /// The module has no `.entry` of the requested name.
    UnknownEntry,
    /// Grid or block dimensions are zero or exceed the CUDA limits.
    InvalidLaunch,
    /// The launch parameters differ in count or type from the entry's declaration.
    ParamMismatch,
    /// A load or store touched memory outside every allocation (or shared variable), or a
    /// [`Memory`](super::Memory) call named such a range.
    OutOfBounds,
    /// A load or store address is not a multiple of the access size.
    Misaligned,
    /// An instruction read a register that no earlier instruction of that thread wrote.
    UnwrittenRegister,
    /// Threads of one block wait at different `bar.sync` instructions, so the barrier can never
    /// be released as PTX defines it.
    BarrierDeadlock,
    /// A thread executed more instructions than the launch allows (a runaway loop, or a thread
    /// that never reaches the barrier its block waits at).
    StepLimit,
}

/// An emulator failure: a kind, a message for humans and, where known, the 1-based PTX line.
#[derive(Clone, PartialEq, Eq)]
pub struct EmulatorError {
    kind: EmulatorErrorKind,
    line: Option<usize>,
    message: String,
}

impl EmulatorError {
    /// An error of `kind` with a human-readable `message`, tied to no source line.
    pub fn new(kind: EmulatorErrorKind, message: impl Into<String>) -> Self {
        EmulatorError {
            kind,
            line: None,
            message: message.into(),
        }
    }

    /// An error of `kind` at 1-based PTX source `line`.
    pub fn at_line(kind: EmulatorErrorKind, line: usize, message: impl Into<String>) -> Self {
        EmulatorError {
            kind,
            line: Some(line),
            message: message.into(),
        }
    }

    /// What went wrong.
    pub fn kind(&self) -> EmulatorErrorKind {
        self.kind
    }

    /// The 1-based PTX source line the error refers to, if any.
    pub fn line(&self) -> Option<usize> {
        self.line
    }

    /// The message, without the line prefix.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Debug for EmulatorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "EmulatorError({:?}: {self})", self.kind)
    }
}

impl fmt::Display for EmulatorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "PTX line {line}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for EmulatorError {}

impl From<EmulatorError> for stencil_core::Error {
    fn from(error: EmulatorError) -> Self {
        stencil_core::Error::new(
            stencil_core::ErrorKind::Backend,
            format!("PTX emulator: {error}"),
        )
    }
}
