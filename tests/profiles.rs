//! Every shipped platform profile (`profiles/*.conf`) is a valid params file: each line
//! names a known parameter and each value has the right kind and is within its bound.

use steadfast::params::Params;

#[test]
fn every_shipped_profile_loads_and_validates() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("profiles");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).expect("profiles directory") {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("conf") {
            continue;
        }
        let file = path.to_string_lossy().to_string();
        let env = move |k: &str| (k == "STEADFAST_PARAM_FILE").then(|| file.clone());
        let params =
            Params::load_from(env, None).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_ne!(
            params.provider(),
            "tcp",
            "{} sets no provider",
            path.display()
        );
        seen += 1;
    }
    assert!(seen >= 4, "expected the shipped profiles, found {seen}");
}
