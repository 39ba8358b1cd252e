/* The C side of the forwarders (src/loader.rs): the static inline functions of the
 * libfabric headers are compiled with `-Dfi_dupinfo=steadfast_fi_dupinfo` and so on, so
 * they call these functions, which call through the table the loader fills once
 * libfabric is loaded (Release there, Acquire here). Before that they fail as the Rust
 * forwarders do without the library (-FI_ENOSYS, NULL, 0, a fixed text). These symbols
 * are C symbols of a static archive: a Rust cdylib built on this crate does not export
 * them. Keep the indices equal to `Slot` in src/loader.rs. */
#include <stddef.h>
#include "wrapper.h"

void *steadfast_fabric_fns[6];

#define LOADED(i) __atomic_load_n(&steadfast_fabric_fns[i], __ATOMIC_ACQUIRE)

int steadfast_fi_getinfo(uint32_t version, const char *node, const char *service,
                         uint64_t flags, const struct fi_info *hints, struct fi_info **info) {
    int (*f)(uint32_t, const char *, const char *, uint64_t, const struct fi_info *,
             struct fi_info **) = LOADED(0);
    return f ? f(version, node, service, flags, hints, info) : -FI_ENOSYS;
}

void steadfast_fi_freeinfo(struct fi_info *info) {
    void (*f)(struct fi_info *) = LOADED(1);
    if (f) f(info);
}

struct fi_info *steadfast_fi_dupinfo(const struct fi_info *info) {
    struct fi_info *(*f)(const struct fi_info *) = LOADED(2);
    return f ? f(info) : NULL;
}

int steadfast_fi_fabric(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context) {
    int (*f)(struct fi_fabric_attr *, struct fid_fabric **, void *) = LOADED(3);
    return f ? f(attr, fabric, context) : -FI_ENOSYS;
}

uint32_t steadfast_fi_version(void) {
    uint32_t (*f)(void) = LOADED(4);
    return f ? f() : 0;
}

const char *steadfast_fi_strerror(int errnum) {
    const char *(*f)(int) = LOADED(5);
    return f ? f(errnum) : "libfabric is not loaded";
}
