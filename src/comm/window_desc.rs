//! The descriptors a window's ranks exchange at creation: how each rank's memory is
//! reached (its process, address and length, and its fabric registration).

use steadfast_fabric::{Exposure, RemoteRegion};

use super::window::Target;
use super::{Comm, CommError};
use crate::world::engine::Route;

/// Tag of the descriptor exchange (on the window's own communicator).
const TAG: u32 = 1;
/// Descriptor: pid (4), length (8), local address (8), fabric region present (1), the
/// region (24).
const DESC_LEN: usize = 4 + 8 + 8 + 1 + RemoteRegion::ENCODED_LEN;

/// Sends this rank's descriptor to every other rank of `comm` and receives theirs: how
/// each rank's window is reached.
pub(super) fn exchange_descriptors(
    comm: &Comm,
    group: &[u32],
    base: *mut u8,
    len: usize,
    exposed: Option<&Exposure>,
    dynamic: bool,
) -> Result<Vec<Target>, CommError> {
    let (me, n) = (comm.rank(), comm.size());
    let mine = encode(
        std::process::id(),
        len,
        base as u64,
        exposed.map(Exposure::remote),
    );
    // Everyone sends its descriptor to everyone, then receives theirs.
    let mut sends = Vec::with_capacity(n as usize);
    for r in (0..n).filter(|&r| r != me) {
        // SAFETY: every request is waited for or dropped (cancelled) before `mine`
        // goes out of scope.
        sends.push(unsafe { comm.isend(r, TAG, &mine) }?);
    }
    let mut targets = Vec::with_capacity(n as usize);
    for r in 0..n {
        if r == me {
            targets.push(Target::Own);
            continue;
        }
        let mut d = [0u8; DESC_LEN];
        let st = comm.recv(Some(r), Some(TAG), &mut d)?;
        let (pid, len, addr, region) = decode(r, &d[..st.len])?;
        let w = group[r as usize];
        let route = comm.engine.lock().route(w);
        targets.push(match route {
            Route::Local => Target::Own,
            Route::Shm(_) => Target::Cma { pid, addr, len },
            Route::Fabric => match region {
                Some(region) => Target::Fabric {
                    world: w,
                    region,
                    len,
                },
                // A dynamic window registers nothing at creation; its accesses through
                // the fabric are refused (`window/dynamic.rs`), and the address is the
                // peer's table, never to be read as a same-node process's.
                None if dynamic => Target::Fabric {
                    world: w,
                    region: RemoteRegion {
                        addr,
                        key: 0,
                        len: 0,
                    },
                    len: 0,
                },
                // An empty window has nothing registered.
                None if len == 0 => Target::Cma { pid, addr, len },
                None => {
                    return Err(CommError::WindowDescriptor {
                        rank: r,
                        problem: "no fabric registration for a fabric route",
                    })
                }
            },
        });
    }
    for s in sends {
        s.wait()?;
    }
    Ok(targets)
}

fn encode(pid: u32, len: usize, addr: u64, region: Option<RemoteRegion>) -> [u8; DESC_LEN] {
    let mut d = [0u8; DESC_LEN];
    d[0..4].copy_from_slice(&pid.to_le_bytes());
    d[4..12].copy_from_slice(&(len as u64).to_le_bytes());
    d[12..20].copy_from_slice(&addr.to_le_bytes());
    if let Some(r) = region {
        d[20] = 1;
        d[21..].copy_from_slice(&r.to_bytes());
    }
    d
}

/// Rank `rank`'s descriptor: (pid, length, address, fabric region).
fn decode(rank: u32, d: &[u8]) -> Result<(u32, usize, u64, Option<RemoteRegion>), CommError> {
    if d.len() != DESC_LEN {
        return Err(CommError::WindowDescriptor {
            rank,
            problem: "wrong length",
        });
    }
    let pid = u32::from_le_bytes(d[0..4].try_into().expect("4 bytes"));
    let len = u64::from_le_bytes(d[4..12].try_into().expect("8 bytes")) as usize;
    let addr = u64::from_le_bytes(d[12..20].try_into().expect("8 bytes"));
    let region = match d[20] {
        0 => None,
        1 => Some(RemoteRegion::from_bytes(&d[21..]).map_err(CommError::from)?),
        _ => {
            return Err(CommError::WindowDescriptor {
                rank,
                problem: "region flag other than 0 or 1",
            })
        }
    };
    Ok((pid, len, addr, region))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptors_round_trip_and_reject_bad_lengths() {
        let r = RemoteRegion {
            addr: 0x1000,
            key: 7,
            len: 4096,
        };
        let d = encode(42, 4096, 0xdead_beef, Some(r));
        assert_eq!(decode(1, &d).unwrap(), (42, 4096, 0xdead_beef, Some(r)));
        let d = encode(1, 0, 0, None);
        assert_eq!(decode(1, &d).unwrap(), (1, 0, 0, None));
        assert!(matches!(
            decode(3, &d[..10]),
            Err(CommError::WindowDescriptor { rank: 3, .. })
        ));
    }

    proptest::proptest! {
        /// A descriptor from a peer: never a panic; accepted only at its exact length,
        /// and then exactly what the peer encoded.
        #[test]
        fn descriptors_from_peers_are_checked(
            d in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..64),
        ) {
            if let Ok((pid, len, addr, region)) = decode(0, &d) {
                let mut again = encode(pid, len, addr, region);
                if region.is_none() {
                    // Without a region its bytes are ignored (and encoded as zeros).
                    again[20] = d[20];
                    again[21..].copy_from_slice(&d[21..]);
                }
                proptest::prop_assert_eq!(&again[..], &d[..]);
            }
        }
    }
}
