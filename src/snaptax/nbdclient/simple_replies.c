/* Preloaded into fio (LD_PRELOAD) so that its nbd engine's libnbd handles ask for simple replies.
 *
 * Why: with structured replies negotiated, QEMU's NBD server answers a read by reading the data and then asking
 * the block status of the same range to mark holes in the reply (nbd/server.c, nbd_co_send_sparse_read), so every
 * read looks its qcow2 L2 entry up twice, and with more reads in flight than L2 slices cached the second lookup
 * misses again. A guest's virtio disk asks no block status, so through a VM a read looks its entry up once. fio's
 * nbd engine offers no option for this (it calls nbd_create and nbd_connect_uri), so the handle is configured here,
 * right after libnbd creates it and before fio connects it. With simple replies QEMU's server reads the data only.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <libnbd.h>

struct nbd_handle *nbd_create(void)
{
    static struct nbd_handle *(*real_create)(void);
    if (!real_create) {
        real_create = (struct nbd_handle *(*)(void))dlsym(RTLD_NEXT, "nbd_create");
        if (!real_create) {
            fprintf(stderr, "snaptax simple-replies shim: libnbd's nbd_create not found\n");
            return NULL;
        }
    }
    struct nbd_handle *h = real_create();
    if (h && nbd_set_request_structured_replies(h, false) == -1) {
        /* A client that cannot be configured must not measure with the other reply mode silently. */
        fprintf(stderr, "snaptax simple-replies shim: %s\n", nbd_get_error());
        nbd_close(h);
        return NULL;
    }
    return h;
}
