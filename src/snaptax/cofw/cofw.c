/* cofw: copy-on-first-write snapshots with SQL Server database-snapshot semantics, as a C nbdkit plugin.
 *
 *   nbdkit -f -U SOCK [--filter=blocksize minblock=4096] build/nbdkit-cofw.so \
 *       source=FILE snapdir=DIR control=CTLSOCK [size=BYTES] \
 *       [page_size=8192] [durability=sync|none] [direct=0|1] [stripes=4096] \
 *       [snapdev=NBD-URI|PATH [snapdev_connections=4] [extent_size=65536]] [pushers=0 [statement_ns=0]]
 *
 * Exports: "live" (default, writable) and "snap-NAME" (read-only point-in-time view of snapshot NAME).
 * Built by snaptax.cofw.build (make setup). It replaces a Python plugin that the GIL capped near 10k IOPS; the
 * semantics, configuration keys, control protocol and counters are that plugin's, so the engine
 * (snaptax/engines/cofw.py) and the studies did not change.
 *
 * WHAT IT DOES
 * The source volume is a file written in place. Before the first write to a page after a snapshot was taken,
 * the page's old contents are copied into every live snapshot that lacks it, durably, then the source is
 * written. A snapshot view reads its copied pages from its store and every other page from the source.
 * A snapshot's store is either
 *   - a sparse file NAME.snap in snapdir, pages at their source offsets (SQL Server's sparse file), or
 *   - with snapdev=: the pages on a device of their own, laid out as NTFS grows a database snapshot's sparse
 *     file: 64 KiB allocation units (extent_size) handed out lowest-free-first from one allocator that all
 *     snapshots on the device share (so two snapshots' units interleave in first-copy order; a dropped
 *     snapshot's units are reused first), page p at slot(p's extent) * extent_size + p's offset in it. The map
 *     is a journal NAME.map in snapdir, one line "page slot\n" per copied page. The device is a file or block
 *     node (pread/pwrite) or an NBD export such as an emulated spindle (libnbd, a pool of connections: a
 *     synchronous libnbd call holds its handle for the round trip, and copies come from many threads at once).
 *
 * CONCURRENCY (nbdkit's PARALLEL thread model: requests of all connections run at once)
 *   - A gate (rwlock, writers preferred) orders requests against snapshot create/delete: data requests hold it
 *     shared, create and delete exclusive, so a snapshot's point in time falls between requests, never inside
 *     one, and a store is never closed under a reader. Writer preference: a create under a heavy writer must
 *     not starve.
 *   - Striped page locks (page % stripes, taken in ascending order: no deadlock) serialise check-copy-mark, so
 *     two writers to one page never both copy it (the second would copy the first's new data).
 *   - A page is marked in the in-memory bitmap only after its copy is complete (and durable), and the source is
 *     written only after the mark (release store / acquire load). Snapshot readers need no page lock: they read
 *     the source first and look at the bitmap after; a page still unmarked then had not started being
 *     overwritten when the source was read, a marked one is re-read from the store.
 *   - pushers=N (N > 0) lets at most N requests copy at once (a counting lock taken after the page locks, so a
 *     pusher never waits for anything a waiter holds); the time requests wait for one is push_wait_s, the most
 *     requests that held one at once push_peak (at most N: what the tests check the limit by).
 *   - statement_ns=T (needs pushers > 0): every write request, with or without copies, first spends T ns per page
 *     holding a pusher (a sleep to an absolute deadline; the time is statement_s): the work of the statement whose
 *     thread pushes the copies, in series with them, while the source writes themselves go on beside it. A
 *     request that copies takes the pusher after its page locks (as above); one that does not takes it holding
 *     none and releases it before writing, so no lock order is added.
 *   - Counters are atomic 64-bit integers (times in nanoseconds), so the data path takes no global lock.
 *
 * CRASH SEMANTICS (durability=sync, the default)
 *   - Order: copy the old page(s) -> make them durable -> mark the bitmap -> write the source. For every source
 *     page written after snapshot S, S's copy of that page is on stable storage before the source changes.
 *     "Durable" is fdatasync of the sparse file; for a snapshot device: a device flush, then the journal append,
 *     then fdatasync of the journal (the copied data is stable before the record that points at it).
 *   - Sparse files: the durable record of which pages are copied is the file's own allocation map, as in SQL
 *     Server (whose bitmap is rebuilt from the sparse file's allocated ranges): nothing but whole page copies is
 *     ever written into a snapshot file, so a fully allocated page is a copied page. At start every NAME.snap in
 *     snapdir is re-attached and its bitmap rebuilt with SEEK_DATA/SEEK_HOLE. A page only partly allocated is a
 *     torn copy; its source write had not been issued (it waits for the fdatasync), so its hole is punched and
 *     the page counts as not copied. Assumed, checked where possible: the file system block size divides the
 *     page size (checked at create), SEEK_DATA/SEEK_HOLE work, and a crash never exposes a newly allocated block
 *     with stale contents (ext4 data=ordered and XFS; not ext4 data=writeback - not checkable from here).
 *   - Journals: a torn last line (no newline: a crash inside the append) is dropped and truncated away - its
 *     pages' source writes had not been issued. A complete line that contradicts the volume or the map (page out
 *     of range, slot outside the device, two slots for one extent) is refused: the snapshot cannot be trusted.
 *   - Source writes are as durable as on a disk with a volatile write cache: NBD FLUSH (and FUA, emulated by
 *     nbdkit as a flush) fdatasyncs the source. Create is durable when acknowledged (file created and synced,
 *     directory fsynced); delete is unlink (a crash mid-delete leaves the snapshot whole or gone).
 *   - Tested (tests/cofw): SIGKILL after a copy is durable and before its source write (the test hook
 *     SNAPTAX_COFW_KILL_AFTER_COPY) leaves the snapshot and the live volume consistent; a torn sparse page is
 *     punched; a torn journal line is dropped; a contradictory line is refused in one line naming file:line.
 *   - durability=none skips the syncs (to measure the bare copy cost). A snapshot is then accompanied by a
 *     NAME.snap.unsafe (NAME.map.unsafe) marker while open; after a crash the marker remains and the snapshot is
 *     refused at start, since its copies may be missing. A clean shutdown syncs everything and removes markers.
 *
 * The control socket (create/delete/list/counters/ping; one JSON object per line each way) is served by a
 * thread started after nbdkit's fork; see snaptax/cofw/control.py for the protocol and the Python client.
 */

#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <libnbd.h>

#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#define THREAD_MODEL NBDKIT_THREAD_MODEL_PARALLEL

#define SNAP_SUFFIX ".snap"
#define MAP_SUFFIX ".map"
#define UNSAFE_SUFFIX ".unsafe"
#define ALIGN 4096              /* O_DIRECT alignment of buffers, offsets and lengths */
#define ERRLEN 512

/* ------------------------------------------------------------------ configuration */

static const char *cfg_source, *cfg_snapdir, *cfg_control, *cfg_snapdev;
static int64_t cfg_size = -1;
static int64_t page_size = 8192, extent_size = 65536;
static bool durable = true;     /* durability=sync */
static bool direct;
static int stripes_wanted = 4096, snapdev_connections = 4;
/* pushers: how many requests may copy at once (0: any number). SQL Server pushes a page's copies in the thread of
 * the statement about to change the page, before the change goes on; a statement that runs in one thread (SQL Server
 * 2012's SELECT INTO) has one copy in flight however many of its page writes the lazy writer has outstanding.
 * pushers=1 is that: the source writes keep their depth, their copies are made one request at a time. */
static int pushers;
/* statement_ns: the statement's own work per page written (formatting the page), done holding a pusher before the
 * page's copies: SQL Server's thread does both in series, and a run's time without snapshots is that work's when
 * the writes keep up. 0: none. */
static int64_t statement_ns;
static int pushing;                                     /* requests copying now (under push_lock) */
static pthread_mutex_t push_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t push_free = PTHREAD_COND_INITIALIZER;

/* ------------------------------------------------------------------ state */

static int src_fd = -1;
static int64_t vol_size, npages;
static int page_shift;

/* The snapshot device and its extent allocator (only with snapdev=). */
struct device {
  int fd;                         /* a file or block node, or -1 */
  struct nbd_handle **handles;    /* an NBD export: a pool of connections */
  int nhandles, nfree;
  struct nbd_handle **freelist;
  pthread_mutex_t pool_lock;
  pthread_cond_t pool_cond;
  bool multi_conn;
  int64_t size;
};
static struct device *snapdev;
static pthread_mutex_t alloc_lock = PTHREAD_MUTEX_INITIALIZER;
static uint8_t *slot_used;       /* one byte per extent slot on the device */
static int64_t nslots, slot_hint; /* every slot below slot_hint is used */

struct snapshot {
  char name[80];
  char path[PATH_MAX];
  int fd;                     /* the sparse file, or the journal (extent store) */
  uint8_t *bitmap;            /* one byte per page: 1 = copied (bytes: no read-modify-write races) */
  int64_t *map;               /* extent store: source extent -> slot, -1 if none */
  int64_t mapped;             /* extents mapped */
  pthread_mutex_t lock;       /* extent store: slot allocation and journal appends */
  bool alive;
  int refs;                   /* the snapshot list's reference + open snapshot handles */
  uint64_t copy_write_ns, commit_ns;   /* atomics */
};

