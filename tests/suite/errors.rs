//! Run-time misuse is a documented `Err` of the right kind, never a panic or a silent wrong
//! answer (docs/guide.md, "Errors, not panics").

use stencil::prelude::*;
use stencil::{ElemType, ErrorKind, KernelBuilder, Stencil};

stencil! {
    fn heat(u: &Grid3<f64>, out: &mut Grid3<f64>, c: f64) {
        out[i, j, k] = c * (u[i-1, j, k] + u[i+1, j, k] + u[i, j, k]);
    }

    fn wide(u: &Grid2<f64>, out: &mut Grid2<f64>) {
        out[i, j] = u[i-3, j] + u[i, j+3];
    }
}

fn average_1d() -> stencil::Kernel {
    let mut b = KernelBuilder::new("avg", 1, ElemType::F64);
    let u = b.input("u");
    let out = b.output("out");
    let w = b.param("w");
    let l = b.read(u, &[-1]);
    let r = b.read(u, &[1]);
    let s = b.add(l, r);
    let wr = b.param_ref(w);
    let v = b.mul(wr, s);
    b.store(out, v);
    b.finish().unwrap()
}

#[test]
fn shape_mismatch_is_an_error() {
    let u = Grid3::<f64>::new([8, 8, 8]).unwrap();
    let mut v = Grid3::<f64>::new([8, 8, 9]).unwrap();
    let e = heat(&u, &mut v, 0.5).run().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ShapeMismatch, "{e}");
}

#[test]
fn halo_narrower_than_the_radius_is_an_error() {
    let u = Grid2::<f64>::with_halo([8, 8], 2).unwrap();
    let mut v = u.like();
    let e = wide(&u, &mut v).run().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::HaloTooNarrow, "{e}");
    assert!(e.to_string().contains("halo of 2"), "{e}");
    // The message says how to make a grid that fits.
    assert!(e.to_string().contains("Grid::with_halo(shape, 3)"), "{e}");
    // With a halo of 3 it runs.
    let u = Grid2::<f64>::with_halo([8, 8], 3).unwrap();
    let mut v = u.like();
    wide(&u, &mut v).run().unwrap();
}

#[test]
fn empty_shape_is_an_error() {
    let e = Grid3::<f64>::new([4, 0, 4]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidShape, "{e}");
}

#[test]
fn wrong_dimension_count_for_a_runtime_kernel_is_an_error() {
    let stencil = Stencil::<f64>::new(average_1d()).unwrap();
    let u = Grid2::<f64>::new([4, 4]).unwrap();
    let mut v = u.like();
    let e = Launch::new(&stencil)
        .input("u", &u)
        .output("out", &mut v)
        .param("w", 0.5)
        .run()
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::DimensionMismatch, "{e}");
}

#[test]
fn runtime_kernel_runs_and_binding_mistakes_are_errors() {
    let stencil = Stencil::<f64>::new(average_1d()).unwrap();
    let mut u = Grid1::<f64>::new([5]).unwrap();
    u.fill_with(|[i]| i as f64);
    let mut v = u.like();
    Launch::new(&stencil)
        .input("u", &u)
        .output("out", &mut v)
        .param("w", 0.5)
        .run()
        .unwrap();
    // Dirichlet(0) halo: out[0] = 0.5 * (0 + 1), out[4] = 0.5 * (3 + 0).
    assert_eq!(v.to_vec(), vec![0.5, 1.0, 2.0, 3.0, 1.5]);

    let mut w = u.like();
    let missing = Launch::new(&stencil)
        .input("u", &u)
        .output("out", &mut w)
        .run();
    assert_eq!(missing.unwrap_err().kind(), ErrorKind::BadArgument);
    let mut w = u.like();
    let unknown = Launch::new(&stencil)
        .input("u", &u)
        .output("out", &mut w)
        .param("omega", 1.0)
        .run();
    assert_eq!(unknown.unwrap_err().kind(), ErrorKind::BadArgument);
    let mut w = u.like();
    let wrong_role = Launch::new(&stencil)
        .input("out", &u)
        .output("u", &mut w)
        .param("w", 1.0)
        .run();
    assert_eq!(wrong_role.unwrap_err().kind(), ErrorKind::BadArgument);
}

#[test]
fn an_argument_bound_twice_is_an_error_not_the_last_binding() {
    let stencil = Stencil::<f64>::new(average_1d()).unwrap();
    let mut u = Grid1::<f64>::new([5]).unwrap();
    u.fill_with(|[i]| i as f64);
    let other = u.like();
    let mut w = u.like();
    let input_twice = Launch::new(&stencil)
        .input("u", &u)
        .input("u", &other)
        .output("out", &mut w)
        .param("w", 0.5)
        .run()
        .unwrap_err();
    assert_eq!(input_twice.kind(), ErrorKind::BadArgument);
    assert!(
        input_twice.message().contains("given twice"),
        "{input_twice}"
    );
    let param_twice = Launch::new(&stencil)
        .input("u", &u)
        .output("out", &mut w)
        .param("w", 1.0)
        .param("w", 2.0)
        .run()
        .unwrap_err();
    assert_eq!(param_twice.kind(), ErrorKind::BadArgument);
    let mut w2 = u.like();
    let output_twice = Launch::new(&stencil)
        .input("u", &u)
        .output("out", &mut w)
        .output("out", &mut w2)
        .param("w", 1.0)
        .run()
        .unwrap_err();
    assert_eq!(output_twice.kind(), ErrorKind::BadArgument);
    // Nothing was written.
    assert!(w.to_vec().iter().all(|&v| v == 0.0));
}

