//! Finds libfabric, generates bindings with bindgen and compiles the wrappers of
//! libfabric's static inline functions.
//!
//! Where libfabric comes from, first match wins:
//! 1. `STEADFAST_LIBFABRIC_DIR=<prefix>`: `<prefix>/include/rdma/fabric.h` and
//!    `libfabric` in `<prefix>/lib64` or `<prefix>/lib` (as `OPENSSL_DIR` does for
//!    openssl-sys: an explicit choice wins over what pkg-config finds, since cluster
//!    module environments often have a system `libfabric.pc` as well).
//! 2. pkg-config `libfabric` (honours `PKG_CONFIG_PATH`).
//!
//! How it is linked:
//! - by default, not at all: the few functions libfabric exports (`LOADED` below) are
//!   resolved with `dlopen` + `dlvsym` on first use (`src/loader.rs`), so a process that
//!   never touches the fabric never loads libfabric (nor the providers' own libraries,
//!   whose constructors cost ~0.2 s per process on this machine). The build-time
//!   library's directory and the default symbol version of each function are recorded
//!   for the loader;
//! - `STEADFAST_LIBFABRIC_STATIC=1` links `libfabric.a` (prefix mode; pkg-config mode
//!   follows pkg-config's `--static` rules through `PKG_CONFIG_ALL_STATIC`);
//! - `STEADFAST_LIBFABRIC_LAZY=0` links the shared library at build time as before (the
//!   library directory is then not on the run-time search path: load the same module at
//!   run time, set `LD_LIBRARY_PATH`, or link with `-C link-arg=-Wl,-rpath,<libdir>`).
//!
//! In every mode the C wrappers call our C forwarding functions (`steadfast_fi_*` in
//! `src/forward.c`, through `-D` renames) over the table the loader fills, never an
//! `fi_*` symbol, so the libraries built on this crate neither need nor export one. The runbooks in `docs/clusters/` say what each site sets.

use std::env;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Oldest libfabric whose API this crate is written against.
const MIN_LIBFABRIC: (u32, u32) = (1, 15);

/// The functions libfabric exports that this crate offers, resolved by `src/loader.rs`
/// (keep the two lists equal). Every other function in the headers is static inline and
/// wrapped in C.
const LOADED: [&str; 6] = [
    "fi_getinfo",
    "fi_freeinfo",
    "fi_dupinfo",
    "fi_fabric",
    "fi_version",
    "fi_strerror",
];

/// Functions libfabric exports that this crate does not offer: left out of the
/// bindings, so that no call can need the symbol at link time.
const NOT_OFFERED: [&str; 13] = [
    "fi_fabric2",
    "fi_tostr",
    "fi_tostr_r",
    "fi_param_define",
    "fi_param_get",
    "fi_getparams",
    "fi_freeparams",
    "fi_open",
    "fi_log",
    "fi_log_enabled",
    "fi_log_ready",
    "fi_log_sparse",
    "fi_nic_dup",
];

/// How the library is linked (see the crate comment).
#[derive(Clone, Copy, PartialEq)]
enum Link {
    Lazy,
    Shared,
    Static,
}

impl Link {
    fn from_env() -> Self {
        let set = |name: &str, value: &str| env::var(name).is_ok_and(|v| v == value);
        if set("STEADFAST_LIBFABRIC_STATIC", "1") {
            Link::Static
        } else if set("STEADFAST_LIBFABRIC_LAZY", "0") {
            Link::Shared
        } else {
            Link::Lazy
        }
    }
}

/// What the build needs of a libfabric installation.
struct Found {
    include_paths: Vec<PathBuf>,
    version: String,
    /// The shared library the headers belong to, when known (lazy mode: the loader's
    /// fallback directory and the symbol versions).
    shared_library: Option<PathBuf>,
}

/// `FI_MAJOR_VERSION` / `FI_MINOR_VERSION` from the text of `rdma/fabric.h`.
fn header_version(text: &str) -> Option<(u32, u32)> {
    let value = |name: &str| {
        text.lines().find_map(|l| {
            let mut it = l.split_whitespace();
            (it.next() == Some("#define") && it.next() == Some(name))
                .then(|| it.next()?.parse().ok())
                .flatten()
        })
    };
    Some((value("FI_MAJOR_VERSION")?, value("FI_MINOR_VERSION")?))
}

fn fail(message: String) -> ! {
    println!("cargo::error={message}");
    std::process::exit(1);
}