static pthread_rwlock_t gate;
static struct snapshot **snaps;     /* replaced under the exclusive gate */
static int nsnaps;
static pthread_mutex_t *page_locks;
static int64_t nstripes;

/* Counters (snaptax.cofw.spec.COUNTERS); atomics, times in nanoseconds. */
static struct {
  uint64_t pages_copied, bytes_copied, cow_faults, cow_requests, syncs, bitmap_marks, metadata_ops,
           snap_pages_read, snapshots_created, snapshots_deleted, recovery_punched_pages,
           source_write_ns, copy_read_ns, copy_write_ns, commit_ns, push_wait_ns, statement_ns,
           push_peak;         /* the most requests that held a pusher at once (a high-water mark, not a sum) */
} ctr;
#define ADD(field, n) __atomic_fetch_add (&(field), (uint64_t) (n), __ATOMIC_RELAXED)
#define GET(field) __atomic_load_n (&(field), __ATOMIC_RELAXED)

/* Test hook: with SNAPTAX_COFW_KILL_AFTER_COPY set in its environment the plugin SIGKILLs itself right after
 * its first copy is durable and marked, before that request's source write: the crash the ordering is for. */
static bool kill_after_copy;

static int ctl_fd = -1;
static char ctl_path[PATH_MAX];

/* ------------------------------------------------------------------ helpers */

static uint64_t
now_ns (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (uint64_t) ts.tv_sec * 1000000000u + ts.tv_nsec;
}

/* Errors travel as one line in a caller's buffer: the control socket returns it, nbdkit logs it. */
static int
fail (char *err, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  vsnprintf (err, ERRLEN, fmt, ap);
  va_end (ap);
  return -1;
}

static int
pread_full (int fd, void *buf, size_t n, off_t off)
{
  size_t done = 0;
  while (done < n) {
    ssize_t r = pread (fd, (char *) buf + done, n - done, off + done);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) { if (r == 0) errno = EIO; return -1; }   /* views never extend past the file: EOF is an error */
    done += r;
  }
  return 0;
}

static int
pwrite_full (int fd, const void *buf, size_t n, off_t off)
{
  size_t done = 0;
  while (done < n) {
    ssize_t r = pwrite (fd, (const char *) buf + done, n - done, off + done);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return -1;
    done += r;
  }
  return 0;
}

static int
write_full (int fd, const void *buf, size_t n)
{
  size_t done = 0;
  while (done < n) {
    ssize_t r = write (fd, (const char *) buf + done, n - done);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return -1;
    done += r;
  }
  return 0;
}

