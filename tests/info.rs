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

#[test]
fn an_out_of_bounds_value_names_the_value_the_bound_and_the_source() {
    let out = Command::new(env!("CARGO_BIN_EXE_steadfast-info"))
        .arg("--params")
        .env("STEADFAST_HEARTBEAT_MS", "18446744073709")
        .env("STEADFAST_DETECT_TIMEOUT_MS", "18446744073710")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("heartbeat_ms = 18446744073709")
            && err.contains("1..=3600000 ms")
            && err.contains("STEADFAST_HEARTBEAT_MS"),
        "{err}"
    );
}

#[test]
fn a_misspelt_variable_is_warned_about_with_the_nearest_name() {
    let out = Command::new(env!("CARGO_BIN_EXE_steadfast-info"))
        .arg("--params")
        .env("STEADFAST_HEARTBEET_MS", "25")
        .env("STEADFAST_RUN_SECRET", "not a parameter, but known")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("STEADFAST_HEARTBEET_MS")
            && err.contains("did you mean STEADFAST_HEARTBEAT_MS?"),
        "{err}"
    );
    assert!(!err.contains("STEADFAST_RUN_SECRET"), "{err}");
}

#[test]
fn every_parameter_is_listed_with_its_bound() {
    let out = Command::new(env!("CARGO_BIN_EXE_steadfast-info"))
        .arg("--params")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    for p in steadfast::params::PARAMS {
        assert!(
            text.lines()
                .any(|l| l.contains(p.name) && l.contains(&p.kind.to_string())),
            "{} without its bound: {text}",
            p.name
        );
    }
}
