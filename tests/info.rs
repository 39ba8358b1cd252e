//! steadfast-info reports the libfabric version, what `tcp` resolves to, the topology
//! and every parameter with its source; a bad parameter value is an error naming it.

use std::process::Command;

#[test]
fn info_lists_providers_topology_and_every_parameter_with_its_source() {
    let out = Command::new(env!("CARGO_BIN_EXE_steadfast-info"))
        .env("STEADFAST_HEARTBEAT_MS", "25")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("libfabric 1."), "{text}");
    assert!(text.contains("tcp -> "), "{text}");
    assert!(text.contains("topology: "), "{text}");
    for p in steadfast::params::PARAMS {
        assert!(text.contains(p.name), "{} missing: {text}", p.name);
    }
    assert!(
        text.lines().any(|l| l.contains("heartbeat_ms")
            && l.contains("25")
            && l.contains("STEADFAST_HEARTBEAT_MS")),
        "{text}"
    );
}

#[test]
fn a_bad_value_is_named_with_its_source() {
    let out = Command::new(env!("CARGO_BIN_EXE_steadfast-info"))
        .env("STEADFAST_SHM_EAGER_MAX", "lots")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        err.contains("shm_eager_max") && err.contains("STEADFAST_SHM_EAGER_MAX"),
        "{err}"
    );
}
