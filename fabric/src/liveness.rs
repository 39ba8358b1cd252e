//! Whether a process on this host is alive, and which host this is: the helpers of
//! [`steadfast_os`], re-exported where the fabric layer's users have found them. A
//! peer on the same host is checked through its pid (a pidfd where the kernel has
//! them, else `kill(pid, 0)`); a zombie counts as exited.

pub use steadfast_os::{host_identity, ProcessWatch};
