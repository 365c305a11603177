//! Where a kernel's source is written ([`Origin`]), for the messages that name it.

/// Where a kernel's source is written, for the messages that name it.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub enum Origin {
    /// A `stencil!` block.
    #[default]
    Macro,
    /// Kernel text given to `stencil::parse` ([`compile`](crate::compile)).
    Text,
}

impl Origin {
    /// "this `stencil!` block" or "the kernel text".
    pub fn block(self) -> &'static str {
        match self {
            Origin::Macro => "this `stencil!` block",
            Origin::Text => "the kernel text",
        }
    }
}
