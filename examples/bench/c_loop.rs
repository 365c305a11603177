//! The naive C loops the cache-resident rows are compared with: one C file, written here,
//! compiled in the run by the system's `cc` (`-O3 -march=native`, once as gcc contracts by
//! default and once with `-ffp-contract=off`) into two shared objects, and loaded with the C
//! library's `dlopen`. Each function is the loop a C programmer writes first: three nested
//! loops over the interior, one indexed expression per point in the kernel's order of
//! operations (so the uncontracted loop gives the library's bits), `restrict` pointers. Beside
//! them, the same loop copying the input to the output (`copy_f64`, `copy_f32`), plain
//! vector loads and stores (gcc's rewriting of the loop into `memcpy` calls turned off for
//! it): the least traffic a one-input sweep with plain stores moves (each input point read
//! once, each output point written once), which is the bound a sweep of grids the
//! last-level cache holds runs against.

use std::ffi::{CStr, CString, c_char, c_int, c_void};
use std::path::PathBuf;
use std::process::Command;

/// The loops, for `double` (suffix `f64`) and `float` (`f32`). Every function takes the input
/// and the output at interior point 0, `d` = (n0, n1, n2, s0, s1): the interior extents and
/// the strides of the two outer dimensions (a 2-D grid is one plane: n0 = 1), and the
/// coefficients.
const SOURCE: &str = r#"
#define U(di, dj, dk) u[p + (di) * s0 + (dj) * s1 + (dk)]
#define SWEEP(T, NAME, EXPR)                                                      \
    void NAME(const T *restrict u, T *restrict out, const long *d, const T *c) {  \
        const long n0 = d[0], n1 = d[1], n2 = d[2], s0 = d[3], s1 = d[4];         \
        const T c0 = c[0], c1 = c[1], c2 = c[2], c3 = c[3], c4 = c[4];            \
        (void)c2; (void)c3; (void)c4;                                             \
        for (long i = 0; i < n0; i++)                                             \
            for (long j = 0; j < n1; j++)                                         \
                for (long k = 0; k < n2; k++) {                                   \
                    const long p = i * s0 + j * s1 + k;                           \
                    out[p] = EXPR;                                                \
                }                                                                 \
    }
#define FACES(r) (U(-r, 0, 0) + U(r, 0, 0) + U(0, -r, 0) + U(0, r, 0) + U(0, 0, -r) + U(0, 0, r))
#define EDGES (U(-1, -1, 0) + U(-1, 1, 0) + U(1, -1, 0) + U(1, 1, 0) + U(-1, 0, -1) \
    + U(-1, 0, 1) + U(1, 0, -1) + U(1, 0, 1) + U(0, -1, -1) + U(0, -1, 1) + U(0, 1, -1) + U(0, 1, 1))
#define CORNERS (U(-1, -1, -1) + U(-1, -1, 1) + U(-1, 1, -1) + U(-1, 1, 1) + U(1, -1, -1) \
    + U(1, -1, 1) + U(1, 1, -1) + U(1, 1, 1))
