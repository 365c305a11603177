//! The IR printer: a deterministic, line-per-node text form of a [`Kernel`], for golden tests,
//! `STENCIL_LOG` dumps and panic messages.
//!
//! ```text
//! kernel avg, 1-D over [i]
//!   input u: f64
//!   output out: f64
//!   param w: f64
//!   %0 = read u[i-1]
//!   %1 = read u[i+1]
//!   %2 = add %0, %1
//!   %3 = param w
//!   %4 = mul %3, %2
//!   store out = %4
//! ```
//!
//! The header lists the kernel's name, dimensions and index names (followed by `, fma` for a
//! kernel with fused multiply-add, whose `fma %a, %b, %c` nodes compute `a * b + c` rounded
//! once), then every field and
//! parameter in declaration order; then every expression of the arena in order (dead ones
//! included: this shows the IR as it is), then the statements. A `let` prints under its name,
//! suffixed with `#id` when another `let` shares the name. Constants print with `{:?}`, which
//! round-trips exactly. Nothing depends on hashing or addresses, so the output is stable.
//!
//! The printer also accepts unverified kernels (it is used to show broken ones): a dangling id
//! prints as `?field5`, `?param2`, `?let1`.

use std::fmt;

use crate::ir::{
    CmpOp, Expr, FieldId, Kernel, LetId, LogicOp, Offset, ParamId, ReduceOp, Reduction, Role, Stmt,
};

/// The printed form of `kernel` (the same text as its `Display`).
pub fn print(kernel: &Kernel) -> String {
    kernel.to_string()
}

impl fmt::Display for Kernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names = Names { kernel: self };
        writeln!(
            f,
            "kernel {}, {}-D over [{}]{}",
            self.name,
            self.n_dims,
            self.index_names.join(", "),
            if self.fma { ", fma" } else { "" }
        )?;
        for field in &self.fields {
            let role = match field.role {
                Role::Input => "input",
                Role::Output => "output",
            };
            writeln!(f, "  {role} {}: {}", field.name, field.elem)?;
        }
        for param in &self.params {
            writeln!(f, "  param {}: {}", param.name, param.elem)?;
        }
        for reduction in &self.reductions {
            writeln!(
                f,
                "  reduction {}: {}<{}>",
                reduction.name,
                reduction.op.type_name(),
                reduction.elem
            )?;
        }
        for (i, expr) in self.exprs.iter().enumerate() {
            write!(f, "  %{i} = ")?;
            names.expr(f, expr)?;
            writeln!(f)?;
        }
        for stmt in &self.body {
            match *stmt {
                Stmt::Let { var, value } => {
                    writeln!(f, "  let {} = %{}", names.let_(var), value.index())?
                }
                Stmt::Store { field, value } => {
                    writeln!(f, "  store {} = %{}", names.field(field), value.index())?
                }
                Stmt::Reduce { reduction, value } => {
                    let name = self.reductions.get(reduction.index()).map_or_else(
                        || format!("?reduction{}", reduction.index()),
                        |r| r.name.clone(),
                    );
                    writeln!(f, "  reduce {name} += %{}", value.index())?
                }
            }
        }
        Ok(())
    }
}

/// The kernel-language statement that gives `reduction` the value `value` (source text):
/// `s += value;` for a sum, `m = min(m, value);` and `m = max(m, value);` for the others.
pub fn reduce_statement(reduction: &Reduction, value: &str) -> String {
    let name = &reduction.name;
    match reduction.op {
        ReduceOp::Sum => format!("{name} += {value};"),
        ReduceOp::Min => format!("{name} = min({name}, {value});"),
        ReduceOp::Max => format!("{name} = max({name}, {value});"),
    }
}

/// Name lookups that tolerate dangling ids.
struct Names<'k> {
    kernel: &'k Kernel,
}

impl Names<'_> {
    fn field(&self, id: FieldId) -> String {
        self.kernel
            .fields
            .get(id.index())
            .map_or_else(|| format!("?field{}", id.index()), |f| f.name.clone())
    }

    fn param(&self, id: ParamId) -> String {
        self.kernel
            .params
            .get(id.index())
            .map_or_else(|| format!("?param{}", id.index()), |p| p.name.clone())
    }

    fn let_(&self, id: LetId) -> String {
        let lets = &self.kernel.lets;
        match lets.get(id.index()) {
            None => format!("?let{}", id.index()),
            Some(v) if lets.iter().filter(|w| w.name == v.name).count() > 1 => {
                format!("{}#{}", v.name, id.index())
            }
            Some(v) => v.name.clone(),
        }
    }

    fn offset(&self, f: &mut fmt::Formatter<'_>, offset: &Offset) -> fmt::Result {
        for d in 0..self.kernel.n_dims.min(offset.0.len()) {
            if d > 0 {
                f.write_str(", ")?;
            }
            match self.kernel.index_names.get(d) {
                Some(n) => f.write_str(n)?,
                None => write!(f, "x{d}")?,
            }
            match offset.get(d) {
                0 => {}
                o if o > 0 => write!(f, "+{o}")?,
                o => write!(f, "{o}")?,
            }
        }
        Ok(())
    }

    fn expr(&self, f: &mut fmt::Formatter<'_>, expr: &Expr) -> fmt::Result {
        match *expr {
            Expr::Const(c) => write!(f, "const {c:?}"),
            Expr::Param(p) => write!(f, "param {}", self.param(p)),
            Expr::Read { field, ref offset } => {
                write!(f, "read {}[", self.field(field))?;
                self.offset(f, offset)?;
                f.write_str("]")
            }
            Expr::Let(var) => write!(f, "let {}", self.let_(var)),
            Expr::Index(dim) => match self.kernel.index_names.get(dim) {
                Some(name) => write!(f, "index {name}"),
                None => write!(f, "index x{dim}"),
            },
            Expr::Step => f.write_str("step"),
            Expr::Unary { op, arg } => write!(f, "{} %{}", op.name(), arg.index()),
            Expr::Binary { op, lhs, rhs } => {
                write!(f, "{} %{}, %{}", op.name(), lhs.index(), rhs.index())
            }
            Expr::Compare { op, lhs, rhs } => {
                write!(f, "{} %{}, %{}", cmp_name(op), lhs.index(), rhs.index())
            }
            Expr::Logic { op, lhs, rhs } => {
                let name = match op {
                    LogicOp::And => "and",
                    LogicOp::Or => "or",
                };
                write!(f, "{name} %{}, %{}", lhs.index(), rhs.index())
            }
            Expr::Not(arg) => write!(f, "not %{}", arg.index()),
            Expr::Fma { a, b, c } => {
                write!(f, "fma %{}, %{}, %{}", a.index(), b.index(), c.index())
            }
            Expr::Select {
                cond,
                then,
                otherwise,
            } => write!(
                f,
                "select %{}, %{}, %{}",
                cond.index(),
                then.index(),
                otherwise.index()
            ),
        }
    }
}