/// libfabric under an installation prefix (`STEADFAST_LIBFABRIC_DIR`).
fn from_prefix(prefix: &Path, link: Link) -> Found {
    let include = prefix.join("include");
    let header = include.join("rdma/fabric.h");
    let text = std::fs::read_to_string(&header).unwrap_or_else(|e| {
        fail(format!(
            "STEADFAST_LIBFABRIC_DIR={}: cannot read {} ({e}); the prefix must hold include/rdma/fabric.h",
            prefix.display(),
            header.display()
        ))
    });
    let Some((major, minor)) = header_version(&text) else {
        fail(format!(
            "{}: no FI_MAJOR_VERSION / FI_MINOR_VERSION",
            header.display()
        ));
    };
    if (major, minor) < MIN_LIBFABRIC {
        fail(format!(
            "STEADFAST_LIBFABRIC_DIR={}: libfabric {major}.{minor} is older than {}.{}",
            prefix.display(),
            MIN_LIBFABRIC.0,
            MIN_LIBFABRIC.1
        ));
    }
    let file = if link == Link::Static {
        "libfabric.a"
    } else {
        "libfabric.so"
    };
    let Some(libdir) = ["lib64", "lib"]
        .iter()
        .map(|d| prefix.join(d))
        .find(|d| d.join(file).exists())
    else {
        fail(format!(
            "STEADFAST_LIBFABRIC_DIR={}: no {file} in lib64/ or lib/",
            prefix.display()
        ));
    };
    match link {
        Link::Static => {
            println!("cargo::rustc-link-search=native={}", libdir.display());
            println!("cargo::rustc-link-lib=static=fabric");
        }
        Link::Shared => {
            println!("cargo::rustc-link-search=native={}", libdir.display());
            println!("cargo::rustc-link-lib=fabric");
        }
        Link::Lazy => {}
    }
    Found {
        include_paths: vec![include],
        version: format!("{major}.{minor}"),
        shared_library: Some(libdir.join(file)),
    }
}

/// libfabric through pkg-config (which emits the link lines unless lazy).
fn from_pkg_config(link: Link) -> Found {
    let min = format!("{}.{}", MIN_LIBFABRIC.0, MIN_LIBFABRIC.1);
    match pkg_config::Config::new()
        .atleast_version(&min)
        .cargo_metadata(link != Link::Lazy)
        .probe("libfabric")
    {
        Ok(library) => Found {
            include_paths: library.include_paths,
            version: library.version,
            shared_library: library
                .link_paths
                .iter()
                .map(|d| d.join("libfabric.so"))
                .find(|f| f.exists())
                .or_else(compiler_finds_library),
        },
        Err(err) => {
            let first_line = err
                .to_string()
                .lines()
                .next()
                .unwrap_or_default()
                .to_owned();
            fail(format!(
                "libfabric >= {min} not found by pkg-config ({first_line}): install libfabric-dev \
                 (Debian/Ubuntu), point PKG_CONFIG_PATH at the directory holding libfabric.pc, \
                 or set STEADFAST_LIBFABRIC_DIR to the installation prefix"
            ))
        }
    }
}

/// `libfabric.so` where the C compiler's linker would find it (the system directories
/// pkg-config leaves out of `--libs`).
fn compiler_finds_library() -> Option<PathBuf> {
    let compiler = cc::Build::new().cargo_metadata(false).get_compiler();
    let output = compiler
        .to_command()
        .arg("-print-file-name=libfabric.so")
        .output()
        .ok()?;
    let path = PathBuf::from(String::from_utf8(output.stdout).ok()?.trim());
    // Not found: the compiler prints the bare name back.
    (path.is_absolute() && path.exists()).then_some(path)
}

/// The default (`@@`) version of each of `LOADED` in the shared library `path`, as
/// the static linker would bind it: the loader asks `dlvsym` for exactly that version,
/// so that a newer libfabric at run time serves the structure layouts of the headers
/// the bindings came from. Empty when the library carries no versions.
fn default_versions(path: &Path) -> Vec<(&'static str, String)> {
    use object::read::elf::{ElfFile64, FileHeader, Sym};
    let data =
        std::fs::read(path).unwrap_or_else(|e| fail(format!("reading {}: {e}", path.display())));
    let parsed = (|| -> object::read::Result<Vec<(&'static str, String)>> {
        let file = ElfFile64::<object::Endianness>::parse(&*data)?;
        let endian = file.endian();
        let sections = file.elf_header().sections(endian, &*data)?;
        let Some(versions) = sections.versions(endian, &*data)? else {
            return Ok(Vec::new());
        };
        let symbols = sections.symbols(endian, &*data, object::elf::SHT_DYNSYM)?;
        let mut found = Vec::new();
        for (index, symbol) in symbols.enumerate() {
            if symbol.st_shndx(endian) == object::elf::SHN_UNDEF {
                continue;
            }
            let name = symbol.name(endian, symbols.strings())?;
            let Some(&wanted) = LOADED.iter().find(|n| n.as_bytes() == name) else {
                continue;
            };
            let index = versions.version_index(endian, index);
            if index.is_hidden() {
                continue;
            }
            if let Some(version) = versions.version(index)? {
                let version = String::from_utf8_lossy(version.name()).into_owned();
                found.push((wanted, version));
            }
        }
        Ok(found)
    })();
    parsed.unwrap_or_else(|e| {
        fail(format!(
            "{}: not a readable ELF library ({e})",
            path.display()
        ))
    })
}

