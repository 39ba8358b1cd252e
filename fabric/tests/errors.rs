//! Bad input is an error, never undefined behaviour: unknown providers, malformed or
//! foreign addresses, out-of-range tags and peers.

mod common;

use common::messenger_config;
use steadfast_fabric::{
    available_providers, Error, FabricConfig, Info, Messenger, MessengerConfig, MAX_USER_TAG,
};

#[test]
fn unknown_provider_names_the_available_ones() {
    let err = Messenger::open(MessengerConfig::new(
        FabricConfig::new("no-such-provider"),
        0,
    ))
    .err()
    .expect("must fail");
    match &err {
        Error::ProviderNotFound {
            requested,
            available,
        } => {
            assert_eq!(requested, "no-such-provider");
            assert!(available.iter().any(|p| p == "shm"), "{available:?}");
        }
        other => panic!("{other:?}"),
    }
    assert!(err.to_string().contains("shm"), "{err}");
}

#[test]
fn absent_domain_is_an_error_listing_domains() {
    let err = Info::query(&FabricConfig::new("net").domain("no-such-if0")).unwrap_err();
    assert!(matches!(err, Error::NoMatchingEndpoint { .. }), "{err:?}");
    assert!(err.to_string().contains("lo"), "{err}");
}

#[test]
fn tcp_resolution_is_visible() {
    let available = available_providers().unwrap();
    let info = Info::query(&common::fabric_config("tcp")).unwrap();
    let resolution = info.resolution();
    assert_eq!(resolution.requested, "tcp");
    assert_eq!(resolution.provider, info.provider_name());
    let expected = if available.iter().any(|p| p == "tcp") {
        "tcp"
    } else if available.iter().any(|p| p == "net") {
        "net"
    } else {
        "tcp;ofi_rxm"
    };
    assert_eq!(resolution.provider, expected);
}

#[test]
fn malformed_addresses_are_rejected() {
    let mut m = Messenger::open(messenger_config("net", 0)).unwrap();
    let good = m.address().to_bytes();
    assert!(matches!(
        m.add_peer(1, &[]),
        Err(Error::MalformedAddress(_))
    ));
    assert!(matches!(
        m.add_peer(1, &good[..good.len() - 1]),
        Err(Error::MalformedAddress(_))
    ));
    let mut garbage = good.clone();
    garbage[0] ^= 0xff;
    assert!(matches!(
        m.add_peer(1, &garbage),
        Err(Error::MalformedAddress(_))
    ));
    // Every prefix and every single-byte corruption of the header: an error or a
    // well-formed address, never a crash.
    for len in 0..good.len() {
        assert!(m.add_peer(2, &good[..len]).is_err());
    }
    for i in 0..32 {
        let mut b = good.clone();
        b[i] = b[i].wrapping_add(1);
        let _ = m.add_peer(3, &b);
    }
    // An address of another provider is refused before it reaches libfabric.
    let shm = Messenger::open(messenger_config("shm", 1)).unwrap();
    assert!(matches!(
        m.add_peer(1, &shm.address().to_bytes()),
        Err(Error::MalformedAddress(_))
    ));
    // Our own, well-formed address is accepted.
    m.add_peer(4, &good).unwrap();
}

#[test]
fn bad_tags_and_peers_are_invalid_arguments() {
    let mut m = Messenger::open(messenger_config("shm", 0)).unwrap();
    let own = m.address().to_bytes();
    m.add_peer(0, &own).unwrap();
    assert!(matches!(
        m.send(0, MAX_USER_TAG + 1, b"x"),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(m.send(7, 1, b"x"), Err(Error::InvalidArgument(_))));
    assert!(matches!(
        m.recv(Some(9), 1, 0, &mut [0u8; 4]),
        Err(Error::InvalidArgument(_))
    ));
    // Loopback to ourselves works, across every protocol.
    for size in [3usize, 10_000, 1 << 20] {
        let data = common::pattern(size, 9);
        let mut back = vec![0u8; size];
        // SAFETY: back outlives the request, waited for below.
        let r = unsafe { m.irecv(Some(0), 5, 0, &mut back) }.unwrap();
        // SAFETY: data outlives the request.
        let s = unsafe { m.isend(0, 5, &data) }.unwrap();
        m.wait(r).unwrap();
        if let Some(s) = s {
            m.wait(s).unwrap();
        }
        assert!(back == data, "self-send of {size}");
    }
}
