//! The committed header `include/steadfast.h` is what cbindgen makes of the code: this
//! test regenerates it and fails when they differ (so CI fails on a stale header).
//! `STEADFAST_BLESS_HEADER=1` writes the regenerated header instead.

use std::path::Path;

#[test]
fn the_committed_header_matches_the_code() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(crate_dir.join("cbindgen.toml"))
        .expect("read capi/cbindgen.toml");
    let mut generated = Vec::new();
    cbindgen::Builder::new()
        .with_crate(crate_dir)
        .with_config(config)
        .generate()
        .expect("cbindgen parses capi/src")
        .write(&mut generated);
    let generated = String::from_utf8(generated).expect("the header is UTF-8");
    let path = crate_dir.join("include/steadfast.h");
    if std::env::var_os("STEADFAST_BLESS_HEADER").is_some() {
        std::fs::write(&path, &generated).expect("write include/steadfast.h");
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "{} differs from what cbindgen generates from the code; regenerate it with \
         `STEADFAST_BLESS_HEADER=1 cargo test -p steadfast-capi --test header` and commit it.\n\
         generated:\n{generated}",
        path.display()
    );
    // The interface is C: every handle is opaque, and the entry points are there.
    for needle in [
        "typedef struct sf_world sf_world;",
        "typedef struct sf_comm sf_comm;",
        "typedef struct sf_request sf_request;",
        "typedef struct sf_window sf_window;",
        "int sf_init(sf_world **world);",
        "#define SF_OK 0",
    ] {
        assert!(generated.contains(needle), "the header lacks `{needle}`");
    }
}