static int
fsync_dir (const char *dir)
{
  int fd = open (dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return -1;
  int r = fsync (fd);
  close (fd);
  return r;
}

/* A per-thread page-aligned scratch buffer, grown on demand: no allocation per request, and valid for
 * O_DIRECT, which needs aligned memory that nbdkit's request buffers do not guarantee. */
static pthread_key_t scratch_key;
struct scratch { void *p; size_t n; };

static void
scratch_free (void *v)
{
  struct scratch *s = v;
  free (s->p);
  free (s);
}

static void *
scratch (size_t n)
{
  struct scratch *s = pthread_getspecific (scratch_key);
  if (!s) {
    s = calloc (1, sizeof *s);
    if (!s) return NULL;
    pthread_setspecific (scratch_key, s);
  }
  if (s->n < n) {
    size_t want = n < (1 << 20) ? (1 << 20) : (n + ALIGN - 1) / ALIGN * ALIGN;
    void *p;
    if (posix_memalign (&p, ALIGN, want) != 0) return NULL;
    free (s->p);
    s->p = p;
    s->n = want;
  }
  return s->p;
}

static bool
aligned (const void *buf, uint64_t n, uint64_t off)
{
  return (((uintptr_t) buf | n | off) & (ALIGN - 1)) == 0;
}

/* ------------------------------------------------------------------ the snapshot device */

static struct nbd_handle *
pool_get (struct device *d)
{
  pthread_mutex_lock (&d->pool_lock);
  while (d->nfree == 0)
    pthread_cond_wait (&d->pool_cond, &d->pool_lock);
  struct nbd_handle *h = d->freelist[--d->nfree];
  pthread_mutex_unlock (&d->pool_lock);
  return h;
}

static void
pool_put (struct device *d, struct nbd_handle *h)
{
  pthread_mutex_lock (&d->pool_lock);
  d->freelist[d->nfree++] = h;
  pthread_cond_signal (&d->pool_cond);
  pthread_mutex_unlock (&d->pool_lock);
}

static int
dev_pread (void *buf, size_t n, int64_t off)
{
  if (snapdev->fd >= 0) return pread_full (snapdev->fd, buf, n, off);
  struct nbd_handle *h = pool_get (snapdev);
  int r = nbd_pread (h, buf, n, off, 0);
  if (r < 0) { nbdkit_error ("snapshot device read: %s", nbd_get_error ()); errno = nbd_get_errno () ?: EIO; }
  pool_put (snapdev, h);
  return r;
}

static int
dev_pwrite (const void *buf, size_t n, int64_t off)
{
  if (snapdev->fd >= 0) return pwrite_full (snapdev->fd, buf, n, off);
  struct nbd_handle *h = pool_get (snapdev);
  int r = nbd_pwrite (h, buf, n, off, 0);
  if (r < 0) { nbdkit_error ("snapshot device write: %s", nbd_get_error ()); errno = nbd_get_errno () ?: EIO; }
  pool_put (snapdev, h);
  return r;
}

/* Make written data stable on the device. With multi-conn (the emulated spindles offer it) one flush covers
 * every connection's writes; otherwise every handle flushes (libnbd handles are thread-safe). */
static int
dev_flush (void)
{
  if (snapdev->fd >= 0) return fdatasync (snapdev->fd);
  if (snapdev->multi_conn) {
    struct nbd_handle *h = pool_get (snapdev);
    int r = nbd_flush (h, 0);
    pool_put (snapdev, h);
    if (r < 0) { nbdkit_error ("snapshot device flush: %s", nbd_get_error ()); errno = EIO; }
    return r;
  }
  for (int i = 0; i < snapdev->nhandles; i++)
    if (nbd_flush (snapdev->handles[i], 0) < 0) {
      nbdkit_error ("snapshot device flush: %s", nbd_get_error ());
      errno = EIO;
      return -1;
    }
  return 0;
}

static void
dev_close (void)
{
  if (!snapdev) return;
  if (snapdev->fd >= 0) close (snapdev->fd);
  for (int i = 0; i < snapdev->nhandles; i++) {
    nbd_shutdown (snapdev->handles[i], 0);
    nbd_close (snapdev->handles[i]);
  }
  free (snapdev->handles);
  free (snapdev->freelist);
  free (snapdev);
  snapdev = NULL;
}

static int
dev_open (const char *target, char *err)
{
  struct device *d = calloc (1, sizeof *d);
  if (!d) return fail (err, "out of memory");
  d->fd = -1;
  pthread_mutex_init (&d->pool_lock, NULL);
  pthread_cond_init (&d->pool_cond, NULL);
  snapdev = d;
  if (strncmp (target, "nbd:", 4) == 0 || strncmp (target, "nbd+unix:", 9) == 0 || strncmp (target, "nbds:", 5) == 0) {
    d->handles = calloc (snapdev_connections, sizeof *d->handles);
    d->freelist = calloc (snapdev_connections, sizeof *d->freelist);
    if (!d->handles || !d->freelist) return fail (err, "out of memory");
    for (int i = 0; i < snapdev_connections; i++) {
      struct nbd_handle *h = nbd_create ();
      if (!h) return fail (err, "cannot create a libnbd handle: %s", nbd_get_error ());
      d->handles[d->nhandles++] = h;
      if (nbd_connect_uri (h, target) < 0)
        return fail (err, "cannot connect to the snapshot device %s: %s", target, nbd_get_error ());
      d->freelist[d->nfree++] = h;
    }
    d->size = nbd_get_size (d->handles[0]);
    if (d->size < 0) return fail (err, "snapshot device %s: %s", target, nbd_get_error ());
    d->multi_conn = nbd_can_multi_conn (d->handles[0]) == 1;
  }
  else {
    d->fd = open (target, O_RDWR | O_CLOEXEC | (direct ? O_DIRECT : 0));
    if (d->fd < 0) return fail (err, "cannot open snapshot device %s: %s", target, strerror (errno));
    d->size = lseek (d->fd, 0, SEEK_END);
  }
  nslots = d->size / extent_size;
  slot_used = calloc (nslots ? nslots : 1, 1);
  if (!slot_used) return fail (err, "out of memory");
  return 0;
}

/* The allocator: lowest free slot first (freed slots of a dropped snapshot are reused first, as NTFS reuses
 * freed clusters). Every slot below slot_hint is used, so the scan is amortised short. */
static int64_t
slot_allocate (void)
{
  pthread_mutex_lock (&alloc_lock);
  int64_t s = slot_hint;
  while (s < nslots && slot_used[s]) s++;
  if (s < nslots) { slot_used[s] = 1; slot_hint = s + 1; }
  pthread_mutex_unlock (&alloc_lock);
  return s < nslots ? s : -1;
}

static void
slots_free (struct snapshot *sn)
{
  pthread_mutex_lock (&alloc_lock);
  for (int64_t e = 0; e * (extent_size / page_size) < npages; e++)
    if (sn->map[e] >= 0) {
      slot_used[sn->map[e]] = 0;
      if (sn->map[e] < slot_hint) slot_hint = sn->map[e];
    }
  pthread_mutex_unlock (&alloc_lock);
}

/* ------------------------------------------------------------------ stores */

static int64_t
nextents (void)
{
  return (vol_size + extent_size - 1) / extent_size;
}

/* Device offset of source offset `off` in snapshot `sn`, allocating its extent's slot on first use (allocate)
 * or -1 (full device / never copied). */
static int64_t
extent_offset (struct snapshot *sn, int64_t off, bool allocate)
{
  int64_t e = off / extent_size;
  int64_t slot = __atomic_load_n (&sn->map[e], __ATOMIC_ACQUIRE);
  if (slot < 0) {
    if (!allocate) return -1;
    pthread_mutex_lock (&sn->lock);
    slot = sn->map[e];
    if (slot < 0) {
      slot = slot_allocate ();
      if (slot >= 0) {
        __atomic_store_n (&sn->map[e], slot, __ATOMIC_RELEASE);
        sn->mapped++;
      }
    }
    pthread_mutex_unlock (&sn->lock);
    if (slot < 0) return -1;
  }
  return slot * extent_size + off % extent_size;
}

/* Write whole pages at their source offset into the snapshot's store (split at extent boundaries). */
static int
store_write (struct snapshot *sn, const char *buf, int64_t n, int64_t off, char *err)
{
  if (!snapdev) {
    if (pwrite_full (sn->fd, buf, n, off) < 0)
      return fail (err, "snapshot %s: write: %s", sn->name, strerror (errno));
    return 0;
  }
  for (int64_t pos = 0; pos < n;) {
    int64_t within = (off + pos) % extent_size;
    int64_t len = n - pos < extent_size - within ? n - pos : extent_size - within;
    int64_t dev = extent_offset (sn, off + pos, true);
    if (dev < 0)
      return fail (err, "the snapshot device is full (%" PRIi64 " extents of %" PRIi64 " bytes)", nslots, extent_size);
    if (dev_pwrite (buf + pos, len, dev) < 0)
      return fail (err, "snapshot %s: device write: %s", sn->name, strerror (errno));
    pos += len;
  }
  return 0;
}

static int
store_read (struct snapshot *sn, char *buf, int64_t n, int64_t off)
{
  if (!snapdev) return pread_full (sn->fd, buf, n, off);
  for (int64_t pos = 0; pos < n;) {
    int64_t within = (off + pos) % extent_size;
    int64_t len = n - pos < extent_size - within ? n - pos : extent_size - within;
    int64_t dev = extent_offset (sn, off + pos, false);
    if (dev < 0) { errno = EIO; return -1; }    /* a marked page always has its extent: a bug if reached */
    if (dev_pread (buf + pos, len, dev) < 0) return -1;
    pos += len;
  }
  return 0;
}

/* Record copied pages durably before the source write: sparse file -> fdatasync (its allocation is the map);
 * device -> flush, then append "page slot" lines, then fdatasync the journal. Without durability the journal
 * is still appended (it is the map a clean restart reads). */
static int
store_commit (struct snapshot *sn, const int64_t *pages, int npg, char *err)
{
  if (!snapdev) {
    if (durable && fdatasync (sn->fd) < 0)
      return fail (err, "snapshot %s: fdatasync: %s", sn->name, strerror (errno));
    return 0;
  }
  if (durable && dev_flush () < 0)
    return fail (err, "snapshot %s: device flush: %s", sn->name, strerror (errno));
  char stackbuf[4096];
  size_t cap = (size_t) npg * 42 + 1;             /* two int64s, a space and a newline per line, and a NUL */
  char *lines = cap <= sizeof stackbuf ? stackbuf : malloc (cap);
  if (!lines) return fail (err, "out of memory");
  size_t len = 0;
  int64_t ppe = extent_size / page_size;
  for (int i = 0; i < npg; i++)
    len += sprintf (lines + len, "%" PRIi64 " %" PRIi64 "\n", pages[i], sn->map[pages[i] / ppe]);
  /* One write() of all lines under the lock: O_APPEND appends keep each batch contiguous. */
  pthread_mutex_lock (&sn->lock);
  int r = write_full (sn->fd, lines, len);
  pthread_mutex_unlock (&sn->lock);
  if (lines != stackbuf) free (lines);
  if (r < 0) return fail (err, "snapshot %s: journal append: %s", sn->name, strerror (errno));
  if (durable && fdatasync (sn->fd) < 0)
    return fail (err, "snapshot %s: journal fdatasync: %s", sn->name, strerror (errno));
  return 0;
}

static int
store_sync (struct snapshot *sn)
{
  if (snapdev && dev_flush () < 0) return -1;
  return fdatasync (sn->fd);
}

static int64_t
store_allocated (struct snapshot *sn)
{
  if (snapdev) {
    pthread_mutex_lock (&sn->lock);
    int64_t m = sn->mapped;
    pthread_mutex_unlock (&sn->lock);
    return m * extent_size;
  }
  struct stat st;
  return fstat (sn->fd, &st) == 0 ? (int64_t) st.st_blocks * 512 : 0;
}

static void
snap_unref (struct snapshot *sn)
{
  if (__atomic_sub_fetch (&sn->refs, 1, __ATOMIC_ACQ_REL) == 0) {
    free (sn->bitmap);
    free (sn->map);
    pthread_mutex_destroy (&sn->lock);
    free (sn);
  }
}

static struct snapshot *
snap_new (const char *name, const char *path, char *err)
{
  struct snapshot *sn = calloc (1, sizeof *sn);
  if (!sn) { fail (err, "out of memory"); return NULL; }
  snprintf (sn->name, sizeof sn->name, "%s", name);
  snprintf (sn->path, sizeof sn->path, "%s", path);
  sn->fd = -1;
  sn->alive = true;
  sn->refs = 1;
  pthread_mutex_init (&sn->lock, NULL);
  sn->bitmap = calloc (npages, 1);
  if (snapdev) {
    sn->map = malloc (nextents () * sizeof *sn->map);
    if (sn->map) for (int64_t e = 0; e < nextents (); e++) sn->map[e] = -1;
  }
  if (!sn->bitmap || (snapdev && !sn->map)) { snap_unref (sn); fail (err, "out of memory"); return NULL; }
  return sn;
}

static int64_t
copied_pages (struct snapshot *sn)
{
  int64_t n = 0;
  for (int64_t p = 0; p < npages; p++) n += __atomic_load_n (&sn->bitmap[p], __ATOMIC_RELAXED);
  return n;
}

static struct snapshot *
find_snap (const char *name)
{
  for (int i = 0; i < nsnaps; i++)
    if (strcmp (snaps[i]->name, name) == 0) return snaps[i];
  return NULL;
}

static int
add_snap (struct snapshot *sn, char *err)
{
  struct snapshot **n = realloc (snaps, (nsnaps + 1) * sizeof *n);
  if (!n) return fail (err, "out of memory");
  snaps = n;
  snaps[nsnaps++] = sn;
  return 0;
}

static void
marker_path (char *out, const char *path)
{
  snprintf (out, PATH_MAX, "%s" UNSAFE_SUFFIX, path);
}

/* ------------------------------------------------------------------ create, attach, delete */

static int
check_name (const char *name, char *err)
{
  /* ^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$ : no path separators, no leading dot */
  size_t n = strlen (name);
  bool ok = n >= 1 && n <= 64 && (isalnum ((unsigned char) name[0]) || name[0] == '_');
  for (size_t i = 1; ok && i < n; i++)
    ok = isalnum ((unsigned char) name[i]) || strchr ("_.-", name[i]);
  if (!ok)
    return fail (err, "ConfigError: snapshot: field 'name': '%s' must match ^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$",
                 name);
  if (find_snap (name)) return fail (err, "EngineError: snapshot '%s' already exists", name);
  return 0;
}

/* Take a snapshot now: a new sparse file, or a new journal for its extents on the snapshot device. Under the
 * exclusive gate: its point in time falls between requests. */
static int
create_snapshot (const char *name, char *path_out, char *err)
{
  char path[PATH_MAX], marker[PATH_MAX];
  int r = -1;
  pthread_rwlock_wrlock (&gate);
  if (check_name (name, err) < 0) goto out;
  snprintf (path, sizeof path, "%s/%s%s", cfg_snapdir, name, snapdev ? MAP_SUFFIX : SNAP_SUFFIX);
  marker_path (marker, path);
  if (!snapdev) {
    struct statvfs vfs;
    if (statvfs (cfg_snapdir, &vfs) == 0 && page_size % vfs.f_bsize) {
      /* A page must be whole file-system blocks, or allocation cannot tell a copied page. */
      fail (err, "ConfigError: snapshot: field 'page_size': %" PRIi64 " is not a multiple of the file system "
            "block %lu of %s", page_size, (unsigned long) vfs.f_bsize, cfg_snapdir);
      goto out;
    }
  }
  struct snapshot *sn = snap_new (name, path, err);
  if (!sn) goto out;
  if (!durable) {
    int m = open (marker, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (m >= 0) close (m);
  }
  if (snapdev)
    sn->fd = open (path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
  else
    sn->fd = open (path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | (direct ? O_DIRECT : 0), 0644);
  if (sn->fd < 0) {
    fail (err, "EngineError: cannot create snapshot %s %s: %s", snapdev ? "map" : "file", path, strerror (errno));
    unlink (marker);
    snap_unref (sn);
    goto out;
  }
  if ((!snapdev && ftruncate (sn->fd, vol_size) < 0) || fsync (sn->fd) < 0 || fsync_dir (cfg_snapdir) < 0
      || add_snap (sn, err) < 0) {
    if (!*err) fail (err, "EngineError: cannot create snapshot %s: %s", path, strerror (errno));
    close (sn->fd);
    unlink (path);
    unlink (marker);
    snap_unref (sn);
    goto out;
  }
  ADD (ctr.snapshots_created, 1);
  ADD (ctr.metadata_ops, 1);
  snprintf (path_out, PATH_MAX, "%s", path);
  r = 0;
 out:
  pthread_rwlock_unlock (&gate);
  return r;
}

/* Sparse file: rebuild the bitmap from the allocation map; punch torn (partly allocated) pages. */
static int
attach_sparse (struct snapshot *sn, char *err)
{
  sn->fd = open (sn->path, O_RDWR | O_CLOEXEC | (direct ? O_DIRECT : 0));
  if (sn->fd < 0) return fail (err, "cannot open snapshot file %s: %s", sn->path, strerror (errno));
  struct stat st;
  fstat (sn->fd, &st);
  if (st.st_size != vol_size)
    return fail (err, "snapshot file %s is %" PRIi64 " bytes, the source %" PRIi64, sn->path,
                 (int64_t) st.st_size, vol_size);
  int64_t pos = 0, punched = 0;
  while (pos < vol_size) {
    off_t start = lseek (sn->fd, pos, SEEK_DATA);
    if (start < 0 || start >= vol_size) break;       /* ENXIO: no data after pos */
    off_t end = lseek (sn->fd, start, SEEK_HOLE);
    if (end > vol_size) end = vol_size;
    int64_t first_full = (start + page_size - 1) / page_size, end_full = end / page_size;
    for (int64_t p = first_full; p < end_full; p++) sn->bitmap[p] = 1;
    /* Edges of the range that cover a page only partly are torn copies: discard them. */
    int64_t edges[2] = { start / page_size, (end - 1) / page_size };
    for (int i = 0; i < 2; i++) {
      int64_t p = edges[i];
      if ((p < first_full || p >= end_full) && !(i == 1 && edges[1] == edges[0])) {
        if (fallocate (sn->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, p * page_size, page_size) < 0)
          return fail (err, "snapshot file %s: punching a torn page: %s", sn->path, strerror (errno));
        punched++;
      }
    }
    pos = end;
  }
  if (punched && fdatasync (sn->fd) < 0)
    return fail (err, "snapshot file %s: fdatasync: %s", sn->path, strerror (errno));
  ADD (ctr.recovery_punched_pages, punched);
  ADD (ctr.metadata_ops, punched);
  return 0;
}

/* Journal: the copied pages and the extents they hold; a torn last line is dropped, a contradiction refused. */
static int
attach_journal (struct snapshot *sn, char *err)
{
  int fd = open (sn->path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fail (err, "cannot open snapshot map %s: %s", sn->path, strerror (errno));
  struct stat st;
  fstat (fd, &st);
  char *text = malloc (st.st_size + 1);
  if (!text || pread_full (fd, text, st.st_size, 0) < 0) {
    close (fd);
    free (text);
    return fail (err, "cannot read snapshot map %s", sn->path);
  }
  close (fd);
  text[st.st_size] = 0;
  int64_t complete = st.st_size;
  while (complete > 0 && text[complete - 1] != '\n') complete--;
  int64_t ppe = extent_size / page_size, number = 0;
  int r = 0;
  for (char *line = text; line < text + complete && r == 0;) {
    char *nl = memchr (line, '\n', text + complete - line);
    *nl = 0;
    number++;
    int64_t page, slot;
    int used = 0;
    if (sscanf (line, "%" SCNi64 " %" SCNi64 "%n", &page, &slot, &used) != 2 || line[used] != 0)
      r = fail (err, "%s:%" PRIi64 ": not a 'page slot' line: '%.40s'", sn->path, number, line);
    else if (page < 0 || page >= npages || slot < 0 || slot >= nslots
             || (sn->map[page / ppe] >= 0 && sn->map[page / ppe] != slot))
      r = fail (err, "%s:%" PRIi64 ": page %" PRIi64 " slot %" PRIi64 " contradicts the volume or the map",
                sn->path, number, page, slot);
    else {
      sn->bitmap[page] = 1;
      if (sn->map[page / ppe] < 0) sn->mapped++;
      sn->map[page / ppe] = slot;
    }
    line = nl + 1;
  }
  free (text);
  if (r < 0) return r;
  if (complete != st.st_size && truncate (sn->path, complete) < 0)   /* later appends start on a line */
    return fail (err, "snapshot map %s: truncating its torn line: %s", sn->path, strerror (errno));
  for (int64_t e = 0; e < nextents (); e++)
    if (sn->map[e] >= 0) {
      if (slot_used[sn->map[e]])
        return fail (err, "snapshot map %s: slot %" PRIi64 " is used by another snapshot", sn->path, sn->map[e]);
      slot_used[sn->map[e]] = 1;
    }
  slot_hint = 0;
  sn->fd = open (sn->path, O_WRONLY | O_APPEND | O_CLOEXEC);
  if (sn->fd < 0) return fail (err, "cannot open snapshot map %s: %s", sn->path, strerror (errno));
  return 0;
}

static int
attach_snapshot (const char *name, const char *path, char *err)
{
  char marker[PATH_MAX];
  marker_path (marker, path);
  if (check_name (name, err) < 0) return -1;
  if (access (marker, F_OK) == 0)
    return fail (err, "snapshot '%s' was open with durability=none when the engine stopped uncleanly; its "
                 "contents are undefined (remove %s to discard it)", name, path);
  struct snapshot *sn = snap_new (name, path, err);
  if (!sn) return -1;
  if ((snapdev ? attach_journal (sn, err) : attach_sparse (sn, err)) < 0 || add_snap (sn, err) < 0) {
    if (sn->fd >= 0) close (sn->fd);
    snap_unref (sn);
    return -1;
  }
  return 0;
}

static int
delete_snapshot (const char *name, bool remove_file, char *err)
{
  pthread_rwlock_wrlock (&gate);
  struct snapshot *sn = find_snap (name);
  if (!sn) {
    pthread_rwlock_unlock (&gate);
    return fail (err, "EngineError: no snapshot named '%s'", name);
  }
  sn->alive = false;          /* open views of it fail from now on; the struct lives while they are open */
  int i = 0;
  while (snaps[i] != sn) i++;
  memmove (&snaps[i], &snaps[i + 1], (nsnaps - i - 1) * sizeof *snaps);
  nsnaps--;
  close (sn->fd);
  sn->fd = -1;
  if (snapdev && remove_file) slots_free (sn);
  if (remove_file) {
    unlink (sn->path);
    fsync_dir (cfg_snapdir);
  }
  char marker[PATH_MAX];
  marker_path (marker, sn->path);
  unlink (marker);
  pthread_rwlock_unlock (&gate);
  snap_unref (sn);
  ADD (ctr.snapshots_deleted, 1);
  ADD (ctr.metadata_ops, 1);
  return 0;
}

/* ------------------------------------------------------------------ data path */

/* Take one of the pushers (pushers > 0), timing a real wait only: push_wait_s > 0 means requests queued. */
static void
push_acquire (void)
{
  pthread_mutex_lock (&push_lock);
  if (pushing >= pushers) {
    uint64_t tw = now_ns ();
    while (pushing >= pushers) pthread_cond_wait (&push_free, &push_lock);
    ADD (ctr.push_wait_ns, now_ns () - tw);
  }
  pushing++;
  if ((uint64_t) pushing > GET (ctr.push_peak))     /* written under push_lock only */
    __atomic_store_n (&ctr.push_peak, (uint64_t) pushing, __ATOMIC_RELAXED);
  pthread_mutex_unlock (&push_lock);
}

static void
push_release (void)
{
  pthread_mutex_lock (&push_lock);
  pushing--;
  pthread_cond_signal (&push_free);
  pthread_mutex_unlock (&push_lock);
}

/* The statement's work for `npg` pages (statement_ns each), by a pusher holder: a sleep to an absolute deadline,
 * with the thread's timer slack at 1 ns (the default 50 us would add about 8 % to a 64 KiB request's 0.65 ms).
 * A sleep, not a spin: it stands for the seed host's CPU, not this host's two cores. */
static void
statement_work (int64_t npg)
{
  static __thread bool slack_set;
  if (statement_ns <= 0) return;
  if (!slack_set) { prctl (PR_SET_TIMERSLACK, 1UL, 0, 0, 0); slack_set = true; }
  uint64_t t0 = now_ns (), end = t0 + (uint64_t) (npg * statement_ns);
  struct timespec ts = { .tv_sec = (time_t) (end / 1000000000u), .tv_nsec = (long) (end % 1000000000u) };
  while (clock_nanosleep (CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {}
  ADD (ctr.statement_ns, now_ns () - t0);
}

/* Copy the old contents of pages first..last into every snapshot lacking them, durably, then mark them.
 * Called under the shared gate. */
static int
copy_out (int64_t first, int64_t last, bool *worked, char *err)
{
  int64_t npg = last - first + 1;
  /* Stripes to lock, ascending (no deadlock): all of them, or first%n..last%n possibly wrapping. */
  int64_t lo_s = first % nstripes, hi_s = last % nstripes;
  bool all = npg >= nstripes, wrap = !all && hi_s < lo_s;
  if (all) for (int64_t i = 0; i < nstripes; i++) pthread_mutex_lock (&page_locks[i]);
  else if (wrap) {
    for (int64_t i = 0; i <= hi_s; i++) pthread_mutex_lock (&page_locks[i]);
    for (int64_t i = lo_s; i < nstripes; i++) pthread_mutex_lock (&page_locks[i]);
  }
  else for (int64_t i = lo_s; i <= hi_s; i++) pthread_mutex_lock (&page_locks[i]);

  int r = 0;
  bool pushed = false;                              /* holds one of the pushers */
  int n = nsnaps;
  /* need[p - first]: some snapshot lacks page p (rechecked under the page locks: another writer may have copied
   * these pages meanwhile). missing: per snapshot, its pages to copy. */
  uint8_t need_small[512];
  int64_t miss_small[1024];
  uint8_t *need = npg <= (int64_t) sizeof need_small ? need_small : calloc (npg, 1);
  int64_t *missing = (int64_t) n * npg <= 1024 ? miss_small : malloc ((size_t) n * npg * sizeof *missing);
  int *nmiss = calloc (n ? n : 1, sizeof *nmiss);
  if (!need || !missing || !nmiss) { r = fail (err, "out of memory"); goto out; }
  memset (need, 0, npg);
  int64_t faults = 0;
  for (int s = 0; s < n; s++)
    for (int64_t p = first; p <= last; p++)
      if (!snaps[s]->bitmap[p]) {
        missing[(int64_t) s * npg + nmiss[s]++] = p;
        if (!need[p - first]) { need[p - first] = 1; faults++; }
      }
  if (faults == 0) goto out;
  if (pushers > 0) {               /* wait for a pusher (page locks held: nothing a pusher waits for) */
    push_acquire ();
    pushed = true;
    statement_work (npg);          /* the statement's own work, then its pushes */
    *worked = true;
  }

  char *buf = scratch (npg << page_shift);
  if (!buf) { r = fail (err, "out of memory"); goto out; }
  uint64_t t0 = now_ns ();
  for (int64_t p = first; p <= last;) {             /* read each run of old pages once */
    if (!need[p - first]) { p++; continue; }
    int64_t q = p;
    while (q < last && need[q + 1 - first]) q++;
    if (pread_full (src_fd, buf + ((p - first) << page_shift), (q - p + 1) << page_shift, p << page_shift) < 0) {
      r = fail (err, "source read for a copy: %s", strerror (errno));
      goto out;
    }
    p = q + 1;
  }
  ADD (ctr.copy_read_ns, now_ns () - t0);

  int64_t copies = 0, syncs = 0;
  for (int s = 0; s < n; s++) {                     /* copy into every snapshot lacking the pages */
    if (!nmiss[s]) continue;
    int64_t *m = &missing[(int64_t) s * npg];
    t0 = now_ns ();
    for (int i = 0; i < nmiss[s];) {
      int j = i;
      while (j + 1 < nmiss[s] && m[j + 1] == m[j] + 1) j++;
      if (store_write (snaps[s], buf + ((m[i] - first) << page_shift), (int64_t) (j - i + 1) << page_shift,
                       m[i] << page_shift, err) < 0) { r = -1; goto out; }
      i = j + 1;
    }
    uint64_t dt = now_ns () - t0;
    ADD (snaps[s]->copy_write_ns, dt);
    ADD (ctr.copy_write_ns, dt);
    copies += nmiss[s];
  }
  for (int s = 0; s < n; s++) {                     /* the copies must be stable before the source changes */
    if (!nmiss[s]) continue;
    t0 = now_ns ();
    if (store_commit (snaps[s], &missing[(int64_t) s * npg], nmiss[s], err) < 0) { r = -1; goto out; }
    uint64_t dt = now_ns () - t0;
    ADD (snaps[s]->commit_ns, dt);
    ADD (ctr.commit_ns, dt);
    syncs += durable;
  }
  for (int s = 0; s < n; s++)                       /* only now: mark (release: readers see the copy) */
    for (int i = 0; i < nmiss[s]; i++)
      __atomic_store_n (&snaps[s]->bitmap[missing[(int64_t) s * npg + i]], 1, __ATOMIC_RELEASE);
  ADD (ctr.pages_copied, copies);
  ADD (ctr.bytes_copied, copies * page_size);
  ADD (ctr.bitmap_marks, copies);
  ADD (ctr.cow_faults, faults);
  ADD (ctr.cow_requests, 1);
  ADD (ctr.syncs, syncs);
  ADD (ctr.metadata_ops, syncs);
  if (kill_after_copy) kill (getpid (), SIGKILL);
 out:
  if (pushed) push_release ();
  if (need != need_small) free (need);
  if (missing != miss_small) free (missing);
  free (nmiss);
  if (all) for (int64_t i = nstripes - 1; i >= 0; i--) pthread_mutex_unlock (&page_locks[i]);
  else if (wrap) {
    for (int64_t i = nstripes - 1; i >= lo_s; i--) pthread_mutex_unlock (&page_locks[i]);
    for (int64_t i = hi_s; i >= 0; i--) pthread_mutex_unlock (&page_locks[i]);
  }
  else for (int64_t i = hi_s; i >= lo_s; i--) pthread_mutex_unlock (&page_locks[i]);
  return r;
}

/* Read the source; with O_DIRECT through an aligned window when the request or buffer is not aligned. */
static int
source_read (void *buf, uint32_t n, uint64_t off)
{
  if (!direct || aligned (buf, n, off)) return pread_full (src_fd, buf, n, off);
  uint64_t lo = off & ~(uint64_t) (ALIGN - 1), hi = (off + n + ALIGN - 1) & ~(uint64_t) (ALIGN - 1);
  char *tmp = scratch (hi - lo);
  if (!tmp) { errno = ENOMEM; return -1; }
  if (pread_full (src_fd, tmp, hi - lo, lo) < 0) return -1;
  memcpy (buf, tmp + (off - lo), n);
  return 0;
}

/* ------------------------------------------------------------------ nbdkit callbacks */

struct handle { struct snapshot *snap; };   /* snap NULL: the live volume */

static void
cofw_load (void)
{
  pthread_rwlockattr_t a;
  pthread_rwlockattr_init (&a);
  pthread_rwlockattr_setkind_np (&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
  pthread_rwlock_init (&gate, &a);
  pthread_key_create (&scratch_key, scratch_free);
}

static int
cofw_config (const char *key, const char *value)
{
  int64_t v;
  if (strcmp (key, "source") == 0) cfg_source = value;
  else if (strcmp (key, "snapdir") == 0) cfg_snapdir = value;
  else if (strcmp (key, "control") == 0) cfg_control = value;
  else if (strcmp (key, "snapdev") == 0) cfg_snapdev = value;
  else if (strcmp (key, "size") == 0) { if ((cfg_size = nbdkit_parse_size (value)) < 0) return -1; }
  else if (strcmp (key, "page_size") == 0) {
    if ((v = nbdkit_parse_size (value)) < 0) return -1;
    if (v < 512 || (v & (v - 1))) {
      nbdkit_error ("cofw config: field 'page_size': must be a power of two >= 512, got %s", value);
      return -1;
    }
    page_size = v;
  }
  else if (strcmp (key, "extent_size") == 0) {
    if ((v = nbdkit_parse_size (value)) < 0) return -1;
    if (v < 4096 || (v & (v - 1))) {
      nbdkit_error ("cofw config: field 'extent_size': must be a power of two >= 4096, got %s", value);
      return -1;
    }
    extent_size = v;
  }
  else if (strcmp (key, "durability") == 0) {
    if (strcmp (value, "sync") && strcmp (value, "none")) {
      nbdkit_error ("cofw config: field 'durability': must be one of sync, none, got '%s'", value);
      return -1;
    }
    durable = strcmp (value, "sync") == 0;
  }
  else if (strcmp (key, "direct") == 0) {
    int b = nbdkit_parse_bool (value);
    if (b < 0) return -1;
    direct = b;
  }
  else if (strcmp (key, "stripes") == 0) {
    if (nbdkit_parse_int ("stripes", value, &stripes_wanted) < 0) return -1;
    if (stripes_wanted < 1) { nbdkit_error ("cofw config: field 'stripes': must be >= 1, got %s", value); return -1; }
  }
  else if (strcmp (key, "snapdev_connections") == 0) {
    if (nbdkit_parse_int ("snapdev_connections", value, &snapdev_connections) < 0) return -1;
    if (snapdev_connections < 1) {
      nbdkit_error ("snapshot device: field 'connections': must be >= 1");
      return -1;
    }
  }
  else if (strcmp (key, "pushers") == 0) {
    if (nbdkit_parse_int ("pushers", value, &pushers) < 0) return -1;
    if (pushers < 0) { nbdkit_error ("cofw config: field 'pushers': must be >= 0, got %s", value); return -1; }
  }
  else if (strcmp (key, "statement_ns") == 0) {
    if (nbdkit_parse_int64_t ("statement_ns", value, &statement_ns) < 0) return -1;
    if (statement_ns < 0) {
      nbdkit_error ("cofw config: field 'statement_ns': must be >= 0, got %s", value);
      return -1;
    }
  }
  else {
    nbdkit_error ("unknown parameter '%s' (known: source, snapdir, control, page_size, durability, direct, "
                  "stripes, size, snapdev, snapdev_connections, extent_size, pushers, statement_ns)", key);
    return -1;
  }
  return 0;
}

static int
cofw_config_complete (void)
{
  if (!cfg_source || !cfg_snapdir || !cfg_control) {
    nbdkit_error ("missing parameter %s=", !cfg_source ? "source" : !cfg_snapdir ? "snapdir" : "control");
    return -1;
  }
  if (direct && page_size % 4096) {
    nbdkit_error ("cofw config: field 'page_size': must be a multiple of 4096 with direct=True");
    return -1;
  }
  if (statement_ns > 0 && pushers == 0) {
    nbdkit_error ("cofw config: field 'statement_ns': needs pushers > 0 (the statement's work is a pusher's)");
    return -1;
  }
  if (cfg_snapdev && extent_size % page_size) {
    nbdkit_error ("cofw config: field 'extent_size': %" PRIi64 " is not a multiple of the page size %" PRIi64,
                  extent_size, page_size);
    return -1;
  }
  return 0;
}

static int
snapshot_name_cmp (const void *a, const void *b)
{
  return strcmp (*(char *const *) a, *(char *const *) b);
}

static int
cofw_get_ready (void)
{
  char err[ERRLEN] = "";
  page_shift = __builtin_ctzll (page_size);
  kill_after_copy = getenv ("SNAPTAX_COFW_KILL_AFTER_COPY") != NULL;
  src_fd = open (cfg_source, O_RDWR | O_CLOEXEC | (direct ? O_DIRECT : 0));
  if (src_fd < 0) { nbdkit_error ("cannot open source %s: %s", cfg_source, strerror (errno)); return -1; }
  int64_t whole = lseek (src_fd, 0, SEEK_END);       /* also right for block devices (st_size is 0) */
  vol_size = cfg_size < 0 ? whole : cfg_size;
  if (vol_size > whole) {
    nbdkit_error ("%s: field 'size': %" PRIi64 " bytes exceeds the source's %" PRIi64, cfg_source, vol_size, whole);
    return -1;
  }
  if (vol_size <= 0 || vol_size % page_size) {
    nbdkit_error ("%s: field 'size': %" PRIi64 " bytes is not a positive multiple of the page size %" PRIi64,
                  cfg_source, vol_size, page_size);
    return -1;
  }
  npages = vol_size >> page_shift;
  nstripes = stripes_wanted < npages ? stripes_wanted : npages;
  page_locks = malloc (nstripes * sizeof *page_locks);
  if (!page_locks) { nbdkit_error ("out of memory"); return -1; }
  for (int64_t i = 0; i < nstripes; i++) pthread_mutex_init (&page_locks[i], NULL);

  if (cfg_snapdev) {
    struct stat a, b;
    if (stat (cfg_snapdev, &a) == 0 && stat (cfg_source, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino) {
      nbdkit_error ("snapdev=%s is the source itself: snapshots need a device of their own", cfg_snapdev);
      return -1;
    }
    if (dev_open (cfg_snapdev, err) < 0) { nbdkit_error ("%s", err); return -1; }
  }

  /* Re-attach (recover) every snapshot in snapdir, in name order. */
  const char *suffix = snapdev ? MAP_SUFFIX : SNAP_SUFFIX;
  size_t slen = strlen (suffix);
  DIR *d = opendir (cfg_snapdir);
  if (!d) return 0;                                  /* created by the first snapshot's launcher */
  char **names = NULL;
  size_t nn = 0;
  struct dirent *de;
  while ((de = readdir (d))) {
    size_t l = strlen (de->d_name);
    if (l > slen && strcmp (de->d_name + l - slen, suffix) == 0 && de->d_type != DT_DIR) {
      names = realloc (names, (nn + 1) * sizeof *names);
      names[nn++] = strndup (de->d_name, l - slen);
    }
  }
  closedir (d);
  qsort (names, nn, sizeof *names, snapshot_name_cmp);
  int r = 0;
  for (size_t i = 0; i < nn; i++) {
    char path[PATH_MAX];
    snprintf (path, sizeof path, "%s/%s%s", cfg_snapdir, names[i], suffix);
    if (r == 0 && attach_snapshot (names[i], path, err) < 0) { nbdkit_error ("%s", err); r = -1; }
    free (names[i]);
  }
  free (names);
  return r;
}

static void *control_thread (void *);

static int
cofw_after_fork (void)
{
  /* Threads must start after nbdkit's (optional) fork into the background. */
  struct sockaddr_un addr = { .sun_family = AF_UNIX };
  if (strlen (cfg_control) >= sizeof addr.sun_path) {
    nbdkit_error ("control socket path too long: %s", cfg_control);
    return -1;
  }
  strcpy (addr.sun_path, cfg_control);
  unlink (cfg_control);               /* a stale socket from a killed run; the engine owns the directory */
  ctl_fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (ctl_fd < 0 || bind (ctl_fd, (struct sockaddr *) &addr, sizeof addr) < 0 || listen (ctl_fd, 8) < 0) {
    nbdkit_error ("control socket %s: %s", cfg_control, strerror (errno));
    return -1;
  }
  snprintf (ctl_path, sizeof ctl_path, "%s", cfg_control);
  pthread_t t;
  if (pthread_create (&t, NULL, control_thread, NULL) != 0) {
    nbdkit_error ("cannot start the control thread");
    return -1;
  }
  pthread_detach (t);
  return 0;
}

/* Clean shutdown: sync and close everything; durability=none snapshots become safe (marker removed). */
static void
cofw_cleanup (void)
{
  if (ctl_fd >= 0) {
    shutdown (ctl_fd, SHUT_RDWR);
    close (ctl_fd);
    unlink (ctl_path);
    ctl_fd = -1;
  }
  pthread_rwlock_wrlock (&gate);
  for (int i = 0; i < nsnaps; i++) store_sync (snaps[i]);
  if (src_fd >= 0) fdatasync (src_fd);
  for (int i = 0; i < nsnaps; i++) {
    char marker[PATH_MAX];
    marker_path (marker, snaps[i]->path);
    close (snaps[i]->fd);
    snaps[i]->fd = -1;
    snaps[i]->alive = false;
    unlink (marker);
  }
  nsnaps = 0;
  if (src_fd >= 0) close (src_fd);
  src_fd = -1;
  pthread_rwlock_unlock (&gate);
  dev_close ();
}

static int
cofw_list_exports (int readonly, int is_tls, struct nbdkit_exports *exports)
{
  if (nbdkit_add_export (exports, "live", NULL) < 0) return -1;
  pthread_rwlock_rdlock (&gate);
  int r = 0;
  for (int i = 0; i < nsnaps && r == 0; i++) {
    char name[96];
    snprintf (name, sizeof name, "snap-%s", snaps[i]->name);
    r = nbdkit_add_export (exports, name, NULL);
  }
  pthread_rwlock_unlock (&gate);
  return r;
}

static const char *
cofw_default_export (int readonly, int is_tls)
{
  return "live";
}

static void *
cofw_open (int readonly)
{
  const char *name = nbdkit_export_name ();
  struct handle *h = calloc (1, sizeof *h);
  if (!h) { nbdkit_error ("out of memory"); return NULL; }
  if (!name || !*name || strcmp (name, "live") == 0) return h;
  if (strncmp (name, "snap-", 5) == 0) {
    pthread_rwlock_rdlock (&gate);
    h->snap = find_snap (name + 5);
    if (h->snap) __atomic_add_fetch (&h->snap->refs, 1, __ATOMIC_ACQ_REL);
    pthread_rwlock_unlock (&gate);
    if (h->snap) return h;
    nbdkit_error ("no snapshot named '%s'", name + 5);
  }
  else
    nbdkit_error ("no export '%s': 'live' or 'snap-NAME'", name);
  nbdkit_set_error (ENOENT);
  free (h);
  return NULL;
}

static void
cofw_close (void *handle)
{
  struct handle *h = handle;
  if (h->snap) snap_unref (h->snap);
  free (h);
}

static int64_t
cofw_get_size (void *handle)
{
  return vol_size;
}

static int
cofw_block_size (void *handle, uint32_t *minimum, uint32_t *preferred, uint32_t *maximum)
{
  /* With O_DIRECT the blocksize filter in front already enforces 4096; advertise it for polite clients. */
  *minimum = direct ? 4096 : 1;
  uint32_t pref = page_size < 65536 ? page_size : 65536;
  *preferred = pref > *minimum ? pref : *minimum;
  *maximum = 32 * 1024 * 1024;
  return 0;
}

static int cofw_can_write (void *handle) { return ((struct handle *) handle)->snap == NULL; }
static int cofw_can_flush (void *handle) { return 1; }
static int cofw_can_fua (void *handle) { return NBDKIT_FUA_EMULATE; }
/* One process, one set of file descriptors: a flush on any connection covers writes from all of them. */
static int cofw_can_multi_conn (void *handle) { return 1; }
static int cofw_is_rotational (void *handle) { return 0; }

/* Read a snapshot's point-in-time view: copied pages from its store, the rest from the source. */
static int
snapshot_read (struct snapshot *sn, char *buf, uint32_t n, uint64_t offset)
{
  int64_t first = offset >> page_shift, last = (offset + n - 1) >> page_shift;
  int64_t base = first << page_shift, span = (last - first + 1) << page_shift;
  /* With O_DIRECT read into an aligned window of whole pages, copy the requested span out at the end. */
  char *win = direct ? scratch (span) : NULL;
  if (direct && !win) { nbdkit_error ("out of memory"); return -1; }
  bool all = true;
  for (int64_t p = first; p <= last && all; p++) all = __atomic_load_n (&sn->bitmap[p], __ATOMIC_ACQUIRE);
  int64_t from_store = 0;
  if (all) {                               /* every page copied: the store alone */
    if (direct ? store_read (sn, win, span, base) : store_read (sn, buf, n, offset)) goto ioerr;
    from_store = last - first + 1;
  }
  else {
    /* Source first, bitmap second: a page unmarked after the source read was not yet being overwritten. */
    if (direct ? pread_full (src_fd, win, span, base) : pread_full (src_fd, buf, n, offset)) goto ioerr;
    __atomic_thread_fence (__ATOMIC_SEQ_CST);
    for (int64_t p = first; p <= last;) {
      if (!__atomic_load_n (&sn->bitmap[p], __ATOMIC_ACQUIRE)) { p++; continue; }
      int64_t q = p;
      while (q < last && __atomic_load_n (&sn->bitmap[q + 1], __ATOMIC_ACQUIRE)) q++;
      int64_t lo = p << page_shift, hi = (q + 1) << page_shift;
      if (direct) {
        if (store_read (sn, win + (lo - base), hi - lo, lo)) goto ioerr;
      }
      else {
        int64_t lo2 = lo > (int64_t) offset ? lo : (int64_t) offset;
        int64_t hi2 = hi < (int64_t) (offset + n) ? hi : (int64_t) (offset + n);
        if (store_read (sn, buf + (lo2 - offset), hi2 - lo2, lo2)) goto ioerr;
      }
      from_store += q - p + 1;
      p = q + 1;
    }
  }
  if (direct) memcpy (buf, win + (offset - base), n);
  if (from_store) ADD (ctr.snap_pages_read, from_store);
  return 0;
 ioerr:
  nbdkit_error ("snapshot %s: read at %" PRIu64 "+%" PRIu32 ": %s", sn->name, offset, n, strerror (errno));
  return -1;
}

static int
cofw_pread (void *handle, void *buf, uint32_t n, uint64_t offset, uint32_t flags)
{
  struct handle *h = handle;
  if (n == 0) return 0;
  if (!h->snap) {
    if (source_read (buf, n, offset) < 0) { nbdkit_error ("source read: %s", strerror (errno)); return -1; }
    return 0;
  }
  pthread_rwlock_rdlock (&gate);
  int r;
  if (!h->snap->alive) {
    nbdkit_error ("snapshot '%s' was deleted", h->snap->name);
    nbdkit_set_error (ENOENT);
    r = -1;
  }
  else
    r = snapshot_read (h->snap, buf, n, offset);
  pthread_rwlock_unlock (&gate);
  return r;
}

static int
cofw_pwrite (void *handle, const void *buf, uint32_t n, uint64_t offset, uint32_t flags)
{
  if (n == 0) return 0;
  if (direct && ((offset | n) & (ALIGN - 1))) {
    /* A read-modify-write here would race with neighbours in the block; nbdkit's blocksize filter in front of
     * the plugin does that RMW serialised. */
    nbdkit_error ("unaligned write [%" PRIu64 ", +%" PRIu32 "] with direct=1 (4096-byte alignment needed)", offset, n);
    nbdkit_set_error (EINVAL);
    return -1;
  }
  char err[ERRLEN] = "";
  int64_t first = offset >> page_shift, last = (offset + n - 1) >> page_shift;
  bool worked = false;                              /* the statement's work done (in copy_out) */
  pthread_rwlock_rdlock (&gate);
  for (int s = 0; s < nsnaps; s++) {
    const uint8_t *bm = snaps[s]->bitmap;
    bool lacks = false;
    for (int64_t p = first; p <= last && !lacks; p++) lacks = !__atomic_load_n (&bm[p], __ATOMIC_ACQUIRE);
    if (lacks) {
      if (copy_out (first, last, &worked, err) < 0) {
        pthread_rwlock_unlock (&gate);
        nbdkit_error ("%s", err);         /* the source is not written: the snapshot stays consistent */
        nbdkit_set_error (strstr (err, "full") ? ENOSPC : EIO);
        return -1;
      }
      break;
    }
  }
  if (statement_ns > 0 && !worked) {                /* nothing to copy: the statement's work alone, no lock held */
    push_acquire ();
    statement_work (last - first + 1);
    push_release ();
  }
  uint64_t t0 = now_ns ();
  const void *src = buf;
  if (direct && !aligned (buf, n, offset)) {
    void *tmp = scratch (n);
    if (!tmp) { pthread_rwlock_unlock (&gate); nbdkit_error ("out of memory"); return -1; }
    memcpy (tmp, buf, n);
    src = tmp;
  }
  int r = pwrite_full (src_fd, src, n, offset);
  ADD (ctr.source_write_ns, now_ns () - t0);
  pthread_rwlock_unlock (&gate);
  if (r < 0) nbdkit_error ("source write: %s", strerror (errno));
  return r;
}

/* Make everything acknowledged so far durable (NBD FLUSH, and FUA through nbdkit's emulation). */
static int
cofw_flush (void *handle, uint32_t flags)
{
  pthread_rwlock_rdlock (&gate);
  int r = 0;
  if (!durable)
    for (int i = 0; i < nsnaps && r == 0; i++) r = store_sync (snaps[i]);   /* copies first, then the source */
  if (r == 0) r = fdatasync (src_fd);
  pthread_rwlock_unlock (&gate);
  if (r < 0) nbdkit_error ("flush: %s", strerror (errno));
  return r;
}

/* ------------------------------------------------------------------ control socket */

/* A growable string for replies. */
struct sbuf { char *p; size_t n, cap; };

static void
sb_add (struct sbuf *b, const char *fmt, ...)
{
  va_list ap;
  for (;;) {
    va_start (ap, fmt);
    int k = vsnprintf (b->p ? b->p + b->n : NULL, b->p ? b->cap - b->n : 0, fmt, ap);
    va_end (ap);
    if (k < 0) return;
    if (b->p && b->n + k < b->cap) { b->n += k; return; }
    size_t cap = (b->cap + k + 1) * 2;
    char *p = realloc (b->p, cap);
    if (!p) return;
    b->p = p;
    b->cap = cap;
  }
}

static void
sb_str (struct sbuf *b, const char *s)
{
  sb_add (b, "\"");
  for (; *s; s++) {
    unsigned char c = *s;
    if (c == '"' || c == '\\') sb_add (b, "\\%c", c);
    else if (c < 0x20) sb_add (b, "\\u%04x", c);
    else sb_add (b, "%c", c);
  }
  sb_add (b, "\"");
}

/* The requests are flat JSON objects of strings, booleans, numbers and null ({"op": "create", "name": "s1"}).
 * This reads exactly that; anything else is refused, like a non-object request in the Python server. */
struct req { char op[64], name[256]; bool has_op, has_name, keep_file; };

static const char *
skip_ws (const char *s)
{
  while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n') s++;
  return s;
}

static const char *
parse_jstr (const char *s, char *out, size_t cap)
{
  if (*s != '"') return NULL;
  size_t n = 0;
  for (s++; *s && *s != '"'; s++) {
    char c = *s;
    if (c == '\\') {
      s++;
      switch (*s) {
      case 'n': c = '\n'; break;
      case 't': c = '\t'; break;
      case '"': case '\\': case '/': c = *s; break;
      case 'u': {
        unsigned v;
        if (sscanf (s + 1, "%4x", &v) != 1) return NULL;
        c = v < 0x80 ? (char) v : '?';
        s += 4;
        break;
      }
      default: return NULL;
      }
    }
    if (n + 1 < cap) out[n++] = c;
  }
  if (*s != '"') return NULL;
  out[n] = 0;
  return s + 1;
}

static int
parse_request (const char *line, struct req *rq)
{
  memset (rq, 0, sizeof *rq);
  const char *s = skip_ws (line);
  if (*s++ != '{') return -1;
  s = skip_ws (s);
  if (*s == '}') return 0;
  for (;;) {
    char key[64], sval[256];
    s = parse_jstr (skip_ws (s), key, sizeof key);
    if (!s) return -1;
    s = skip_ws (s);
    if (*s++ != ':') return -1;
    s = skip_ws (s);
    bool is_str = false, bval = false;
    if (*s == '"') { s = parse_jstr (s, sval, sizeof sval); if (!s) return -1; is_str = true; }
    else if (strncmp (s, "true", 4) == 0) { s += 4; bval = true; }
    else if (strncmp (s, "false", 5) == 0) s += 5;
    else if (strncmp (s, "null", 4) == 0) s += 4;
    else if (*s == '-' || isdigit ((unsigned char) *s)) { strtod (s, (char **) &s); }
    else return -1;                                  /* nested values: not part of the protocol */
    if (strcmp (key, "op") == 0 && is_str) { snprintf (rq->op, sizeof rq->op, "%s", sval); rq->has_op = true; }
    else if (strcmp (key, "name") == 0) {
      snprintf (rq->name, sizeof rq->name, "%s", is_str ? sval : "");
      rq->has_name = true;
    }
    else if (strcmp (key, "keep_file") == 0) rq->keep_file = bval;
    s = skip_ws (s);
    if (*s == ',') { s++; continue; }
    if (*s == '}') return 0;
    return -1;
  }
}

static void
counters_json (struct sbuf *b)
{
  /* Under the shared gate: a concurrent delete must not close a store while its space is read. */
  pthread_rwlock_rdlock (&gate);
#define CI(f) sb_add (b, "\"" #f "\": %" PRIu64 ", ", GET (ctr.f))
#define CT(f, json) sb_add (b, "\"" json "\": %.9f, ", GET (ctr.f) / 1e9)
  sb_add (b, "{");
  CI (pages_copied); CI (bytes_copied); CI (cow_faults); CI (cow_requests); CI (syncs); CI (bitmap_marks);
  CI (metadata_ops); CI (snap_pages_read); CI (snapshots_created); CI (snapshots_deleted);
  CI (recovery_punched_pages);
  CT (source_write_ns, "source_write_s"); CT (copy_read_ns, "copy_read_s"); CT (copy_write_ns, "copy_write_s");
  CT (commit_ns, "commit_s"); CT (push_wait_ns, "push_wait_s");
  CT (statement_ns, "statement_s"); CI (push_peak);
  sb_add (b, "\"page_size\": %" PRIi64 ", \"snapshots\": [", page_size);
  for (int i = 0; i < nsnaps; i++) { if (i) sb_add (b, ", "); sb_str (b, snaps[i]->name); }
  sb_add (b, "], \"copied_pages\": {");
  for (int i = 0; i < nsnaps; i++) {
    if (i) sb_add (b, ", ");
    sb_str (b, snaps[i]->name);
    sb_add (b, ": %" PRIi64, copied_pages (snaps[i]));
  }
  sb_add (b, "}, \"times\": {");
  int64_t allocated = 0;
  for (int i = 0; i < nsnaps; i++) {
    if (i) sb_add (b, ", ");
    sb_str (b, snaps[i]->name);
    sb_add (b, ": {\"copy_write_s\": %.9f, \"commit_s\": %.9f}", GET (snaps[i]->copy_write_ns) / 1e9,
            GET (snaps[i]->commit_ns) / 1e9);
    allocated += store_allocated (snaps[i]);
  }
  sb_add (b, "}, \"snapshot_allocated_bytes\": %" PRIi64 "}", allocated);
  pthread_rwlock_unlock (&gate);
#undef CI
#undef CT
}

static void
handle_request (const char *line, struct sbuf *out)
{
  struct req rq;
  char err[ERRLEN] = "";
  if (parse_request (line, &rq) < 0 || !rq.has_op) {
    sb_add (out, "{\"ok\": false, \"error\": \"ValueError: request must be a JSON object with a string 'op'\"}");
    return;
  }
  struct sbuf res = { 0 };
  int r = 0;
  if (strcmp (rq.op, "ping") == 0) sb_add (&res, "\"pong\"");
  else if (strcmp (rq.op, "create") == 0) {
    char path[PATH_MAX];
    r = create_snapshot (rq.name, path, err);
    if (r == 0) {
      sb_add (&res, "{\"name\": "); sb_str (&res, rq.name);
      sb_add (&res, ", \"path\": "); sb_str (&res, path);
      sb_add (&res, ", \"export\": \"snap-"); sb_add (&res, "%s\"}", rq.name);
    }
  }
  else if (strcmp (rq.op, "delete") == 0) {
    r = delete_snapshot (rq.name, !rq.keep_file, err);
    if (r == 0) { sb_add (&res, "{\"name\": "); sb_str (&res, rq.name); sb_add (&res, "}"); }
  }
  else if (strcmp (rq.op, "list") == 0) {
    pthread_rwlock_rdlock (&gate);
    sb_add (&res, "[");
    for (int i = 0; i < nsnaps; i++) { if (i) sb_add (&res, ", "); sb_str (&res, snaps[i]->name); }
    sb_add (&res, "]");
    pthread_rwlock_unlock (&gate);
  }
  else if (strcmp (rq.op, "counters") == 0) counters_json (&res);
  else r = fail (err, "ValueError: unknown op '%s'", rq.op);
  if (r == 0) { sb_add (out, "{\"ok\": true, \"result\": %s}", res.p ? res.p : "null"); }
  else {
    /* Errors from the data path carry no class name; engine-side they are EngineErrors. */
    char msg[ERRLEN + 16];
    snprintf (msg, sizeof msg, "%s%s", strchr (err, ':') && strstr (err, "Error: ") ? "" : "EngineError: ", err);
    sb_add (out, "{\"ok\": false, \"error\": ");
    sb_str (out, msg);
    sb_add (out, "}");
  }
  free (res.p);
}

static void *
control_conn (void *arg)
{
  int fd = (int) (intptr_t) arg;
  FILE *f = fdopen (fd, "r+");
  if (!f) { close (fd); return NULL; }
  char *line = NULL;
  size_t cap = 0;
  while (getline (&line, &cap, f) > 0) {
    struct sbuf out = { 0 };
    handle_request (line, &out);
    sb_add (&out, "\n");
    if (!out.p || fwrite (out.p, 1, out.n, f) != out.n || fflush (f) != 0) { free (out.p); break; }
    free (out.p);
  }
  free (line);
  fclose (f);
  return NULL;
}

/* One thread per client connection: the engine keeps one open for the run, readiness probes open others. */
static void *
control_thread (void *arg)
{
  for (;;) {
    int fd = accept4 (ctl_fd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      return NULL;                                   /* socket closed: shutting down */
    }
    pthread_t t;
    if (pthread_create (&t, NULL, control_conn, (void *) (intptr_t) fd) != 0) { close (fd); continue; }
    pthread_detach (t);
  }
}

static struct nbdkit_plugin plugin = {
  .name = "cofw",
  .longname = "snaptax copy-on-first-write snapshots (SQL Server database-snapshot semantics)",
  .version = "1",
  .load = cofw_load,
  .config = cofw_config,
  .config_complete = cofw_config_complete,
  .config_help = "source=FILE snapdir=DIR control=SOCK [size=] [page_size=8192] [durability=sync|none] "
                 "[direct=0|1] [stripes=4096] [snapdev=URI|PATH] [snapdev_connections=4] [extent_size=65536] "
                 "[pushers=0] [statement_ns=0]",
  .magic_config_key = NULL,
  .get_ready = cofw_get_ready,
  .after_fork = cofw_after_fork,
  .cleanup = cofw_cleanup,
  .list_exports = cofw_list_exports,
  .default_export = cofw_default_export,
  .open = cofw_open,
  .close = cofw_close,
  .get_size = cofw_get_size,
  .block_size = cofw_block_size,
  .can_write = cofw_can_write,
  .can_flush = cofw_can_flush,
  .can_fua = cofw_can_fua,
  .can_multi_conn = cofw_can_multi_conn,
  .is_rotational = cofw_is_rotational,
  .pread = cofw_pread,
  .pwrite = cofw_pwrite,
  .flush = cofw_flush,
  .errno_is_preserved = 1,
};

NBDKIT_REGISTER_PLUGIN (plugin)
