//! Finds the system libfabric with pkg-config, generates bindings with bindgen and
//! compiles the wrappers of libfabric's static inline functions.

use std::env;
use std::path::PathBuf;

/// Oldest libfabric whose API this crate is written against.
const MIN_LIBFABRIC: &str = "1.15";

fn main() {
    println!("cargo::rerun-if-changed=wrapper.h");
    println!("cargo::rerun-if-env-changed=PKG_CONFIG_PATH");
    let library = match pkg_config::Config::new()
        .atleast_version(MIN_LIBFABRIC)
        .probe("libfabric")
    {
        Ok(library) => library,
        Err(err) => {
            let first_line = err
                .to_string()
                .lines()
                .next()
                .unwrap_or_default()
                .to_owned();
            println!(
                "cargo::error=libfabric >= {MIN_LIBFABRIC} not found by pkg-config ({first_line}): \
                 install libfabric-dev (Debian/Ubuntu) or point PKG_CONFIG_PATH at the directory \
                 holding libfabric.pc"
            );
            std::process::exit(1);
        }
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