#[test]
fn invalid_runtime_kernel_is_an_error() {
    let mut b = KernelBuilder::new("bad", 2, ElemType::F64);
    let u = b.input("u");
    let out = b.output("out");
    let r = b.read(u, &[0, 0]);
    b.store(u, r); // writes an input; `out` is never written
    let errors = b.finish().unwrap_err();
    assert_eq!(errors.errors.len(), 2, "{errors}");
    let e: stencil::Error = errors.into();
    assert_eq!(e.kind(), ErrorKind::InvalidKernel);
    let _ = out;
}

#[test]
fn element_type_mismatch_is_an_error() {
    let e = Stencil::<f32>::new(average_1d()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ElementTypeMismatch, "{e}");
}

#[test]
fn stale_interior_dependent_halo_is_an_error_until_updated() {
    let mut u = Grid3::<f64>::new([6, 6, 6]).unwrap();
    u.set_boundary(Boundary::Periodic);
    u[[0, 0, 0]] = 1.0;
    let mut v = u.like();
    let e = heat(&u, &mut v, 0.5).run().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::StaleHalo, "{e}");
    u.update_halo();
    heat(&u, &mut v, 0.5).run().unwrap();
    // Periodic wrap: the point at i = 5 sees u[0] through its high halo.
    assert_eq!(v[[5, 0, 0]], 0.5);
    // A Dirichlet halo does not depend on the interior, so no update is needed.
    let mut d = Grid3::<f64>::new([6, 6, 6]).unwrap();
    d[[1, 1, 1]] = 2.0;
    heat(&d, &mut v, 0.5).run().unwrap();
}

#[test]
fn outputs_get_their_halo_filled_after_a_run() {
    let mut u = Grid3::<f64>::new([4, 4, 4]).unwrap();
    u.set_boundary(Boundary::ZeroGradient);
    u.fill(1.0);
    let mut v = u.like();
    heat(&u, &mut v, 1.0 / 3.0).run().unwrap();
    // Interior is 1 everywhere; the zero-gradient halo of the output copies it.
    assert!(!v.halo_is_stale());
    assert_eq!(v.get([-1, 0, 0]), Some(v[[0, 0, 0]]));
    assert_eq!(v.get([4, 3, 3]), Some(v[[3, 3, 3]]));
}

#[test]
fn a_grid_too_large_to_allocate_is_an_error_not_an_abort() {
    // 2^50 points: the size fits in isize, but no machine can map 8 PiB.
    let e = Grid3::<f64>::new([1 << 20, 1 << 20, 1 << 10]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidShape, "{e}");
    assert!(e.to_string().contains("cannot allocate"), "{e}");
}

#[test]
fn hand_built_views_that_do_not_match_their_storage_are_errors_on_every_backend() {
    use stencil::{Backend, FieldView, FieldViewMut, Job, Schedule};
    let stencil = stencil::kernels::jacobi7::stencil();
    let u = Grid3::<f64>::new([6, 5, 7]).unwrap();
    let mut out = u.like();
    let geom = *u.geometry();
    let short: Vec<f64> = u.as_slice()[..geom.len - 1].to_vec();
    let mut skewed = geom;
    skewed.strides[0] += 8; // planes farther apart than the storage holds
    let gpu = stencil::EmulatedGpu::new();
    let backends: [(&dyn Backend<f64>, Schedule); 2] = [
        (
            stencil::CpuBackend::global(),
            Backend::<f64>::default_schedule(
                stencil::CpuBackend::global(),
                stencil.kernel(),
                &[6, 5, 7],
            ),
        ),
        (
            &gpu,
            Backend::<f64>::default_schedule(&gpu, stencil.kernel(), &[6, 5, 7]),
        ),
    ];
    for (backend, schedule) in backends {
        for (what, view) in [
            ("storage one short", FieldView { geom, data: &short }),
            (
                "strides that do not match",
                FieldView {
                    geom: skewed,
                    data: u.as_slice(),
                },
            ),
        ] {
            let out_geom = *out.geometry();
            let result = Job::new(
                stencil,
                vec![view],
                vec![FieldViewMut {
                    geom: out_geom,
                    data: out.as_mut_slice(),
                }],
                vec![0.4, 0.1],
            )
            .and_then(|mut job| backend.run(&mut job, &schedule));
            let err = result.expect_err(what);
            assert_eq!(err.kind(), ErrorKind::BadArgument, "{what}: {err}");
        }
        // The output side too.
        let mut long = out.as_slice().to_vec();
        long.push(0.0);
        let out_geom = *out.geometry();
        let err = Job::new(
            stencil,
            vec![u.view()],
            vec![FieldViewMut {
                geom: out_geom,
                data: &mut long,
            }],
            vec![0.4, 0.1],
        )
        .and_then(|mut job| backend.run(&mut job, &schedule))
        .expect_err("an output view longer than its geometry");
        assert_eq!(err.kind(), ErrorKind::BadArgument);
    }
}
