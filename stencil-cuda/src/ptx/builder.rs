//! [`EntryBuilder`]: allocates typed virtual registers and labels and collects statements into
//! an [`Entry`]. It only records AST values; the printer turns them into text.

use super::{Entry, Guard, Inst, Label, Param, Reg, RegClass, SharedArray, Statement};

/// Builds one entry: registers are numbered per class from 1, labels from 1.
#[derive(Debug)]
pub struct EntryBuilder {
    entry: Entry,
    labels: u32,
}

impl EntryBuilder {
    /// An empty entry called `name`.
    pub fn new(name: &str) -> Self {
        EntryBuilder {
            entry: Entry {
                name: name.to_string(),
                params: Vec::new(),
                shared: Vec::new(),
                reg_counts: [0; 5],
                body: Vec::new(),
            },
            labels: 0,
        }
    }

    /// Declares a parameter; returns its index.
    pub fn param(&mut self, param: Param) -> usize {
        self.entry.params.push(param);
        self.entry.params.len() - 1
    }

    /// Declares a static shared array; returns its index.
    pub fn shared(&mut self, array: SharedArray) -> usize {
        self.entry.shared.push(array);
        self.entry.shared.len() - 1
    }

    /// A fresh register of `class`.
    pub fn reg(&mut self, class: RegClass) -> Reg {
        let n = &mut self.entry.reg_counts[class.index()];
        *n += 1;
        Reg { class, index: *n }
    }

    /// A fresh label (not yet placed).
    pub fn label(&mut self) -> Label {
        self.labels += 1;
        Label(self.labels)
    }

    /// Places `label` at the current position.
    pub fn place(&mut self, label: Label) {
        self.entry.body.push(Statement::Label(label));
    }

    /// Appends an unguarded instruction.
    pub fn push(&mut self, inst: Inst) {
        self.entry.body.push(Statement::Inst(None, inst));
    }

    /// Appends a guarded instruction.
    pub fn guarded(&mut self, guard: Guard, inst: Inst) {
        self.entry.body.push(Statement::Inst(Some(guard), inst));
    }

    /// Appends a comment.
    pub fn comment(&mut self, text: impl Into<String>) {
        self.entry.body.push(Statement::Comment(text.into()));
    }

    /// The finished entry.
    pub fn finish(self) -> Entry {
        self.entry
    }
}