/// The printer's mnemonic of a comparison.
fn cmp_name(op: CmpOp) -> &'static str {
    match op {
        CmpOp::Lt => "lt",
        CmpOp::Le => "le",
        CmpOp::Gt => "gt",
        CmpOp::Ge => "ge",
        CmpOp::Eq => "eq",
        CmpOp::Ne => "ne",
    }
}

#[cfg(test)]
mod tests {
    use expect_test::expect;

    use super::*;
    use crate::ir::{BinaryOp, ExprId, KernelBuilder, UnaryOp};
    use crate::{ElemType, interp::testing::seven_point};

    #[test]
    fn seven_point_golden() {
        expect![[r#"
            kernel heat, 3-D over [i, j, k]
              input u: f64
              output out: f64
              param c0: f64
              param c1: f64
              %0 = param c0
              %1 = read u[i, j, k]
              %2 = mul %0, %1
              %3 = read u[i-1, j, k]
              %4 = read u[i+1, j, k]
              %5 = add %3, %4
              %6 = read u[i, j-1, k]
              %7 = add %5, %6
              %8 = read u[i, j+1, k]
              %9 = add %7, %8
              %10 = read u[i, j, k-1]
              %11 = add %9, %10
              %12 = read u[i, j, k+1]
              %13 = add %11, %12
              %14 = param c1
              %15 = mul %14, %13
              %16 = add %2, %15
              store out = %16
        "#]]
        .assert_eq(&print(&seven_point(ElemType::F64)));
    }

    #[test]
    fn every_node_kind_golden() {
        let mut b = KernelBuilder::new("mixed", 2, ElemType::F32);
        b.index_names(&["y", "x"]);
        let u = b.input("u");
        let out = b.output("out");
        let c = b.param("c");
        let r = b.read(u, &[-2, 3]);
        let half = b.constant(0.1);
        let s = b.unary(UnaryOp::Sqrt, r);
        let t = b.let_("t", s);
        let t_ref = b.let_ref(t);
        let p = b.param_ref(c);
        let m = b.binary(BinaryOp::Pow, t_ref, p);
        let t2 = b.let_("t", m);
        let t2_ref = b.let_ref(t2);
        let lt = b.compare(CmpOp::Le, t2_ref, half);
        let ne = b.compare(CmpOp::Ne, t_ref, half);
        let and = b.logic(LogicOp::Or, lt, ne);
        let not = b.not(and);
        let sel = b.select(not, t2_ref, half);
        b.store(out, sel);
        expect![[r#"
            kernel mixed, 2-D over [y, x]
              input u: f32
              output out: f32
              param c: f32
              %0 = read u[y-2, x+3]
              %1 = const 0.1
              %2 = sqrt %0
              %3 = let t#0
              %4 = param c
              %5 = pow %3, %4
              %6 = let t#1
              %7 = le %6, %1
              %8 = ne %3, %1
              %9 = or %7, %8
              %10 = not %9
              %11 = select %10, %6, %1
              let t#0 = %2
              let t#1 = %5
              store out = %11
        "#]]
        .assert_eq(&b.finish().unwrap().to_string());
    }

    #[test]
    fn broken_kernels_print_without_panicking() {
        let mut b = KernelBuilder::new("broken", 1, ElemType::F64);
        let out = b.output("out");
        let r = b.read(FieldId::new(9), &[1]);
        let p = b.expr(Expr::Param(ParamId::new(4)));
        let l = b.expr(Expr::Let(LetId::new(2)));
        let s = b.add(r, ExprId::new(77));
        let _ = (p, l);
        b.store(out, s);
        let text = print(b.peek());
        assert!(text.contains("read ?field9[i+1]"), "{text}");
        assert!(text.contains("param ?param4"), "{text}");
        assert!(text.contains("let ?let2"), "{text}");
        assert!(text.contains("add %0, %77"), "{text}");
    }
}
