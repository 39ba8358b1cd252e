/// Generates one test per provider: `per_provider!(name, function)` defines module
/// `name` with tests `tcp`, `tcp_rxm`, `net` and `shm`, each calling `function(provider)`.
/// `ignore_net = "why"` or `ignore_shm = "why"` ignores that provider's test, with the
/// reason shown by the test runner.
#[macro_export]
macro_rules! per_provider {
    ($name:ident, $body:path) => {
        $crate::per_provider!(@tests $name, $body, [], []);
    };
    ($name:ident, $body:path, ignore_net = $why:literal) => {
        $crate::per_provider!(@tests $name, $body, [#[ignore = $why]], []);
    };
    ($name:ident, $body:path, ignore_shm = $why:literal) => {
        $crate::per_provider!(@tests $name, $body, [], [#[ignore = $why]]);
    };
    (@tests $name:ident, $body:path, [$(#[$net:meta])*], [$(#[$shm:meta])*]) => {
        mod $name {
            #[test]
            fn tcp() {
                $body("tcp")
            }
            #[test]
            fn tcp_rxm() {
                $body("tcp;ofi_rxm")
            }
            #[test]
            $(#[$net])*
            fn net() {
                $body("net")
            }
            #[test]
            $(#[$shm])*
            fn shm() {
                $body("shm")
            }
        }
    };
}
