//! Helpers shared by the tests and the peer binary.
#![allow(dead_code)]

use std::time::Duration;

use steadfast_fabric::{FabricConfig, MessengerConfig};

/// Tags shared with the peer binary.
pub mod tag {
    pub const STOP: u64 = 0xff_ffff;
    pub const GO: u64 = 0xff_fff0;
    pub const DESCRIPTOR: u64 = 0xff_fff1;
    pub const DONE: u64 = 0xff_fff2;
    pub const CONTENT: u64 = 0xff_fff3;
    pub const OK: u64 = 0xff_fff4;
}

/// The providers every test runs on.
pub const PROVIDERS: [&str; 4] = ["tcp", "tcp;ofi_rxm", "net", "shm"];

/// Fabric configuration for a provider: socket providers on loopback only.
pub fn fabric_config(provider: &str) -> FabricConfig {
    let config = FabricConfig::new(provider);
    if provider == "shm" {
        config
    } else {
        config.domain("lo")
    }
}

/// Messenger settings for tests: generous timeout so a bug fails instead of hanging.
pub fn messenger_config(provider: &str, id: u32) -> MessengerConfig {
    // net needs its saved-message limit raised before libfabric loads its providers.
    steadfast_fabric::apply_quirk_environment();
    let mut config = MessengerConfig::new(fabric_config(provider), id);
    config.operation_timeout = Some(Duration::from_secs(120));
    config
}

/// Deterministic content for message `seed` of `len` bytes.
pub fn pattern(len: usize, seed: u64) -> Vec<u8> {
    (0..len)
        .map(|i| {
            (i as u64)
                .wrapping_mul(131)
                .wrapping_add(seed.wrapping_mul(7)) as u8
                ^ (i >> 8) as u8
        })
        .collect()
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub fn unhex(s: &str) -> Vec<u8> {
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).expect("hex"))
        .collect()
}