/// Writes `symbol_versions.rs` and the loader's fallback directory.
fn record_for_loader(library: &Found, link: Link, out_dir: &Path) {
    let (libdir, versions) = match (&library.shared_library, link) {
        (Some(path), Link::Lazy) => (path.parent().map(Path::to_path_buf), default_versions(path)),
        _ => (None, Vec::new()),
    };
    if link == Link::Lazy && library.shared_library.is_none() {
        println!(
            "cargo::warning=libfabric.so not found beside its headers: the loader will only search the dynamic linker's path and STEADFAST_LIBFABRIC"
        );
    }
    let libdir = libdir.map(|d| d.display().to_string()).unwrap_or_default();
    println!("cargo::rustc-env=STEADFAST_LIBFABRIC_BUILD_LIBDIR={libdir}");
    let mut text = String::from(
        "/// The default version of each loaded symbol in the build-time libfabric.\n\
         const SYMBOL_VERSIONS: &[(&str, &str)] = &[\n",
    );
    for (name, version) in &versions {
        let _ = writeln!(text, "    ({name:?}, {version:?}),");
    }
    text.push_str("];\n");
    std::fs::write(out_dir.join("symbol_versions.rs"), text).expect("writing symbol_versions.rs");
}

fn main() {
    println!("cargo::rerun-if-changed=wrapper.h");
    println!("cargo::rerun-if-changed=src/forward.c");
    println!("cargo::rerun-if-env-changed=PKG_CONFIG_PATH");
    println!("cargo::rerun-if-env-changed=STEADFAST_LIBFABRIC_DIR");
    println!("cargo::rerun-if-env-changed=STEADFAST_LIBFABRIC_STATIC");
    println!("cargo::rerun-if-env-changed=STEADFAST_LIBFABRIC_LAZY");
    println!("cargo::rustc-check-cfg=cfg(steadfast_libfabric_linked)");
    let link = Link::from_env();
    let library = match env::var_os("STEADFAST_LIBFABRIC_DIR").filter(|v| !v.is_empty()) {
        Some(prefix) => from_prefix(Path::new(&prefix), link),
        None => from_pkg_config(link),
    };
    if link != Link::Lazy {
        println!("cargo::rustc-cfg=steadfast_libfabric_linked");
    }
    println!(
        "cargo::rustc-env=STEADFAST_LIBFABRIC_BUILD_VERSION={}",
        library.version
    );

    let out_dir = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    record_for_loader(&library, link, &out_dir);
    let manifest_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let header = manifest_dir.join("wrapper.h");
    let wrappers = out_dir.join("fabric_static_fns");
    let include_args: Vec<String> = library
        .include_paths
        .iter()
        .map(|p| format!("-I{}", p.display()))
        .collect();

    let mut builder = bindgen::Builder::default()
        .header(header.to_str().expect("manifest path is UTF-8"))
        .clang_args(&include_args)
        .allowlist_function("fi_.*")
        .allowlist_type("fi_.*")
        .allowlist_type("fid_.*")
        .allowlist_var("FI_.*")
        .allowlist_var("FID_.*");
    // The exported functions are declared by hand in src/loader.rs.
    for name in LOADED.iter().chain(NOT_OFFERED.iter()) {
        builder = builder.blocklist_function(name);
    }
    let bindings = builder
        .wrap_static_fns(true)
        .wrap_static_fns_path(&wrappers)
        .derive_default(true)
        .layout_tests(false)
        .generate_comments(false)
        .prepend_enum_name(false)
        .parse_callbacks(Box::new(bindgen::CargoCallbacks::new()))
        .generate()
        .expect("bindgen could not read the libfabric headers");
    let text = bindings.to_string();
    check_all_wrapped(&text);
    std::fs::write(out_dir.join("bindings.rs"), text).expect("writing bindings.rs");

    let mut build = cc::Build::new();
    build
        .file(wrappers.with_extension("c"))
        .file(manifest_dir.join("src/forward.c"))
        .include(&manifest_dir)
        .opt_level(2)
        .warnings(false);
    // The inline functions call our forwarders, never libfabric's symbols.
    for name in LOADED {
        build.define(name, Some(format!("steadfast_{name}").as_str()));
    }
    for path in &library.include_paths {
        build.include(path);
    }
    build.compile("steadfast_fabric_static_fns");
}

/// Every function left in the bindings must be a C wrapper of a static inline
/// function (`link_name = "..__extern"`): a plain declaration would be a libfabric
/// symbol that only a linked libfabric provides. A newer libfabric that exports a
/// function this build does not know is reported (add it to `NOT_OFFERED`, or to
/// `LOADED` and the loader).
fn check_all_wrapped(bindings: &str) {
    let mut previous = "";
    let mut in_extern = false;
    for line in bindings.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("extern \"C\" {") || trimmed.starts_with("unsafe extern \"C\" {") {
            in_extern = true;
        } else if line == "}" {
            in_extern = false;
        } else if let Some(rest) = trimmed.strip_prefix("pub fn ") {
            if in_extern && !previous.contains("__extern") {
                let name = rest.split('(').next().unwrap_or(rest);
                println!(
                    "cargo::warning=libfabric exports {name}, unknown to this build: calling it would need libfabric at link time (add it to NOT_OFFERED or LOADED in fabric/sys/build.rs)"
                );
            }
        }
        if !trimmed.is_empty() {
            previous = trimmed;
        }
    }
}
