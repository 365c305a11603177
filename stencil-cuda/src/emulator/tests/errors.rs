//! Every error path: parse errors naming the line and construct, operand type mismatches,
//! launch and parameter checks, out-of-bounds and misaligned accesses, unwritten registers,
//! barrier deadlock and runaway threads.

use super::super::{
    EmulatorError, EmulatorErrorKind, LaunchOptions, Memory, Module, ParamValue, launch,
    launch_with_options,
};
use super::HEADER;

/// Parses `body` placed inside an entry `k(.param .u64 data)` after a fixed set of register
/// declarations; the body's first line is PTX line 10.
fn parse_body(body: &str) -> Result<Module, EmulatorError> {
    Module::parse(&format!(
        "{HEADER}.visible .entry k(.param .u64 data)
{{
    .reg .pred %p<4>;
    .reg .b32 %r<8>;
    .reg .b64 %rd<8>;
    .reg .f32 %f<4>;
{body}
}}
"
    ))
}

fn parse_error(body: &str) -> EmulatorError {
    let error = parse_body(body).expect_err(body);
    assert_eq!(error.kind(), EmulatorErrorKind::Parse, "{error}");
    error
}

#[test]
fn unsupported_constructs_name_their_line() {
    let cases = [
        (
            "    ret;\n    ld.local.f32 %f1, [%rd1];",
            11,
            "ld.local.f32",
        ),
        ("    add.f16 %f1, %f2, %f3;", 10, "add.f16"),
        ("    mul.f32 %f1, %f2, %f3;", 10, "mul.f32"),
        ("    div.approx.f32 %f1, %f2, %f3;", 10, "div.approx.f32"),
        ("    cvt.rn.f16.f32 %f1, %f2;", 10, "cvt.rn.f16.f32"),
        (
            "    atom.global.add.f32 %f1, [%rd1], %f2;",
            10,
            "atom.global.add.f32",
        ),
        ("    setp.equ.s32 %p1, %r1, %r2;", 10, "setp.equ.s32"),
        ("    .local .align 4 .b8 scratch[16];", 10, ".local"),
        ("    bar.sync 1;", 10, "bar.sync 0"),
        ("    #pragma", 10, "#"),
        ("    {\n    ret;\n    }", 10, "nested"),
    ];
    for (body, line, construct) in cases {
        let error = parse_error(body);
        assert_eq!(error.line(), Some(line), "{body}: {error}");
        assert!(error.to_string().contains(construct), "{body}: {error}");
        assert!(
            error.to_string().starts_with(&format!("PTX line {line}:")),
            "{error}"
        );
    }
}

#[test]
fn operands_are_checked_against_the_instruction_type() {
    let cases = [
        (
            "    add.s32 %r1, %f1, %r2;",
            "declared .f32 but used as .s32",
        ),
        (
            "    add.rn.f64 %f1, %f1, %f1;",
            "declared .f32 but used as .f64",
        ),
        (
            "    ld.global.f32 %f1, [%r1];",
            "declared .b32 but used as .u64",
        ),
        ("    setp.lt.s32 %r1, %r2, %r3;", "used as .pred"),
        ("    add.s32 %r1, %r2, 0f3F800000;", "bad .s32 literal"),
        ("    add.s32 %r1, %r2, 4294967296;", "does not fit"),
        ("    add.s32 %r1, %r9, 1;", "undeclared register `%r9`"),
        ("    bra NOWHERE;", "undefined label `NOWHERE`"),
        ("    add.s32 %r1, %r2;", "expected 3 operands, found 2"),
        ("    mov.f32 %f1, %tid.x;", "special register"),
        (
            "    ld.param.f32 %f1, [data];",
            "declared .u64, loaded as .f32",
        ),
        (
            "    ld.global.f32 %f1, [tile];",
            "global addresses must be registers",
        ),
        ("    @%r1 ret;", "declared .b32 but used as .pred"),
    ];
    for (body, message) in cases {
        let error = parse_error(body);
        assert_eq!(error.line(), Some(10), "{body}: {error}");
        assert!(error.message().contains(message), "{body}: {error}");
    }
}

