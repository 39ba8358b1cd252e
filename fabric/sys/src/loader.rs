//! The functions libfabric exports, resolved on first use.
//!
//! By default this crate is not linked against libfabric: [`library`] opens it with
//! `dlopen` the first time a function below needs it, and looks each symbol up with
//! `dlvsym` at the default version the build-time library had (so a newer libfabric
//! serves the structure layouts of our headers). A process that never calls into the
//! fabric never loads libfabric nor the providers' libraries it depends on.
//!
//! Which library: `STEADFAST_LIBFABRIC` (a path, or a name for the dynamic linker's
//! search) when set and not empty, and then only that; else `libfabric.so.1` through
//! the dynamic linker's search (`LD_LIBRARY_PATH`, the run path, the system cache), then
//! in the directory of the library found at build time.
//!
//! Built with `STEADFAST_LIBFABRIC_STATIC=1` or `STEADFAST_LIBFABRIC_LAZY=0`, the table
//! holds the linked functions instead and [`library`] always succeeds.
//!
//! The functions never panic: without the library, `fi_getinfo` and `fi_fabric` return
//! `-FI_ENOSYS`, `fi_dupinfo` null, `fi_version` 0, `fi_strerror` a text saying that the
//! library is missing; `fi_freeinfo` does nothing (nothing it could free exists). Callers
//! that want the reason ask [`library`] first.

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::fmt;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::OnceLock;

use crate::{fi_fabric_attr, fi_info, fid_fabric, FI_ENOSYS};

include!(concat!(env!("OUT_DIR"), "/symbol_versions.rs"));

/// The environment variable naming the library to load.
pub const LIBFABRIC_ENV: &str = "STEADFAST_LIBFABRIC";

/// The soname searched by default.
pub const LIBFABRIC_SONAME: &str = "libfabric.so.1";

type GetinfoFn = unsafe extern "C" fn(
    u32,
    *const c_char,
    *const c_char,
    u64,
    *const fi_info,
    *mut *mut fi_info,
) -> c_int;
type FreeinfoFn = unsafe extern "C" fn(*mut fi_info);
type DupinfoFn = unsafe extern "C" fn(*const fi_info) -> *mut fi_info;
type FabricFn =
    unsafe extern "C" fn(*mut fi_fabric_attr, *mut *mut fid_fabric, *mut c_void) -> c_int;
type VersionFn = unsafe extern "C" fn() -> u32;
type StrerrorFn = unsafe extern "C" fn(c_int) -> *const c_char;

/// The loaded library: its exported functions, and where it came from.
pub struct Library {
    getinfo: GetinfoFn,
    freeinfo: FreeinfoFn,
    dupinfo: DupinfoFn,
    fabric: FabricFn,
    version: VersionFn,
    strerror: StrerrorFn,
    origin: String,
}

impl Library {
    /// Where the functions come from: the path or name that was opened, or "linked".
    pub fn origin(&self) -> &str {
        &self.origin
    }
}

impl fmt::Debug for Library {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Library")
            .field("origin", &self.origin)
            .finish_non_exhaustive()
    }
}

