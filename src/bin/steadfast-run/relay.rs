//! `--tag-output`: each rank's output relayed line by line with a `[rank] ` prefix.
//!
//! Lines are relayed as bytes (a rank's output need not be UTF-8). When the launcher's
//! own output is closed (`steadfast-run ... | head`), the relay stops quietly and closes
//! the rank's pipe, so the rank sees a broken pipe just as if it had written to the
//! reader itself.

use std::io::{BufRead, BufReader, Read, Write};
use std::thread::JoinHandle;

/// Relays `stream` of `rank` to the launcher's stderr (`err`) or stdout, on a thread.
pub fn tag(
    stream: Option<impl Read + Send + 'static>,
    rank: u32,
    err: bool,
) -> Option<JoinHandle<()>> {
    let stream = stream?;
    Some(std::thread::spawn(move || {
        let mut reader = BufReader::new(stream);
        let prefix = format!("[{rank}] ");
        let mut line = Vec::new();
        loop {
            line.clear();
            match reader.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            if !line.ends_with(b"\n") {
                line.push(b'\n');
            }
            let written = if err {
                write_line(&mut std::io::stderr().lock(), &prefix, &line)
            } else {
                write_line(&mut std::io::stdout().lock(), &prefix, &line)
            };
            if written.is_err() {
                return;
            }
        }
    }))
}

fn write_line(out: &mut impl Write, prefix: &str, line: &[u8]) -> std::io::Result<()> {
    out.write_all(prefix.as_bytes())?;
    out.write_all(line)?;
    out.flush()
}
