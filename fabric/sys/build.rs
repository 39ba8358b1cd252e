//! Finds libfabric, generates bindings with bindgen and compiles the wrappers of
//! libfabric's static inline functions.
//!
//! Where libfabric comes from, first match wins:
//! 1. `STEADFAST_LIBFABRIC_DIR=<prefix>`: `<prefix>/include/rdma/fabric.h` and
//!    `libfabric` in `<prefix>/lib64` or `<prefix>/lib` (as `OPENSSL_DIR` does for
//!    openssl-sys: an explicit choice wins over what pkg-config finds, since cluster
//!    module environments often have a system `libfabric.pc` as well). The library
//!    directory is not added to the run-time search path: load the same module at run
//!    time, or set `LD_LIBRARY_PATH`, or link with `-C link-arg=-Wl,-rpath,<libdir>`.
//! 2. pkg-config `libfabric` (honours `PKG_CONFIG_PATH`).
//!
//! `STEADFAST_LIBFABRIC_STATIC=1` links `libfabric.a` instead of the shared library
//! (prefix mode only; pkg-config mode follows pkg-config's `--static` rules through
//! `PKG_CONFIG_ALL_STATIC`). The runbooks in `docs/clusters/` say what each site sets.

use std::env;
use std::path::{Path, PathBuf};

/// Oldest libfabric whose API this crate is written against.
const MIN_LIBFABRIC: (u32, u32) = (1, 15);

/// What the build needs of a libfabric installation.
struct Found {
    include_paths: Vec<PathBuf>,
    version: String,
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
fn from_prefix(prefix: &Path) -> Found {
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
    let static_link = env::var("STEADFAST_LIBFABRIC_STATIC").is_ok_and(|v| v == "1");
    let file = if static_link {
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
    println!("cargo::rustc-link-search=native={}", libdir.display());
    if static_link {
        println!("cargo::rustc-link-lib=static=fabric");
    } else {
        println!("cargo::rustc-link-lib=fabric");
    }
    Found {
        include_paths: vec![include],
        version: format!("{major}.{minor}"),
    }
}

/// libfabric through pkg-config.
fn from_pkg_config() -> Found {
    let min = format!("{}.{}", MIN_LIBFABRIC.0, MIN_LIBFABRIC.1);
    match pkg_config::Config::new()
        .atleast_version(&min)
        .probe("libfabric")
    {
        Ok(library) => Found {
            include_paths: library.include_paths,
            version: library.version,
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

fn main() {
    println!("cargo::rerun-if-changed=wrapper.h");
    println!("cargo::rerun-if-env-changed=PKG_CONFIG_PATH");
    println!("cargo::rerun-if-env-changed=STEADFAST_LIBFABRIC_DIR");
    println!("cargo::rerun-if-env-changed=STEADFAST_LIBFABRIC_STATIC");
    let library = match env::var_os("STEADFAST_LIBFABRIC_DIR").filter(|v| !v.is_empty()) {
        Some(prefix) => from_prefix(Path::new(&prefix)),
        None => from_pkg_config(),
    };
    println!(
        "cargo::rustc-env=STEADFAST_LIBFABRIC_BUILD_VERSION={}",
        library.version
    );

    let out_dir = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let manifest_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let header = manifest_dir.join("wrapper.h");
    let wrappers = out_dir.join("fabric_static_fns");
    let include_args: Vec<String> = library
        .include_paths
        .iter()
        .map(|p| format!("-I{}", p.display()))
        .collect();

    let bindings = bindgen::Builder::default()
        .header(header.to_str().expect("manifest path is UTF-8"))
        .clang_args(&include_args)
        .allowlist_function("fi_.*")
        .allowlist_type("fi_.*")
        .allowlist_type("fid_.*")
        .allowlist_var("FI_.*")
        .allowlist_var("FID_.*")
        .wrap_static_fns(true)
        .wrap_static_fns_path(&wrappers)
        .derive_default(true)
        .layout_tests(false)
        .generate_comments(false)
        .prepend_enum_name(false)
        .parse_callbacks(Box::new(bindgen::CargoCallbacks::new()))
        .generate()
        .expect("bindgen could not read the libfabric headers");
    bindings
        .write_to_file(out_dir.join("bindings.rs"))
        .expect("writing bindings.rs");

    let mut build = cc::Build::new();
    build
        .file(wrappers.with_extension("c"))
        .include(&manifest_dir)
        .opt_level(2)
        .warnings(false);
    for path in &library.include_paths {
        build.include(path);
    }
    build.compile("steadfast_fabric_static_fns");
}