/// Why libfabric could not be loaded: every place tried and what failed there.
#[derive(Clone, Debug)]
pub struct LoadError {
    message: String,
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for LoadError {}

/// The outcome of the first load, shared by every thread.
static LIBRARY: OnceLock<Result<Library, LoadError>> = OnceLock::new();

/// The library, loaded on the first call (thread-safe; later calls return the same
/// outcome, failures included: a process does not retry a missing library).
///
/// # Errors
/// [`LoadError`] naming the library and the dynamic linker's reason when it cannot be
/// opened or lacks one of the functions.
pub fn library() -> Result<&'static Library, &'static LoadError> {
    LIBRARY
        .get_or_init(|| {
            let loaded = load();
            if let Ok(lib) = &loaded {
                publish(lib);
            }
            loaded
        })
        .as_ref()
}

extern "C" {
    /// The table the C forwarders call through (`src/forward.c`), indexed by `Slot`.
    static steadfast_fabric_fns: [AtomicPtr<c_void>; 6];
}

/// The index of each function in `steadfast_fabric_fns` (as in `src/forward.c`).
#[derive(Clone, Copy)]
enum Slot {
    Getinfo = 0,
    Freeinfo = 1,
    Dupinfo = 2,
    Fabric = 3,
    Version = 4,
    Strerror = 5,
}

/// Hands the loaded functions to the C forwarders (which the wrapped static inline
/// functions call).
fn publish(lib: &Library) {
    let slots = [
        (Slot::Getinfo, lib.getinfo as *mut c_void),
        (Slot::Freeinfo, lib.freeinfo as *mut c_void),
        (Slot::Dupinfo, lib.dupinfo as *mut c_void),
        (Slot::Fabric, lib.fabric as *mut c_void),
        (Slot::Version, lib.version as *mut c_void),
        (Slot::Strerror, lib.strerror as *mut c_void),
    ];
    for (slot, function) in slots {
        // SAFETY: a static array of six atomic pointers defined in forward.c (the same
        // layout as `void *[6]`), only ever accessed atomically.
        let cell = unsafe { &steadfast_fabric_fns[slot as usize] };
        // ORDERING: Release; pairs with the Acquire load in forward.c's `LOADED`: a
        // C forwarder that sees the pointer calls a function of a loaded library.
        cell.store(function, Ordering::Release);
    }
}

/// Whether libfabric has been loaded through this crate (never loads it; always true
/// when it is linked).
pub fn is_loaded() -> bool {
    cfg!(steadfast_libfabric_linked) || LIBRARY.get().is_some_and(Result::is_ok)
}

#[cfg(steadfast_libfabric_linked)]
fn load() -> Result<Library, LoadError> {
    mod linked {
        use super::*;
        extern "C" {
            pub fn fi_getinfo(
                version: u32,
                node: *const c_char,
                service: *const c_char,
                flags: u64,
                hints: *const fi_info,
                info: *mut *mut fi_info,
            ) -> c_int;
            pub fn fi_freeinfo(info: *mut fi_info);
            pub fn fi_dupinfo(info: *const fi_info) -> *mut fi_info;
            pub fn fi_fabric(
                attr: *mut fi_fabric_attr,
                fabric: *mut *mut fid_fabric,
                context: *mut c_void,
            ) -> c_int;
            pub fn fi_version() -> u32;
            pub fn fi_strerror(errnum: c_int) -> *const c_char;
        }
    }
    let _ = SYMBOL_VERSIONS;
    Ok(Library {
        getinfo: linked::fi_getinfo,
        freeinfo: linked::fi_freeinfo,
        dupinfo: linked::fi_dupinfo,
        fabric: linked::fi_fabric,
        version: linked::fi_version,
        strerror: linked::fi_strerror,
        origin: "linked".to_owned(),
    })
}

#[cfg(not(steadfast_libfabric_linked))]
fn load() -> Result<Library, LoadError> {
    let candidates: Vec<String> = match std::env::var(LIBFABRIC_ENV) {
        Ok(v) if !v.is_empty() => vec![v],
        _ => {
            let mut c = vec![LIBFABRIC_SONAME.to_owned()];
            let build_dir = env!("STEADFAST_LIBFABRIC_BUILD_LIBDIR");
            if !build_dir.is_empty() {
                c.push(format!("{build_dir}/{LIBFABRIC_SONAME}"));
            }
            c
        }
    };
    let mut tried = Vec::new();
    for candidate in &candidates {
        match open(candidate) {
            Ok(handle) => return resolve(handle, candidate),
            Err(reason) => tried.push(reason),
        }
    }
    Err(LoadError {
        message: format!(
            "libfabric could not be loaded (needed for the fabric route; set {LIBFABRIC_ENV} to its path): {}",
            tried.join("; ")
        ),
    })
}

/// The dynamic linker's last error text, or `fallback`.
#[cfg(not(steadfast_libfabric_linked))]
fn dl_error(fallback: &str) -> String {
    // SAFETY: dlerror takes no argument; its result is null or a NUL-terminated string
    // valid until the next dl* call on this thread, copied at once.
    let text = unsafe { libc::dlerror() };
    if text.is_null() {
        fallback.to_owned()
    } else {
        // SAFETY: non-null, NUL-terminated (above).
        unsafe { CStr::from_ptr(text) }
            .to_string_lossy()
            .into_owned()
    }
}

/// `dlopen(name)`, local binding, never closed (providers stay registered).
#[cfg(not(steadfast_libfabric_linked))]
fn open(name: &str) -> Result<*mut c_void, String> {
    let c_name = CString::new(name).map_err(|_| format!("{name:?}: contains a NUL byte"))?;
    // SAFETY: a valid C string; running the library's constructors is what loading it
    // means, and libfabric's are made for that.
    let handle = unsafe { libc::dlopen(c_name.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    if handle.is_null() {
        Err(dl_error(&format!("dlopen({name}) failed")))
    } else {
        Ok(handle)
    }
}

/// Looks every function up in `handle`, opened from `origin`.
#[cfg(not(steadfast_libfabric_linked))]
fn resolve(handle: *mut c_void, origin: &str) -> Result<Library, LoadError> {
    let missing = |name: &str, why: String| LoadError {
        message: format!("{origin} lacks {name} ({why}): not a libfabric this build can use"),
    };
    macro_rules! symbol {
        ($name:literal, $ty:ty) => {{
            let address = lookup(handle, $name).map_err(|why| missing($name, why))?;
            // SAFETY: the symbol of that name in libfabric, at the version whose
            // prototype the bindings were generated from, has type $ty (the same
            // prototype, written in this file).
            unsafe { std::mem::transmute::<*mut c_void, $ty>(address) }
        }};
    }
    Ok(Library {
        getinfo: symbol!("fi_getinfo", GetinfoFn),
        freeinfo: symbol!("fi_freeinfo", FreeinfoFn),
        dupinfo: symbol!("fi_dupinfo", DupinfoFn),
        fabric: symbol!("fi_fabric", FabricFn),
        version: symbol!("fi_version", VersionFn),
        strerror: symbol!("fi_strerror", StrerrorFn),
        origin: origin.to_owned(),
    })
}

/// The address of `name` in `handle`: at its build-time default version when the
/// build recorded one, else the library's default.
#[cfg(not(steadfast_libfabric_linked))]
fn lookup(handle: *mut c_void, name: &str) -> Result<*mut c_void, String> {
    let c_name = CString::new(name).map_err(|_| "NUL in name".to_owned())?;
    let version = SYMBOL_VERSIONS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, v)| *v);
    let address = match version {
        #[cfg(target_env = "gnu")]
        Some(version) => {
            let c_version = CString::new(version).map_err(|_| "NUL in version".to_owned())?;
            // SAFETY: a handle from dlopen, two valid C strings.
            let address = unsafe { libc::dlvsym(handle, c_name.as_ptr(), c_version.as_ptr()) };
            if address.is_null() {
                return Err(dl_error(&format!("no version {version}")));
            }
            address
        }
        _ => {
            // SAFETY: a handle from dlopen, a valid C string.
            unsafe { libc::dlsym(handle, c_name.as_ptr()) }
        }
    };
    if address.is_null() {
        Err(dl_error("not found"))
    } else {
        Ok(address)
    }
}

/// What `fi_strerror` says without the library (the same text as `src/forward.c`).
const NOT_LOADED: &CStr = c"libfabric is not loaded";

/// `fi_getinfo`, through the loaded library (`-FI_ENOSYS` without it).
///
/// # Safety
/// As libfabric's `fi_getinfo`.
pub unsafe fn fi_getinfo(
    version: u32,
    node: *const c_char,
    service: *const c_char,
    flags: u64,
    hints: *const fi_info,
    info: *mut *mut fi_info,
) -> c_int {
    match library() {
        // SAFETY: the caller keeps fi_getinfo's contract.
        Ok(lib) => unsafe { (lib.getinfo)(version, node, service, flags, hints, info) },
        Err(_) => -(FI_ENOSYS as c_int),
    }
}

/// `fi_freeinfo`, through the loaded library (nothing to free without it: every
/// `fi_info` comes from it).
///
/// # Safety
/// As libfabric's `fi_freeinfo`.
pub unsafe fn fi_freeinfo(info: *mut fi_info) {
    if let Ok(lib) = library() {
        // SAFETY: the caller keeps fi_freeinfo's contract.
        unsafe { (lib.freeinfo)(info) }
    }
}

/// `fi_dupinfo`, through the loaded library (null without it).
///
/// # Safety
/// As libfabric's `fi_dupinfo`.
pub unsafe fn fi_dupinfo(info: *const fi_info) -> *mut fi_info {
    match library() {
        // SAFETY: the caller keeps fi_dupinfo's contract.
        Ok(lib) => unsafe { (lib.dupinfo)(info) },
        Err(_) => std::ptr::null_mut(),
    }
}

/// `fi_fabric`, through the loaded library (`-FI_ENOSYS` without it).
///
/// # Safety
/// As libfabric's `fi_fabric`.
pub unsafe fn fi_fabric(
    attr: *mut fi_fabric_attr,
    fabric: *mut *mut fid_fabric,
    context: *mut c_void,
) -> c_int {
    match library() {
        // SAFETY: the caller keeps fi_fabric's contract.
        Ok(lib) => unsafe { (lib.fabric)(attr, fabric, context) },
        Err(_) => -(FI_ENOSYS as c_int),
    }
}

/// `fi_version`, through the loaded library (0 without it).
///
/// # Safety
/// None beyond libfabric's (it takes no argument); `unsafe` like every binding.
pub unsafe fn fi_version() -> u32 {
    match library() {
        // SAFETY: fi_version takes no argument.
        Ok(lib) => unsafe { (lib.version)() },
        Err(_) => 0,
    }
}

/// `fi_strerror`, through the loaded library (a fixed text without it).
///
/// # Safety
/// None beyond libfabric's (any `int` is accepted); `unsafe` like every binding.
pub unsafe fn fi_strerror(errnum: c_int) -> *const c_char {
    match library() {
        // SAFETY: fi_strerror accepts any int.
        Ok(lib) => unsafe { (lib.strerror)(errnum) },
        Err(_) => NOT_LOADED.as_ptr(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loads_the_installed_library_with_every_function() {
        let lib = library().expect("libfabric is installed on the build machine");
        assert!(!lib.origin().is_empty());
        // SAFETY: no arguments.
        let version = unsafe { fi_version() };
        assert_eq!(
            version >> 16,
            crate::FI_MAJOR_VERSION,
            "major of {version:#x}"
        );
        // SAFETY: any int is accepted.
        let text = unsafe { CStr::from_ptr(fi_strerror(crate::FI_EAGAIN as c_int)) };
        assert_ne!(text, NOT_LOADED);
        assert!(is_loaded());
        // The wrapped inline fi_allocinfo calls fi_dupinfo through the C forwarder.
        // SAFETY: the library is loaded (above); the result is freed once.
        unsafe {
            let info = crate::fi_allocinfo();
            assert!(!info.is_null(), "the C forwarder reached fi_dupinfo");
            fi_freeinfo(info);
        }
    }

    #[cfg(not(steadfast_libfabric_linked))]
    #[test]
    fn versions_were_recorded_for_the_build_time_library() {
        // The Debian/Ubuntu libfabric versions its symbols; a build against it must
        // have found them, or dlvsym would silently degrade to dlsym.
        if std::path::Path::new("/usr/lib/x86_64-linux-gnu/libfabric.so.1").exists() {
            assert!(
                SYMBOL_VERSIONS.iter().any(|(n, _)| *n == "fi_getinfo"),
                "{SYMBOL_VERSIONS:?}"
            );
        }
    }

    #[cfg(not(steadfast_libfabric_linked))]
    #[test]
    fn a_missing_library_or_version_is_an_error_naming_it() {
        let err = open("/nonexistent/libfabric.so.1").expect_err("no such file");
        assert!(err.contains("/nonexistent/libfabric.so.1"), "{err}");
        let handle = open(LIBFABRIC_SONAME).expect("installed");
        let err = lookup(handle, "fi_no_such_function").expect_err("absent");
        assert!(!err.is_empty());
    }
}
