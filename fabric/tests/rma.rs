//! One-sided operations between two processes: RMA write and read into an exposed
//! region, u64 atomics where the provider has them.

mod common;

use common::{connect, pattern, tag};
use steadfast_fabric::{Error, RemoteRegion};

fn rma_and_atomics(provider: &str) {
    let (mut m, peer) = connect(provider, "rma");
    let mut descriptor = [0u8; RemoteRegion::ENCODED_LEN];
    m.recv(Some(1), tag::DESCRIPTOR, 0, &mut descriptor)
        .unwrap();
    let remote = RemoteRegion::from_bytes(&descriptor).unwrap();
    assert_eq!(remote.len, 4096);

    // Read the peer's pattern (past the 16 zeroed bytes).
    let mut read = vec![0u8; 1000];
    m.rma_read(1, &mut read, &remote, 100)
        .unwrap_or_else(|e| panic!("{provider}: read: {e}"));
    assert!(
        read == pattern(4096, 77)[100..1100],
        "{provider}: RMA read content"
    );

    // Write 2000 bytes at offset 2000, then read them back.
    let written = pattern(2000, 5);
    m.rma_write(1, &written, &remote, 2000)
        .unwrap_or_else(|e| panic!("{provider}: write: {e}"));
    let mut check = vec![0u8; 2000];
    m.rma_read(1, &mut check, &remote, 2000).unwrap();
    assert!(check == written, "{provider}: read after write");

    // A delivered write (FI_DELIVERY_COMPLETE) at 1200..1700: the peer reads it below.
    let delivered = pattern(500, 9);
    m.rma_write_delivered(1, &delivered, &remote, 1200)
        .unwrap_or_else(|e| panic!("{provider}: delivered write: {e}"));

    // Out of range is refused before anything is posted.
    assert!(matches!(
        m.rma_write(1, &written, &remote, 3000),
        Err(Error::InvalidArgument(_))
    ));

    // Atomics on the two zeroed words at offsets 0 and 8.
    let mut expect_words = (0u64, 0u64);
    match m.fetch_add_u64(1, &remote, 0, 5) {
        Ok(previous) => {
            assert_eq!(previous, 0, "{provider}");
            assert_eq!(m.fetch_add_u64(1, &remote, 0, 7).unwrap(), 5);
            assert_eq!(
                m.compare_swap_u64(1, &remote, 8, 1, 99).unwrap(),
                0,
                "failed compare"
            );
            assert_eq!(
                m.compare_swap_u64(1, &remote, 8, 0, 99).unwrap(),
                0,
                "successful compare"
            );
            assert_eq!(m.compare_swap_u64(1, &remote, 8, 0, 1).unwrap(), 99);
            expect_words = (12, 99);
        }
        Err(Error::Unsupported { .. }) => {
            // libfabric 1.17's shm has u64 atomics: there they must work.
            assert_ne!(provider, "shm", "shm refused an atomic");
            assert!(matches!(
                m.compare_swap_u64(1, &remote, 8, 0, 1),
                Err(Error::Unsupported { .. })
            ));
        }
        Err(e) => panic!("{provider}: fetch-add: {e}"),
    }

    m.send(1, tag::DONE, &[]).unwrap();
    let mut content = vec![0u8; 4096];
    m.recv(Some(1), tag::CONTENT, 0, &mut content).unwrap();
    assert_eq!(
        u64::from_le_bytes(content[0..8].try_into().unwrap()),
        expect_words.0,
        "{provider}"
    );
    assert_eq!(
        u64::from_le_bytes(content[8..16].try_into().unwrap()),
        expect_words.1,
        "{provider}"
    );
    assert!(
        content[2000..4000] == written[..],
        "{provider}: the peer sees our write"
    );
    assert!(
        content[1200..1700] == delivered[..],
        "{provider}: the peer sees our delivered write"
    );
    assert!(
        content[100..1100] == pattern(4096, 77)[100..1100],
        "{provider}: untouched bytes"
    );
    m.send(1, tag::STOP, &[]).unwrap();
    peer.expect_success();
}
per_provider!(rma_read_write_and_atomics, super::rma_and_atomics);
