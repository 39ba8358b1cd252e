/// Generates one test per provider: `per_provider!(name, function)` defines module
/// `name` with tests `tcp`, `tcp_rxm`, `net` and `shm`, each calling `function(provider)`.
#[macro_export]
macro_rules! per_provider {
    ($name:ident, $body:path) => {
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
            fn net() {
                $body("net")
            }
            #[test]
            fn shm() {
                $body("shm")
            }
        }
    };
}