#define KERNELS(T, S)                                                                        \
    SWEEP(T, w1_##S, c0 * U(0, 0, 0) + c1 * FACES(1))                                        \
    SWEEP(T, w2_##S, c0 * U(0, 0, 0) + c1 * FACES(1) + c2 * EDGES + c3 * CORNERS)            \
    SWEEP(T, w3_##S, c0 * U(0, 0, 0) + c1 * (U(0, -1, 0) + U(0, 1, 0) + U(0, 0, -1) + U(0, 0, 1))) \
    SWEEP(T, star4_##S, c0 * U(0, 0, 0) + c1 * FACES(1) + c2 * FACES(2) + c3 * FACES(3)      \
                            + c4 * FACES(4))                                         \
    COPY(T, copy_##S)
/* A loop of plain vector loads and stores: without the attribute gcc makes the copy a memcpy
   call per row, and the C library's memcpy may store without reading the lines first. */
#define COPY(T, NAME) __attribute__((optimize("no-tree-loop-distribute-patterns"))) \
    SWEEP(T, NAME, U(0, 0, 0))
KERNELS(double, f64)
KERNELS(float, f32)
"#;

/// One sweep of a C loop: input and output at interior point 0, `d` = (n0, n1, n2, s0, s1),
/// five coefficients.
pub(crate) type Sweep<T> = unsafe extern "C" fn(*const T, *mut T, *const i64, *const T);

/// The two builds of the C file, loaded.
pub(crate) struct CLoops {
    /// `cc --version`'s first line.
    pub(crate) compiler: String,
    /// The flags of the two builds ([`flags`]).
    pub(crate) flags: [String; 2],
    /// `dlopen` handles: gcc's default (contracting), then `-ffp-contract=off`.
    handles: [*mut c_void; 2],
}

// The C library's dynamic loader (in libc itself since glibc 2.34; the standard library
// links libdl on older ones).
unsafe extern "C" {
    fn dlopen(filename: *const c_char, flag: c_int) -> *mut c_void;
    fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
    fn dlerror() -> *mut c_char;
}

const RTLD_NOW: c_int = 2;

/// The flags of the two builds, in the order of [`CLoops::sweep`]'s `contract`.
const FLAGS: [&str; 2] = ["-O3 -march=native", "-O3 -march=native -ffp-contract=off"];

/// [`FLAGS`], with the target of `-march` taken from `STENCIL_BENCH_MARCH` when set: the
/// instruction counts (`bench/instructions.sh`) build the C loops for the instruction set the
/// library is built for there, one that callgrind runs.
fn flags() -> [String; 2] {
    let march = std::env::var("STENCIL_BENCH_MARCH").unwrap_or_else(|_| "native".to_string());
    FLAGS.map(|f| f.replace("-march=native", &format!("-march={march}")))
}

impl CLoops {
    /// Writes the C file to a fresh temporary folder, compiles it twice and loads both; or
    /// why not (`cc not found`, the compiler's message).
    pub(crate) fn build() -> Result<CLoops, String> {
        let version = Command::new("cc")
            .arg("--version")
            .output()
            .map_err(|_| "cc not found".to_string())?;
        let compiler = String::from_utf8_lossy(&version.stdout)
            .lines()
            .next()
            .unwrap_or("cc")
            .to_string();
        let dir = std::env::temp_dir().join(format!("stencil-bench-c-{}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let source = dir.join("loops.c");
        std::fs::write(&source, SOURCE).map_err(|e| format!("{}: {e}", source.display()))?;
        let mut handles = [std::ptr::null_mut(); 2];
        let flags = flags();
        let built = flags.iter().enumerate().try_for_each(|(k, flags)| {
            let object: PathBuf = dir.join(format!("loops{k}.so"));
            compile(&source, &object, flags)?;
            handles[k] = load(&object)?;
            Ok::<(), String>(())
        });
        let _ = std::fs::remove_dir_all(&dir);
        built.map(|()| CLoops {
            compiler,
            flags,
            handles,
        })
    }

    /// The loop `name` (`w1_f64`, ...) of the contracting build, or of the
    /// `-ffp-contract=off` one.
    pub(crate) fn sweep<T>(&self, name: &str, contract: bool) -> Sweep<T> {
        let handle = self.handles[usize::from(!contract)];
        let symbol = CString::new(name).expect("a symbol name");
        // SAFETY: `handle` is a live handle from `dlopen` (never closed) and `symbol` a
        // NUL-terminated string.
        let address = unsafe { dlsym(handle, symbol.as_ptr()) };
        assert!(!address.is_null(), "bench: no C loop {name}");
        // SAFETY: every function of `SOURCE` has `Sweep`'s signature, for the element type
        // its suffix names (the callers ask for `_f64` with f64 and `_f32` with f32).
        unsafe { std::mem::transmute::<*mut c_void, Sweep<T>>(address) }
    }
}

/// Compiles `source` into the shared object `object` with `flags`.
fn compile(source: &std::path::Path, object: &std::path::Path, flags: &str) -> Result<(), String> {
    let out = Command::new("cc")
        .args(flags.split(' '))
        .args(["-shared", "-fPIC", "-o"])
        .arg(object)
        .arg(source)
        .output()
        .map_err(|e| format!("cc: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "cc {flags} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// `dlopen`s `object`.
fn load(object: &std::path::Path) -> Result<*mut c_void, String> {
    let path = CString::new(object.as_os_str().as_encoded_bytes()).map_err(|e| e.to_string())?;
    // SAFETY: `path` is NUL-terminated; loading the object runs no initialiser of ours (the
    // C file has none).
    let handle = unsafe { dlopen(path.as_ptr(), RTLD_NOW) };
    if handle.is_null() {
        // SAFETY: after a failed `dlopen`, `dlerror` returns a NUL-terminated message.
        let message = unsafe { CStr::from_ptr(dlerror()) };
        return Err(format!("dlopen: {}", message.to_string_lossy()));
    }
    Ok(handle)
}
