//! Where a verifier error is, as kernel-language text: the offending expression or statement
//! printed as source (`u[i-9, j] + 2.0 * c`), a field or a parameter by name. Written for
//! kernels that failed verification, so it never trusts an id: an id out of range prints as
//! `<expression #n>`, and deep trees are cut off with `...`.

use crate::ir::{BinaryOp, Expr, ExprId, Kernel, LogicOp, Stmt, UnaryOp};

use super::location::Location;

/// Subtrees deeper than this print as `...`.
const MAX_DEPTH: usize = 6;

/// `location` in `kernel` as text for a message.
pub(super) fn describe(kernel: &Kernel, location: &Location) -> String {
    match location {
        Location::Kernel => format!("kernel `{}`", kernel.name),
        Location::Field(f) => match kernel.fields.get(f.index()) {
            Some(field) => format!("field `{}`", field.name),
            None => format!("<field #{}>", f.index()),
        },
        Location::Param(p) => match kernel.params.get(p.index()) {
            Some(param) => format!("parameter `{}`", param.name),
            None => format!("<parameter #{}>", p.index()),
        },
        Location::Reduction(r) => match kernel.reductions.get(r.index()) {
            Some(reduction) => format!("reduction `{}`", reduction.name),
            None => format!("<reduction #{}>", r.index()),
        },
        Location::Expr(e) => format!("`{}`", expr(kernel, *e, 0)),
        Location::Stmt(s) => match kernel.body.get(*s) {
            Some(Stmt::Let { var, value }) => {
                let name = kernel
                    .lets
                    .get(var.index())
                    .map_or_else(|| format!("<let #{}>", var.index()), |l| l.name.clone());
                format!("`let {name} = {};`", expr(kernel, *value, 0))
            }
            Some(Stmt::Store { field, value }) => format!(
                "`{} = {};`",
                read(kernel, field.index(), &[0; crate::ir::MAX_DIMS]),
                expr(kernel, *value, 0)
            ),
            Some(Stmt::Reduce { reduction, value }) => {
                let value = expr(kernel, *value, 0);
                match kernel.reductions.get(reduction.index()) {
                    Some(r) => format!("`{}`", crate::printer::reduce_statement(r, &value)),
                    None => format!("`<reduction #{}> += {value};`", reduction.index()),
                }
            }
            None => format!("<statement #{s}>"),
        },
    }
}

fn read(kernel: &Kernel, field: usize, offset: &[i32]) -> String {
    let name = kernel
        .fields
        .get(field)
        .map_or_else(|| format!("<field #{field}>"), |f| f.name.clone());
    let index: Vec<String> = (0..kernel.n_dims.min(offset.len()))
        .map(|d| {
            let var = kernel
                .index_names
                .get(d)
                .cloned()
                .unwrap_or_else(|| format!("x{d}"));
            match offset[d] {
                0 => var,
                o if o > 0 => format!("{var}+{o}"),
                o => format!("{var}{o}"),
            }
        })
        .collect();
    format!("{name}[{}]", index.join(", "))
}

fn expr(kernel: &Kernel, id: ExprId, depth: usize) -> String {
    if depth > MAX_DEPTH {
        return "...".into();
    }
    let Some(e) = kernel.exprs.get(id.index()) else {
        return format!("<expression #{}>", id.index());
    };
    let sub = |id: ExprId| expr(kernel, id, depth + 1);
    // Operands in parentheses unless they are leaves, so the text keeps the tree.
    let operand = |id: ExprId| {
        let text = sub(id);
        match kernel.exprs.get(id.index()) {
            Some(
                Expr::Const(_)
                | Expr::Param(_)
                | Expr::Read { .. }
                | Expr::Let(_)
                | Expr::Index(_)
                | Expr::Step,
            ) => text,
            _ if text == "..." => text,
            _ => format!("({text})"),
        }
    };
    match *e {
        Expr::Const(c) => format!("{c:?}"),
        Expr::Param(p) => kernel
            .params
            .get(p.index())
            .map_or_else(|| format!("<parameter #{}>", p.index()), |p| p.name.clone()),
        Expr::Read { field, offset } => read(kernel, field.index(), &offset.0),
        Expr::Let(l) => kernel
            .lets
            .get(l.index())
            .map_or_else(|| format!("<let #{}>", l.index()), |l| l.name.clone()),
        Expr::Index(dim) => kernel
            .index_names
            .get(dim)
            .map_or_else(|| format!("<index #{dim}>"), Clone::clone),
        Expr::Step => "step()".to_string(),
        Expr::Unary { op, arg } => match op {
            UnaryOp::Neg => format!("-{}", operand(arg)),
            op => format!("{}({})", op.name(), sub(arg)),
        },
        Expr::Binary { op, lhs, rhs } => match op {
            BinaryOp::Add => format!("{} + {}", operand(lhs), operand(rhs)),
            BinaryOp::Sub => format!("{} - {}", operand(lhs), operand(rhs)),
            BinaryOp::Mul => format!("{} * {}", operand(lhs), operand(rhs)),
            BinaryOp::Div => format!("{} / {}", operand(lhs), operand(rhs)),
            BinaryOp::Min => format!("min({}, {})", sub(lhs), sub(rhs)),
            BinaryOp::Max => format!("max({}, {})", sub(lhs), sub(rhs)),
            BinaryOp::Pow => format!("pow({}, {})", sub(lhs), sub(rhs)),
        },
        Expr::Compare { op, lhs, rhs } => {
            format!("{} {} {}", operand(lhs), op.symbol(), operand(rhs))
        }
        Expr::Logic { op, lhs, rhs } => {
            let symbol = match op {
                LogicOp::And => "&&",
                LogicOp::Or => "||",
            };
            format!("{} {symbol} {}", operand(lhs), operand(rhs))
        }
        Expr::Not(arg) => format!("!{}", operand(arg)),
        Expr::Fma { a, b, c } => format!("{} * {} + {}", operand(a), operand(b), operand(c)),
        Expr::Select {
            cond,
            then,
            otherwise,
        } => format!("select({}, {}, {})", sub(cond), sub(then), sub(otherwise)),
    }
}

#[cfg(test)]
mod tests {
    use crate::element::ElemType;
    use crate::ir::{KernelBuilder, UnaryOp};

    #[test]
    fn errors_name_the_offending_source_not_ids() {
        let mut b = KernelBuilder::new("far", 2, ElemType::F64);
        let u = b.input("u");
        let out = b.output("out");
        let c = b.param("c");
        let far = b.read(u, &[-9, 0]);
        let cr = b.param_ref(c);
        let sum = b.add(far, cr);
        let root = b.unary(UnaryOp::Sqrt, sum);
        b.store(out, root);
        let message = b.finish().unwrap_err().to_string();
        assert!(
            message.contains("exceeds the largest supported radius 8 (at `u[i-9, j]`)"),
            "{message}"
        );
        assert!(!message.contains("ExprId"), "{message}");

        // A read of an output, inside a larger expression, and a statement.
        let mut b = KernelBuilder::new("reads_output", 1, ElemType::F32);
        let u = b.input("u");
        let out = b.output("out");
        let own = b.read(out, &[1]);
        let neighbour = b.read(u, &[-1]);
        let product = b.mul(own, neighbour);
        let two = b.constant(2.0);
        let value = b.sub(product, two);
        b.store(out, value);
        let message = b.finish().unwrap_err().to_string();
        assert!(
            message.contains(
                "`out` is an output: it can be read only at its own point (offset zero), for an \
                 in-place update (at `out[i+1]`)"
            ),
            "{message}"
        );
    }
}