#[test]
fn module_header_and_declarations_are_checked() {
    let bad_version = Module::parse(".version 9.0\n.target sm_80\n.address_size 64\n").unwrap_err();
    assert_eq!(bad_version.line(), Some(1));
    let bad_target = Module::parse(".version 8.0\n.target sm_100\n").unwrap_err();
    assert_eq!(bad_target.line(), Some(2));
    let bad_size = Module::parse(".version 8.0\n.target sm_80\n.address_size 32\n").unwrap_err();
    assert_eq!(bad_size.line(), Some(3));
    let directive = Module::parse(&format!(
        "{HEADER}.visible .entry k()\n.maxntid 256, 1, 1\n{{\nret;\n}}\n"
    ))
    .unwrap_err();
    assert_eq!(directive.line(), Some(5));
    assert!(directive.message().contains(".maxntid"), "{directive}");
    let twice = parse_error("    .reg .b32 %r3;");
    assert!(twice.message().contains("declared twice"), "{twice}");
    let unclosed =
        Module::parse(&format!("{HEADER}.visible .entry k()\n{{\n    ret;\n")).unwrap_err();
    assert!(unclosed.message().contains("no closing"), "{unclosed}");
    let module = Module::parse(&format!(
        "{HEADER}.entry a(.param .f64 x, .param .s32 y)\n{{\n.shared .align 16 .b8 first[10];\n.shared .align 8 .b8 second[8];\nret;\n}}\n.visible .entry b()\n{{\nexit;\n}}\n"
    ))
    .unwrap();
    assert_eq!(module.entry_names(), ["a", "b"]);
    let params = module.params("a").unwrap();
    assert_eq!(
        (params[1].name.as_str(), params[1].ty),
        ("y", super::super::ParamType::S32)
    );
    assert_eq!(module.shared_bytes("a"), Some(24));
    assert_eq!(module.params("missing"), None);
}

/// A kernel in which thread `t` stores `t` (as u32) to byte `4 t + 8` of `data`.
fn store_kernel() -> Module {
    parse_body(
        "    mov.u32 %r1, %tid.x;
    ld.param.u64 %rd1, [data];
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3+8], %r1;
    ret;",
    )
    .unwrap()
}

#[test]
fn launch_arguments_are_checked() {
    let module = store_kernel();
    let mut memory = Memory::new();
    let data = memory.alloc(64);
    let run = |memory: &mut Memory, grid, block, params: &[ParamValue]| {
        launch(&module, "k", grid, block, params, memory)
            .unwrap_err()
            .kind()
    };
    let ok = [ParamValue::U64(data)];
    assert_eq!(
        launch(&module, "other", [1; 3], [1; 3], &ok, &mut memory)
            .unwrap_err()
            .kind(),
        EmulatorErrorKind::UnknownEntry
    );
    assert_eq!(
        run(&mut memory, [1; 3], [1; 3], &[]),
        EmulatorErrorKind::ParamMismatch
    );
    assert_eq!(
        run(&mut memory, [1; 3], [1; 3], &[ParamValue::U32(0)]),
        EmulatorErrorKind::ParamMismatch
    );
    assert_eq!(
        run(&mut memory, [0, 1, 1], [1; 3], &ok),
        EmulatorErrorKind::InvalidLaunch
    );
    assert_eq!(
        run(&mut memory, [1; 3], [64, 32, 1], &ok),
        EmulatorErrorKind::InvalidLaunch
    );
    assert_eq!(
        run(&mut memory, [1; 3], [1, 1, 65], &ok),
        EmulatorErrorKind::InvalidLaunch
    );
    assert!(launch(&module, "k", [1; 3], [14, 1, 1], &ok, &mut memory).is_ok());
}

#[test]
fn out_of_bounds_store_names_instruction_thread_and_address() {
    let module = store_kernel();
    let mut memory = Memory::new();
    let data = memory.alloc(64);
    let before = memory.read(data, 64).unwrap();
    // 16 threads store to data[2..18): thread 14 is the first past the 64 bytes.
    let error = launch(
        &module,
        "k",
        [1, 1, 1],
        [16, 1, 1],
        &[ParamValue::U64(data)],
        &mut memory,
    )
    .unwrap_err();
    assert_eq!(error.kind(), EmulatorErrorKind::OutOfBounds);
    assert_eq!(error.line(), Some(14));
    let text = error.to_string();
    for expected in [
        "st.global.u32 [%rd3+8], %r1",
        "thread (14,0,0) of block (0,0,0)",
        &format!("{:#x}", data + 64),
        "global store of 4 bytes",
    ] {
        assert!(text.contains(expected), "`{expected}` missing from: {text}");
    }
    // Threads before the faulting one did store.
    assert_ne!(memory.read(data, 64).unwrap(), before);
}

#[test]
fn misaligned_and_shared_faults() {
    let misaligned = parse_body(
        "    ld.param.u64 %rd1, [data];
    ld.global.f32 %f1, [%rd1+2];
    ret;",
    )
    .unwrap();
    let mut memory = Memory::new();
    let data = memory.alloc(64);
    let error = launch(
        &misaligned,
        "k",
        [1; 3],
        [1; 3],
        &[ParamValue::U64(data)],
        &mut memory,
    )
    .unwrap_err();
    assert_eq!(error.kind(), EmulatorErrorKind::Misaligned, "{error}");
    let shared = parse_body(
        "    .shared .align 4 .b8 tile[32];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd1, %r1, 4;
    mov.u64 %rd2, tile;
    add.s64 %rd3, %rd2, %rd1;
    st.shared.u32 [%rd3], %r1;
    ret;",
    )
    .unwrap();
    assert!(
        launch(
            &shared,
            "k",
            [1; 3],
            [8, 1, 1],
            &[ParamValue::U64(data)],
            &mut memory
        )
        .is_ok()
    );
    let error = launch(
        &shared,
        "k",
        [1; 3],
        [9, 1, 1],
        &[ParamValue::U64(data)],
        &mut memory,
    )
    .unwrap_err();
    assert_eq!(error.kind(), EmulatorErrorKind::OutOfBounds, "{error}");
    assert!(error.message().contains("thread (8,0,0)"), "{error}");
    assert!(error.message().contains("shared store"), "{error}");
}

#[test]
fn shared_memory_starts_as_poison_in_every_block() {
    let module = parse_body(
        "    .shared .align 4 .b8 tile[4];
    ld.shared.f32 %f1, [tile];
    ld.param.u64 %rd1, [data];
    mov.u32 %r1, %ctaid.x;
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.f32 [%rd3], %f1;
    st.shared.f32 [tile], 0f3F800000;
    ret;",
    )
    .unwrap();
    let mut memory = Memory::new();
    let data = memory.alloc(8);
    launch(
        &module,
        "k",
        [2, 1, 1],
        [1; 3],
        &[ParamValue::U64(data)],
        &mut memory,
    )
    .unwrap();
    // Block 1 does not see block 0's store.
    for value in memory.read_f32s(data, 2).unwrap() {
        assert!(value.is_nan(), "{value}");
    }
}

#[test]
fn reading_an_unwritten_register_is_an_error() {
    let module = parse_body(
        "    mov.u32 %r1, %tid.x;
    setp.eq.u32 %p1, %r1, 3;
    @%p1 mov.u32 %r2, 7;
    add.s32 %r3, %r2, 1;
    ret;",
    )
    .unwrap();
    let mut memory = Memory::new();
    let error = launch(
        &module,
        "k",
        [1; 3],
        [4, 1, 1],
        &[ParamValue::U64(1)],
        &mut memory,
    )
    .unwrap_err();
    assert_eq!(error.kind(), EmulatorErrorKind::UnwrittenRegister);
    assert_eq!(error.line(), Some(13));
    assert!(error.message().contains("%r2"), "{error}");
    assert!(error.message().contains("thread (0,0,0)"), "{error}");
    // A one-thread launch has only thread 0, which never writes %r2 either.
    let error = launch(
        &module,
        "k",
        [1; 3],
        [1, 1, 1],
        &[ParamValue::U64(1)],
        &mut memory,
    )
    .unwrap_err();
    assert_eq!(error.kind(), EmulatorErrorKind::UnwrittenRegister);
}

#[test]
fn barrier_reached_by_only_some_threads_is_a_deadlock() {
    let module = parse_body(
        "    mov.u32 %r1, %tid.x;
    setp.lt.u32 %p1, %r1, 16;
    @%p1 bra LOW;
    bar.sync 0;
    ret;
LOW:
    bar.sync 0;
    ret;",
    )
    .unwrap();
    let mut memory = Memory::new();
    let error = launch(
        &module,
        "k",
        [1; 3],
        [32, 1, 1],
        &[ParamValue::U64(1)],
        &mut memory,
    )
    .unwrap_err();
    assert_eq!(error.kind(), EmulatorErrorKind::BarrierDeadlock, "{error}");
    assert!(
        error.message().contains("line 16") && error.message().contains("line 13"),
        "{error}"
    );
    // With every thread on one side the same program is fine.
    assert!(
        launch(
            &module,
            "k",
            [1; 3],
            [16, 1, 1],
            &[ParamValue::U64(1)],
            &mut memory
        )
        .is_ok()
    );
}

#[test]
fn a_thread_that_never_reaches_the_barrier_is_stopped() {
    let module = parse_body(
        "    mov.u32 %r1, %tid.x;
    setp.eq.u32 %p1, %r1, 5;
    @%p1 bra SPIN;
    bar.sync 0;
    ret;
SPIN:
    bra SPIN;",
    )
    .unwrap();
    let mut memory = Memory::new();
    let options = LaunchOptions {
        max_instructions_per_thread: 10_000,
        ..LaunchOptions::default()
    };
    let error = launch_with_options(
        &module,
        "k",
        [1; 3],
        [8, 1, 1],
        &[ParamValue::U64(1)],
        &mut memory,
        options,
    )
    .unwrap_err();
    assert_eq!(error.kind(), EmulatorErrorKind::StepLimit, "{error}");
    assert!(error.message().contains("thread (5,0,0)"), "{error}");
    assert_eq!(error.line(), Some(16));
}

#[test]
fn emulator_errors_convert_to_backend_errors() {
    let error: stencil_core::Error = parse_error("    frobnicate;").into();
    assert_eq!(error.kind(), stencil_core::ErrorKind::Backend);
    assert!(error.message().contains("frobnicate"));
}
