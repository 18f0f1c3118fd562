/* spindle_core.c: snaptax.spindle's drive and array model (model.py, arrays.py) in C. See spindle_core.h.
 *
 * This is a transcription, not a re-design: every structure, branch, tie-break and floating-point expression
 * follows the Python reference line by line, in the same order of operations, so that both compute the same
 * doubles (IEEE-754 +, -, *, /, sqrt and fmod are correctly rounded in both; built with -ffp-contract=off so
 * that no multiply-add is fused). Python's `min`/`max` builtins return the first of equal values, `%` on floats
 * takes the sign of the divisor, heaps order by (time, sequence number): the helpers below say so where it
 * matters. Where the Python code is a closure, the C code is a continuation (function + context) with the same
 * call order. Comments name the Python method each function transcribes; the reasons behind the mechanics are
 * in the Python docstrings and are not repeated here.
 *
 * One deliberate extension, mirrored in arrays.py: a tiered pool tells the completion time of a host command as
 * soon as it is fixed (Tier.submit passes the parts' etas on), so that the plugin's request threads can time
 * tier commands themselves.
 *
 * The array controller's write cache (V_CACHE) transcribes ctrlcache.py: a volume in front of another, with its
 * own events (acknowledgements, hits, battery-backed flushes). A device without one never reaches that code.
 */
#define _GNU_SOURCE
#include "spindle_core.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ small helpers */

static void *
xmalloc (size_t n)
{
  void *p = malloc (n ? n : 1);
  if (!p) { fputs ("spindle_core: out of memory\n", stderr); abort (); }
  return p;
}

static void *
xcalloc (size_t n, size_t size)
{
  void *p = calloc (n ? n : 1, size ? size : 1);
  if (!p) { fputs ("spindle_core: out of memory\n", stderr); abort (); }
  return p;
}

static void *
xrealloc (void *p, size_t n)
{
  p = realloc (p, n ? n : 1);
  if (!p) { fputs ("spindle_core: out of memory\n", stderr); abort (); }
  return p;
}

/* Python's max(a, b) and min(a, b): the first argument unless the second is strictly greater/smaller. */
static inline double pymax (double a, double b) { return b > a ? b : a; }
static inline double pymin (double a, double b) { return b < a ? b : a; }

/* Python's x % 1.0 for floats (fmod, then the sign of the divisor, +0.0 for a zero remainder), as x - floor(x):
 * the same double in every case. fmod(x, 1) = x - trunc(x) is exact; for x >= 0 that is x - floor(x); for x < 0
 * Python rounds fmod(x, 1) + 1 once, and x - floor(x) = (x - trunc(x)) + 1 is that exact sum rounded once; an
 * integral x gives +0.0 both ways. glibc's fmod loops over the exponent difference (t / T_rev is in the
 * thousands): SPTF calls this once per queued command, and it was most of the time a dispatch took. */
static inline double
pymod1 (double x)
{
  return x - floor (x);
}

/* A deque of pointers with order-preserving removal (Python list / collections.deque). */
struct pvec { void **v; size_t head, len, cap; };

static inline void *pv_get (const struct pvec *q, size_t i) { return q->v[q->head + i]; }

static void
pv_push (struct pvec *q, void *p)
{
  if (q->head + q->len == q->cap) {
    if (q->head > 0) {
      memmove (q->v, q->v + q->head, q->len * sizeof *q->v);
      q->head = 0;
    }
    if (q->len == q->cap) {
      q->cap = q->cap ? 2 * q->cap : 16;
      q->v = xrealloc (q->v, q->cap * sizeof *q->v);
    }
  }
  q->v[q->head + q->len++] = p;
}

static void *
pv_popleft (struct pvec *q)
{
  void *p = q->v[q->head++];
  if (--q->len == 0) q->head = 0;
  return p;
}

static void
pv_remove_at (struct pvec *q, size_t i)
{
  memmove (q->v + q->head + i, q->v + q->head + i + 1, (q->len - i - 1) * sizeof *q->v);
  q->len--;
  if (q->len == 0) q->head = 0;
}

static void pv_free (struct pvec *q) { free (q->v); memset (q, 0, sizeof *q); }

/* A binary heap ordered by (t, seq): heapq over (t, seq, payload) tuples with unique seq. */
struct hent { double t; uint64_t seq; void *p; };
struct heap { struct hent *v; size_t len, cap; };

static inline bool
hless (const struct hent *a, const struct hent *b)
{
  return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static void
heap_push (struct heap *h, double t, uint64_t seq, void *p)
{
  if (h->len == h->cap) {
    h->cap = h->cap ? 2 * h->cap : 16;
    h->v = xrealloc (h->v, h->cap * sizeof *h->v);
  }
  size_t i = h->len++;
  struct hent e = { t, seq, p };
  while (i > 0) {
    size_t parent = (i - 1) / 2;
    if (!hless (&e, &h->v[parent])) break;
    h->v[i] = h->v[parent];
    i = parent;
  }
  h->v[i] = e;
}

static struct hent
heap_pop (struct heap *h)
{
  struct hent top = h->v[0];
  struct hent last = h->v[--h->len];
  size_t i = 0, n = h->len;
  if (n > 0) {
    for (;;) {
      size_t l = 2 * i + 1, r = l + 1, m = i;
      const struct hent *best = &last;
      if (l < n && hless (&h->v[l], best)) { m = l; best = &h->v[l]; }
      if (r < n && hless (&h->v[r], best)) { m = r; }
      if (m == i) break;
      h->v[i] = h->v[m];
      i = m;
    }
    h->v[i] = last;
  }
  return top;
}

/* A ring of integers (a deque of free slots). */
struct iring { int64_t *v; size_t cap, head, len; };

static void
ir_init (struct iring *r, size_t cap)
{
  r->v = xcalloc (cap ? cap : 1, sizeof *r->v);
  r->cap = cap ? cap : 1;
  r->head = r->len = 0;
}

static void
ir_push (struct iring *r, int64_t x)
{
  if (r->len == r->cap) {   /* cannot happen (slots are conserved); grow rather than corrupt */
    int64_t *v = xcalloc (2 * r->cap, sizeof *v);
    for (size_t i = 0; i < r->len; i++) v[i] = r->v[(r->head + i) % r->cap];
    free (r->v);
    r->v = v; r->head = 0; r->cap *= 2;
  }
  r->v[(r->head + r->len++) % r->cap] = x;
}

static int64_t
ir_popleft (struct iring *r)
{
  int64_t x = r->v[r->head];
  r->head = (r->head + 1) % r->cap;
  r->len--;
  return x;
}

/* A growing string for the counters' JSON. */
struct sb { char *s; size_t len, cap; };

static void
sb_printf (struct sb *b, const char *fmt, ...)
{
  for (;;) {
    va_list ap;
    va_start (ap, fmt);
    size_t room = b->cap - b->len;
    int n = vsnprintf (b->s ? b->s + b->len : NULL, room, fmt, ap);
    va_end (ap);
    if (n < 0) return;
    if ((size_t) n < room) { b->len += n; return; }
    b->cap = (b->cap + n + 1) * 2;
    b->s = xrealloc (b->s, b->cap);
  }
}

static void
sb_str (struct sb *b, const char *s)
{
  sb_printf (b, "\"");
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') sb_printf (b, "\\%c", *s);
    else if ((unsigned char) *s < 0x20) sb_printf (b, "\\u%04x", *s);
    else sb_printf (b, "%c", *s);
  }
  sb_printf (b, "\"");
}

/* ------------------------------------------------------------------ continuations (Python's closures) */

struct spindle_sim;
typedef void (*cont_fn) (struct spindle_sim *s, void *ctx, double t);
struct cont { cont_fn fn; void *ctx; };
static const struct cont NOCONT = { NULL, NULL };

static inline struct cont mk (cont_fn fn, void *ctx) { struct cont c = { fn, ctx }; return c; }
static inline void call (struct spindle_sim *s, struct cont c, double t) { if (c.fn) c.fn (s, c.ctx, t); }

/* ------------------------------------------------------------------ counters (model.Counters) */

#define SEEK_BINS 24

struct counters {
  char *name;
  int64_t reads, writes, bytes_read, bytes_written;
  double busy_s;
  int64_t queue_depth, queue_depth_max;
  double qd_integral;
  int64_t seek_hist[SEEK_BINS];
  double seek_cyl_total;
  int64_t cache_hits;
  double t_last;
};

static void
qd_change (struct counters *c, double t, int delta)
{
  c->qd_integral += (double) c->queue_depth * pymax (0.0, t - c->t_last);
  c->t_last = pymax (c->t_last, t);
  c->queue_depth += delta;
  if (c->queue_depth > c->queue_depth_max) c->queue_depth_max = c->queue_depth;
}

static void
count_seek (struct counters *c, double d)
{
  c->seek_cyl_total += d;
  int i = 0;
  if (!(d < 0.5)) {
    i = 1 + (int) log2 (pymax (d, 1.0));
    if (i > SEEK_BINS - 1) i = SEEK_BINS - 1;
  }
  c->seek_hist[i]++;
}

static void
count_done (struct counters *c, bool write, int64_t nbytes)
{
  if (write) { c->writes++; c->bytes_written += nbytes; }
  else { c->reads++; c->bytes_read += nbytes; }
}

/* ------------------------------------------------------------------ members (model.Disk, Ssd, ZeroDevice) */

enum { M_DISK, M_SSD, M_ZERO };
enum { SCHED_SPTF, SCHED_CLOOK, SCHED_FIFO };
enum { SVC_NONE, SVC_MEDIA, SVC_HIT, SVC_STREAM };

struct curve { double a, b, c, e, d_b; };

struct op {
  int64_t lba, nbytes;
  bool write, destage;
  struct cont on_done, eta;
  double t_submit, x, angle, x_end;
  int svc;
};

struct waiter { struct cont done, eta; };

struct member {
  int kind;
  struct counters c;
  /* disk: geometry (model.Geometry) and profile */
  double k, rho_bar, used, t_rev, revs, cylinders;
  struct curve sr, sw;
  double queued_cmd_s, overhead, iface, starvation_ms;
  int64_t queue_depth, write_cache_bytes, readahead_bytes;
  int scheduler;
  bool write_cache;
  /* disk: state */
  struct pvec queue, overflow, dirty, blocked, flush_waiters;
  int64_t dirty_bytes;
  struct heap acks, flush_acks;
  uint64_t seq;
  struct op *current;
  double busy_until, head_x;
  double ra_start, ra_x, ra_t, ra_limit_x;
  bool ra_frozen;
  /* ssd */
  double read_us, write_us, read_mb_s, write_mb_s;
  int64_t channels;
  struct heap running;
  struct pvec waiting;
};

static double
seek_ms (const struct curve *c, double d)
{
  if (d < 0.5) return 0.0;
  if (d < 1.0) d = 1.0;
  if (d < c->d_b) return c->a + c->b * sqrt (d);
  return c->c + c->e * d;
}

static double
x_of (const struct member *m, double lba)
{
  double f = pymin (pymax (lba / m->used, 0.0), 1.0);
  if (m->k >= 1.0) return f;
  double q = 1 - m->k;
  return (1 - sqrt (pymax (0.0, 1 - 2 * q * m->rho_bar * f))) / q;
}

static inline double angle_of (const struct member *m, double x) { return pymod1 (m->revs * x); }
static inline double stream_s (const struct member *m, double x0, double x1) { return (x1 - x0) * m->revs * m->t_rev; }

static struct op *
new_op (int64_t lba, int64_t nbytes, bool write, struct cont on_done, struct cont eta)
{
  struct op *op = xcalloc (1, sizeof *op);
  op->lba = lba; op->nbytes = nbytes; op->write = write; op->on_done = on_done; op->eta = eta;
  return op;
}

static void disk_dispatch (struct spindle_sim *s, struct member *m, double t);

static void
disk_prepare (struct member *m, struct op *op)
{
  op->x = x_of (m, (double) op->lba);
  op->x_end = x_of (m, (double) (op->lba + op->nbytes));
  op->angle = angle_of (m, op->x);
}

/* Disk.positioning: start of transfer; *d the seek distance in cylinders */
static double
positioning (const struct member *m, const struct op *op, double t, double head_x, double *d)
{
  double dist = fabs (op->x - head_x) * m->cylinders;
  const struct curve *cv = op->write ? &m->sw : &m->sr;
  double t_cmd = pymax (t, op->t_submit + m->overhead);
  double t1 = t_cmd + seek_ms (cv, dist) / 1e3;
  double frac = pymod1 (op->angle - t1 / m->t_rev);
  if (frac > 1.0 - 1e-9) frac = 0.0;
  if (d) *d = dist;
  return t1 + frac * m->t_rev;
}

static double
ra_position_x (const struct member *m, double t)
{
  if (m->ra_frozen) return m->ra_limit_x;
  return pymin (m->ra_limit_x, m->ra_x + (t - m->ra_t) / (m->revs * m->t_rev));
}

static void
ra_freeze (struct member *m, double t)
{
  if (!m->ra_frozen) {
    m->ra_limit_x = ra_position_x (m, t);
    m->head_x = m->ra_limit_x;
    m->ra_frozen = true;
  }
}

static void destaged (struct spindle_sim *s, void *ctx, double t) { (void) s; (void) ctx; (void) t; }

static void
accept_cached (struct spindle_sim *s, struct member *m, struct op *op, double t)
{
  m->dirty_bytes += op->nbytes;
  m->seq++;
  double t_ack = pymax (t, op->t_submit) + m->overhead + (double) op->nbytes / m->iface;
  heap_push (&m->acks, t_ack, m->seq, op);
  call (s, op->eta, t_ack);
  struct op *d = new_op (op->lba, op->nbytes, true, mk (destaged, NULL), NOCONT);
  d->t_submit = t; d->x = op->x; d->angle = op->angle; d->x_end = op->x_end; d->destage = true;
  pv_push (&m->dirty, d);
}

static void
disk_submit (struct spindle_sim *s, struct member *m, struct op *op, double t)
{
  op->t_submit = t;
  disk_prepare (m, op);
  qd_change (&m->c, t, +1);
  if (op->write && m->write_cache) {
    if (m->dirty_bytes + op->nbytes <= m->write_cache_bytes)
      accept_cached (s, m, op, t);
    else
      pv_push (&m->blocked, op);
  }
  else if ((int64_t) m->queue.len < m->queue_depth)
    pv_push (&m->queue, op);
  else
    pv_push (&m->overflow, op);
  if (m->current == NULL)
    disk_dispatch (s, m, t);
}

static bool
disk_next_time (const struct member *m, double *out)
{
  bool any = false;
  double best = 0;
  if (m->current) { best = m->busy_until; any = true; }
  if (m->acks.len) { double x = m->acks.v[0].t; best = any ? pymin (best, x) : x; any = true; }
  if (m->flush_acks.len) { double x = m->flush_acks.v[0].t; best = any ? pymin (best, x) : x; any = true; }
  *out = best;
  return any;
}

static void
disk_fire (struct spindle_sim *s, struct member *m, double t)
{
  if (m->flush_acks.len) {
    double lim = pymin (m->current ? m->busy_until : INFINITY, m->acks.len ? m->acks.v[0].t : INFINITY);
    if (m->flush_acks.v[0].t <= lim) {
      struct hent e = heap_pop (&m->flush_acks);
      struct cont *answer = e.p;
      struct cont c = *answer;
      free (answer);
      call (s, c, t);
      return;
    }
  }
  if (m->acks.len && (m->current == NULL || m->acks.v[0].t <= m->busy_until)) {
    struct hent e = heap_pop (&m->acks);
    struct op *op = e.p;
    qd_change (&m->c, t, -1);
    count_done (&m->c, true, op->nbytes);
    struct cont done = op->on_done;
    free (op);
    call (s, done, t);
    return;
  }
  struct op *op = m->current;
  m->current = NULL;
  if (op->destage) {
    m->dirty_bytes -= op->nbytes;
    while (m->blocked.len
           && m->dirty_bytes + ((struct op *) pv_get (&m->blocked, 0))->nbytes <= m->write_cache_bytes)
      accept_cached (s, m, pv_popleft (&m->blocked), t);
    if (m->dirty.len == 0 && m->flush_waiters.len) {
      struct pvec waiters = m->flush_waiters;
      memset (&m->flush_waiters, 0, sizeof m->flush_waiters);
      for (size_t i = 0; i < waiters.len; i++) {
        struct waiter *w = pv_get (&waiters, i);
        call (s, w->eta, t);
        call (s, w->done, t);
        free (w);
      }
      pv_free (&waiters);
    }
    free (op);
  }
  else {
    qd_change (&m->c, t, -1);
    count_done (&m->c, op->write, op->nbytes);
    if (!op->write && m->readahead_bytes) {
      double limit = x_of (m, (double) (op->lba + op->nbytes + m->readahead_bytes));
      if (op->svc == SVC_MEDIA) {
        m->ra_start = (double) op->lba;
        m->ra_x = op->x_end; m->ra_t = t; m->ra_frozen = false;
        m->ra_limit_x = limit;
      }
      else {
        m->ra_start = pymax (m->ra_start, (double) op->lba);
        if (!m->ra_frozen) m->ra_limit_x = pymax (m->ra_limit_x, limit);
      }
    }
    struct cont done = op->on_done;
    free (op);
    call (s, done, t);
  }
  if (m->current == NULL)
    disk_dispatch (s, m, t);
}

/* Disk._choose */
static struct op *
disk_choose (const struct member *m, double t)
{
  size_t nq = m->queue.len, n = nq + m->dirty.len;
  if (n == 0) return NULL;
#define CAND(i) ((struct op *) ((i) < nq ? pv_get (&m->queue, (i)) : pv_get (&m->dirty, (i) - nq)))
  struct op *oldest = CAND (0);
  for (size_t i = 1; i < n; i++)
    if (CAND (i)->t_submit < oldest->t_submit) oldest = CAND (i);
  if (m->scheduler == SCHED_FIFO || t - oldest->t_submit > m->starvation_ms / 1e3)
    return oldest;
  struct op *best = NULL;
  if (m->scheduler == SCHED_CLOOK) {
    bool ahead = false;
    for (size_t i = 0; i < n; i++)
      if (CAND (i)->x >= m->head_x) { ahead = true; break; }
    for (size_t i = 0; i < n; i++) {
      struct op *o = CAND (i);
      if (ahead && !(o->x >= m->head_x)) continue;
      if (!best || o->x < best->x || (o->x == best->x && o->t_submit < best->t_submit)) best = o;
    }
    return best;
  }
  double best_k = 0;
  for (size_t i = 0; i < n; i++) {
    struct op *o = CAND (i);
    double k = positioning (m, o, t, m->head_x, NULL);
    if (!best || k < best_k || (k == best_k && o->t_submit < best->t_submit)) { best = o; best_k = k; }
  }
  return best;
#undef CAND
}

static void
pv_remove (struct pvec *q, void *p)
{
  for (size_t i = 0; i < q->len; i++)
    if (pv_get (q, i) == p) { pv_remove_at (q, i); return; }
}

static void
disk_start (struct spindle_sim *s, struct member *m, struct op *op, double t, double end, const double *d)
{
  if (d) count_seek (&m->c, *d);
  m->c.busy_s += end - t;
  m->busy_until = end;
  if (!op->destage) call (s, op->eta, end);
}

static void
disk_dispatch (struct spindle_sim *s, struct member *m, double t)
{
  struct op *op = disk_choose (m, t);
  if (op == NULL) return;
  if (op->destage)
    pv_remove (&m->dirty, op);
  else {
    pv_remove (&m->queue, op);
    if (m->overflow.len) pv_push (&m->queue, pv_popleft (&m->overflow));
  }
  m->current = op;
  if (!op->write && m->ra_start >= 0 && m->ra_start <= (double) op->lba) {
    double pos_x = ra_position_x (m, t);
    if (op->x <= pos_x + 1e-12) {
      double t_cmd = pymax (t, op->t_submit + m->overhead);
      if (op->x_end <= pos_x + 1e-12) {
        op->svc = SVC_HIT;
        m->c.cache_hits++;
        disk_start (s, m, op, t, t_cmd + (double) op->nbytes / m->iface, NULL);
        return;
      }
      if (!m->ra_frozen) {
        op->svc = SVC_STREAM;
        m->ra_limit_x = pymax (m->ra_limit_x, op->x_end);
        disk_start (s, m, op, t, pymax (t_cmd, m->ra_t + stream_s (m, m->ra_x, op->x_end)), NULL);
        return;
      }
    }
  }
  ra_freeze (m, t);
  op->svc = SVC_MEDIA;
  double d;
  double t_xfer = positioning (m, op, t, m->head_x, &d);
  double end = t_xfer + stream_s (m, op->x, op->x_end);
  m->head_x = op->x_end;
  disk_start (s, m, op, t, end, &d);
}

/* Disk.flush */
static void
disk_flush (struct spindle_sim *s, struct member *m, double t, struct cont done, struct cont eta)
{
  if (m->dirty.len == 0 && (m->current == NULL || !m->current->destage)) {
    double t_done = t + m->overhead;
    call (s, eta, t_done);
    if (t_done <= t) {
      call (s, done, t_done);
      return;
    }
    m->seq++;
    struct cont *c = xmalloc (sizeof *c);
    *c = done;
    heap_push (&m->flush_acks, t_done, m->seq, c);
  }
  else {
    struct waiter *w = xmalloc (sizeof *w);
    w->done = done; w->eta = eta;
    pv_push (&m->flush_waiters, w);
  }
}

static double
disk_estimate_free (const struct member *m, double t, int64_t lba)
{
  double busy = m->current ? pymax (0.0, m->busy_until - t) : 0.0;
  int64_t pending = (int64_t) (m->queue.len + m->overflow.len + m->dirty.len);
  double x = x_of (m, (double) lba);
  return t + busy + (double) pending * m->queued_cmd_s + seek_ms (&m->sr, fabs (x - m->head_x) * m->cylinders) / 1e3;
}

/* Ssd */
static double
ssd_service (const struct member *m, bool write, int64_t nbytes)
{
  if (write) return m->write_us / 1e6 + (double) nbytes / (m->write_mb_s * 1e6);
  return m->read_us / 1e6 + (double) nbytes / (m->read_mb_s * 1e6);
}

static void
ssd_start (struct spindle_sim *s, struct member *m, struct op *op, double t)
{
  double sv = ssd_service (m, op->write, op->nbytes);
  m->c.busy_s += sv / (double) m->channels;
  m->seq++;
  heap_push (&m->running, t + sv, m->seq, op);
  call (s, op->eta, t + sv);
}

static void
ssd_submit (struct spindle_sim *s, struct member *m, struct op *op, double t)
{
  op->t_submit = t;
  qd_change (&m->c, t, +1);
  count_seek (&m->c, 0);
  if ((int64_t) m->running.len < m->channels) ssd_start (s, m, op, t);
  else pv_push (&m->waiting, op);
}

static void
ssd_fire (struct spindle_sim *s, struct member *m, double t)
{
  struct hent e = heap_pop (&m->running);
  struct op *op = e.p;
  qd_change (&m->c, t, -1);
  count_done (&m->c, op->write, op->nbytes);
  if (m->waiting.len) ssd_start (s, m, pv_popleft (&m->waiting), t);
  struct cont done = op->on_done;
  free (op);
  call (s, done, t);
}

/* Member interface */
static void
member_submit (struct spindle_sim *s, struct member *m, struct op *op, double t)
{
  switch (m->kind) {
  case M_DISK: disk_submit (s, m, op, t); break;
  case M_SSD: ssd_submit (s, m, op, t); break;
  default: {
      count_done (&m->c, op->write, op->nbytes);
      struct cont done = op->on_done;
      free (op);
      call (s, done, t);
    }
  }
}

static bool
member_next_time (const struct member *m, double *out)
{
  if (m->kind == M_DISK) return disk_next_time (m, out);
  if (m->kind == M_SSD && m->running.len) { *out = m->running.v[0].t; return true; }
  return false;
}

static void
member_fire (struct spindle_sim *s, struct member *m, double t)
{
  if (m->kind == M_DISK) disk_fire (s, m, t);
  else if (m->kind == M_SSD) ssd_fire (s, m, t);
}

static void
member_flush (struct spindle_sim *s, struct member *m, double t, struct cont done, struct cont eta)
{
  if (m->kind == M_DISK) { disk_flush (s, m, t, done, eta); return; }
  call (s, eta, t);
  call (s, done, t);
}

static double
member_estimate_free (const struct member *m, double t, int64_t lba)
{
  if (m->kind == M_DISK) return disk_estimate_free (m, t, lba);
  if (m->kind == M_SSD)
    return t + (double) m->waiting.len * ssd_service (m, false, 4096) / (double) m->channels;
  return t;
}

/* ------------------------------------------------------------------ volumes (arrays.py) */

/* volume.Join */
struct join { int64_t n, unknown; double t, t_eta; struct cont on_done, eta; };

static struct join *
new_join (int64_t n, struct cont on_done, struct cont eta)
{
  struct join *j = xcalloc (1, sizeof *j);
  j->n = j->unknown = n; j->on_done = on_done; j->eta = eta;
  return j;
}

/* Every part's eta precedes its completion (members fix a time before they reach it), so once the last part
 * has completed nothing refers to the join any more. */
static void
join_part (struct spindle_sim *s, void *ctx, double t)
{
  struct join *j = ctx;
  j->n--;
  j->t = pymax (j->t, t);
  if (j->n == 0) {
    struct cont done = j->on_done;
    double tt = j->t;
    free (j);
    call (s, done, tt);
  }
}

static void
join_part_eta (struct spindle_sim *s, void *ctx, double t)
{
  struct join *j = ctx;
  j->unknown--;
  j->t_eta = pymax (j->t_eta, t);
  if (j->unknown == 0) call (s, j->eta, j->t_eta);
}

enum { V_SINGLE, V_RAID1, V_RAID5, V_TIER, V_CACHE };
enum { T_SSD = 0, T_HDD = 1, T_SPLIT = 2, T_UNMAPPED = 3 };

struct move { int64_t ext; int dest; };
struct pent { int64_t page, seq; };

struct volume {
  int kind;
  int64_t capacity;
  struct member **members;     /* Volume.members: for a tier, its SSD volume's then its HDD volume's */
  size_t nmembers;
  /* raid5 */
  int64_t n, su, row_bytes, rmw_rows, full_rows;
  /* tier */
  struct volume *tiers[2];
  int64_t extent_bytes, n_ext, ssd_slots, window_cycles, heat_max_io_bytes, max_migrations, chunk_bytes;
  double cycle_s, move_interval_s;
  int new_allocation;
  int8_t *where_tier;
  int64_t *where_slot, allocated;
  struct iring free_slots[2];
  int64_t *heat_now, *history;          /* history: window_cycles rows of n_ext, a ring */
  int64_t hist_head, hist_len;
  double next_cycle;
  struct move *plan;
  size_t plan_head, plan_len, plan_cap;
  int64_t moving;                       /* -1: None */
  double move_allowed_at, move_at;
  bool has_move_at;
  int64_t promotions, demotions, migrated_bytes, cycles, heat_ios, heat_ignored_ios;
  int64_t landed_ios[4][2], landed_bytes[4][2];
  /* cache (ctrlcache.ControllerCache) */
  struct volume *array;
  int64_t segment, size_pages, high_pages, low_pages, destage_depth, npages;
  bool write_back, battery_backed, watermark, draining;
  double c_overhead, c_link;
  int64_t *dirty;                       /* page -> the sequence number it became dirty with; 0: not dirty */
  int32_t *inflight;                    /* page -> destage writes in flight that carry it */
  int64_t ndirty, used, dseq, destaging;
  struct pent *fifo;                    /* (page, sequence) in the order pages became dirty: a growing deque */
  size_t fifo_head, fifo_len, fifo_cap;
  struct pvec blocked, cwaiters;
  struct heap events;
  uint64_t eseq;
  int64_t read_hits, write_backs, full_stalls, destages, destaged_bytes;
};

static void volume_submit (struct spindle_sim *s, struct volume *v, int64_t offset, int64_t length, bool write,
                           double t, struct cont on_done, struct cont eta);

static void cache_flush (struct spindle_sim *s, struct volume *v, double t, struct cont done, struct cont eta);

static void
volume_flush (struct spindle_sim *s, struct volume *v, double t, struct cont done, struct cont eta)
{
  if (v->kind == V_CACHE) { cache_flush (s, v, t, done, eta); return; }
  struct join *j = new_join ((int64_t) v->nmembers, done, eta);
  for (size_t i = 0; i < v->nmembers; i++)
    member_flush (s, v->members[i], t, mk (join_part, j), mk (join_part_eta, j));
}

static void
raid1_submit (struct spindle_sim *s, struct volume *v, int64_t offset, int64_t length, bool write, double t,
              struct cont on_done, struct cont eta)
{
  if (write) {
    struct join *j = new_join (2, on_done, eta);
    for (size_t i = 0; i < v->nmembers; i++)
      member_submit (s, v->members[i], new_op (offset, length, true, mk (join_part, j), mk (join_part_eta, j)), t);
    return;
  }
  struct member *target = v->members[0];
  double best = member_estimate_free (target, t, offset);
  for (size_t i = 1; i < v->nmembers; i++) {
    double e = member_estimate_free (v->members[i], t, offset);
    if (e < best) { best = e; target = v->members[i]; }
  }
  member_submit (s, target, new_op (offset, length, false, on_done, eta), t);
}

struct chunk { int64_t row, member, lba, length; };

/* Raid5.map: the chunks of [offset, offset+length) in order; rows are consecutive runs of equal .row */
static struct chunk *
raid5_map (const struct volume *v, int64_t offset, int64_t length, size_t *n)
{
  size_t cap = 8, k = 0;
  struct chunk *out = xmalloc (cap * sizeof *out);
  int64_t end = offset + length;
  while (offset < end) {
    int64_t row = offset / v->row_bytes, within = offset % v->row_bytes;
    int64_t j = within / v->su, in_unit = within % v->su;
    int64_t piece = end - offset < v->su - in_unit ? end - offset : v->su - in_unit;
    int64_t parity = v->n - 1 - (row % v->n);
    if (k == cap) { cap *= 2; out = xrealloc (out, cap * sizeof *out); }
    out[k].row = row;
    out[k].member = (parity + 1 + j) % v->n;
    out[k].lba = row * v->su + in_unit;
    out[k].length = piece;
    k++;
    offset += piece;
  }
  *n = k;
  return out;
}

struct rmw { struct volume *v; size_t nparts; struct chunk *parts; struct cont done, eta; };

static void
rmw_write_phase (struct spindle_sim *s, void *ctx, double t2)
{
  struct rmw *r = ctx;
  struct join *w = new_join ((int64_t) r->nparts, r->done, r->eta);
  for (size_t i = 0; i < r->nparts; i++) {
    struct chunk *c = &r->parts[i];
    member_submit (s, r->v->members[c->member],
                   new_op (c->lba, c->length, true, mk (join_part, w), mk (join_part_eta, w)), t2);
  }
  free (r->parts);
  free (r);
}

/* Raid5._write_row */
static void
raid5_write_row (struct spindle_sim *s, struct volume *v, int64_t row, const struct chunk *chunks, size_t nc,
                 double t, struct cont done, struct cont eta)
{
  int64_t p = v->n - 1 - (row % v->n);
  int64_t sum = 0;
  for (size_t i = 0; i < nc; i++) sum += chunks[i].length;
  if (sum == v->row_bytes) {
    v->full_rows++;
    struct join *j = new_join ((int64_t) nc + 1, done, eta);
    for (size_t i = 0; i <= nc; i++) {
      int64_t mem = i < nc ? chunks[i].member : p, lba = i < nc ? chunks[i].lba : row * v->su;
      int64_t len = i < nc ? chunks[i].length : v->su;
      member_submit (s, v->members[mem], new_op (lba, len, true, mk (join_part, j), mk (join_part_eta, j)), t);
    }
    return;
  }
  v->rmw_rows++;
  int64_t lo = chunks[0].lba, hi = chunks[0].lba + chunks[0].length;
  for (size_t i = 1; i < nc; i++) {
    if (chunks[i].lba < lo) lo = chunks[i].lba;
    if (chunks[i].lba + chunks[i].length > hi) hi = chunks[i].lba + chunks[i].length;
  }
  struct rmw *r = xmalloc (sizeof *r);
  r->v = v; r->nparts = nc + 1; r->done = done; r->eta = eta;
  r->parts = xmalloc ((nc + 1) * sizeof *r->parts);
  memcpy (r->parts, chunks, nc * sizeof *chunks);
  r->parts[nc].row = row; r->parts[nc].member = p; r->parts[nc].lba = lo; r->parts[nc].length = hi - lo;
  /* the parts to read are copied first: the read join may complete (and free r) inside the loop */
  size_t np = r->nparts;
  struct chunk *reads = xmalloc (np * sizeof *reads);
  memcpy (reads, r->parts, np * sizeof *reads);
  struct join *rj = new_join ((int64_t) np, mk (rmw_write_phase, r), NOCONT);
  for (size_t i = 0; i < np; i++)
    member_submit (s, v->members[reads[i].member], new_op (reads[i].lba, reads[i].length, false, mk (join_part, rj),
                                                          NOCONT), t);
  free (reads);
}

static void
raid5_submit (struct spindle_sim *s, struct volume *v, int64_t offset, int64_t length, bool write, double t,
              struct cont on_done, struct cont eta)
{
  size_t n;
  struct chunk *chunks = raid5_map (v, offset, length, &n);
  if (!write) {
    struct join *j = new_join ((int64_t) n, on_done, eta);
    for (size_t i = 0; i < n; i++)
      member_submit (s, v->members[chunks[i].member],
                     new_op (chunks[i].lba, chunks[i].length, false, mk (join_part, j), mk (join_part_eta, j)), t);
    free (chunks);
    return;
  }
  int64_t rows = 0;
  for (size_t i = 0; i < n; i++)
    if (i == 0 || chunks[i].row != chunks[i - 1].row) rows++;
  struct join *j = new_join (rows, on_done, eta);
  for (size_t i = 0; i < n;) {
    size_t e = i;
    while (e < n && chunks[e].row == chunks[i].row) e++;
    raid5_write_row (s, v, chunks[i].row, chunks + i, e - i, t, mk (join_part, j), mk (join_part_eta, j));
    i = e;
  }
  free (chunks);
}

/* Tier */
struct routed { int where; int64_t slot, within, n; };
struct landed { struct volume *v; int cls; bool write; size_t nr; struct routed *r; struct cont on_done; };

static void
tier_landed (struct spindle_sim *s, void *ctx, double t_done)
{
  struct landed *l = ctx;
  l->v->landed_ios[l->cls][l->write]++;
  for (size_t i = 0; i < l->nr; i++)
    l->v->landed_bytes[l->r[i].where][l->write] += l->r[i].n;
  struct cont done = l->on_done;
  free (l->r);
  free (l);
  call (s, done, t_done);
}

static int
tier_allocate (struct volume *v, int64_t ext)
{
  int first = v->new_allocation, other = first == T_HDD ? T_SSD : T_HDD;
  int tier = v->free_slots[first].len ? first : other;
  v->where_tier[ext] = (int8_t) tier;
  v->where_slot[ext] = ir_popleft (&v->free_slots[tier]);
  v->allocated++;
  return tier;
}

static void
tier_submit (struct spindle_sim *s, struct volume *v, int64_t offset, int64_t length, bool write, double t,
             struct cont on_done, struct cont eta)
{
  int64_t eb = v->extent_bytes;
  size_t cap = 4, nr = 0;
  struct routed *r = xmalloc (cap * sizeof *r);
  bool heat = length <= v->heat_max_io_bytes;
  if (heat) v->heat_ios++;
  else v->heat_ignored_ios++;
  int64_t end = offset + length;
  while (offset < end) {
    int64_t ext = offset / eb, within = offset % eb;
    int64_t n = end - offset < eb - within ? end - offset : eb - within;
    if (heat) v->heat_now[ext]++;
    int where = v->where_tier[ext] >= 0 ? v->where_tier[ext] : -1;
    if (where < 0 && write) where = tier_allocate (v, ext);
    if (nr == cap) { cap *= 2; r = xrealloc (r, cap * sizeof *r); }
    r[nr].where = where < 0 ? T_UNMAPPED : where;
    r[nr].slot = where < 0 ? -1 : v->where_slot[ext];
    r[nr].within = within;
    r[nr].n = n;
    nr++;
    offset += n;
  }
  int cls = nr ? r[0].where : T_SPLIT;
  for (size_t i = 1; i < nr; i++)
    if (r[i].where != cls) { cls = T_SPLIT; break; }
  struct landed *l = xmalloc (sizeof *l);
  l->v = v; l->cls = cls; l->write = write; l->nr = nr; l->on_done = on_done;
  l->r = xmalloc (nr * sizeof *l->r);
  memcpy (l->r, r, nr * sizeof *r);
  struct join *j = new_join ((int64_t) nr, mk (tier_landed, l), eta);
  for (size_t i = 0; i < nr; i++) {
    if (r[i].where == T_UNMAPPED) {
      join_part_eta (s, j, t);
      join_part (s, j, t);
    }
    else
      volume_submit (s, v->tiers[r[i].where], r[i].slot * eb + r[i].within, r[i].n, write, t, mk (join_part, j),
                     mk (join_part_eta, j));
  }
  free (r);
}

static void tier_next_move (struct spindle_sim *s, struct volume *v, double t);

struct copy { struct volume *v; int64_t ext, src_slot, dst_slot, next_off, off; int src_tier, dest; };

static void copy_next (struct spindle_sim *s, void *ctx, double t1);

static void
copy_read_done (struct spindle_sim *s, void *ctx, double t2)
{
  struct copy *c = ctx;
  volume_submit (s, c->v->tiers[c->dest], c->dst_slot * c->v->extent_bytes + c->off, c->v->chunk_bytes, true, t2,
                 mk (copy_next, c), NOCONT);
}

static void
copy_next (struct spindle_sim *s, void *ctx, double t1)
{
  struct copy *c = ctx;
  struct volume *v = c->v;
  if (c->next_off >= v->extent_bytes) {
    v->where_tier[c->ext] = (int8_t) c->dest;
    v->where_slot[c->ext] = c->dst_slot;
    ir_push (&v->free_slots[c->src_tier], c->src_slot);
    v->migrated_bytes += v->extent_bytes;
    if (c->dest == T_SSD) v->promotions++;
    else v->demotions++;
    v->moving = -1;
    free (c);
    tier_next_move (s, v, t1);
    return;
  }
  c->off = c->next_off;
  c->next_off += v->chunk_bytes;
  volume_submit (s, v->tiers[c->src_tier], c->src_slot * v->extent_bytes + c->off, v->chunk_bytes, false, t1,
                 mk (copy_read_done, c), NOCONT);
}

/* Tier._next_move */
static void
tier_next_move (struct spindle_sim *s, struct volume *v, double t)
{
  for (;;) {
    if (v->moving >= 0 || v->plan_len == 0 || v->has_move_at) return;
    if (t < v->move_allowed_at) {
      v->move_at = v->move_allowed_at;
      v->has_move_at = true;
      return;
    }
    struct move mv = v->plan[v->plan_head++];
    if (--v->plan_len == 0) v->plan_head = 0;
    int src_tier = v->where_tier[mv.ext];
    int64_t src_slot = v->where_slot[mv.ext];
    if (src_tier == mv.dest || v->free_slots[mv.dest].len == 0)
      continue;     /* Python recurses: the same as trying the next planned move */
    struct copy *c = xcalloc (1, sizeof *c);
    c->v = v; c->ext = mv.ext; c->src_tier = src_tier; c->src_slot = src_slot; c->dest = mv.dest;
    c->dst_slot = ir_popleft (&v->free_slots[mv.dest]);
    v->moving = mv.ext;
    v->move_allowed_at = t + v->move_interval_s;
    c->next_off = 0;
    copy_next (s, c, t);
    return;
  }
}

static void
plan_push (struct volume *v, int64_t ext, int dest)
{
  if (v->plan_head + v->plan_len == v->plan_cap) {
    if (v->plan_head > 0) {
      memmove (v->plan, v->plan + v->plan_head, v->plan_len * sizeof *v->plan);
      v->plan_head = 0;
    }
    if (v->plan_len == v->plan_cap) {
      v->plan_cap = v->plan_cap ? 2 * v->plan_cap : 64;
      v->plan = xrealloc (v->plan, v->plan_cap * sizeof *v->plan);
    }
  }
  v->plan[v->plan_head + v->plan_len].ext = ext;
  v->plan[v->plan_head + v->plan_len].dest = dest;
  v->plan_len++;
}

static const int64_t *sort_heat;   /* qsort has no context argument: the heat array being sorted by */

static int
by_heat_desc (const void *a, const void *b)
{
  int64_t x = *(const int64_t *) a, y = *(const int64_t *) b;
  if (sort_heat[x] != sort_heat[y]) return sort_heat[x] > sort_heat[y] ? -1 : 1;
  return x < y ? -1 : x > y;
}

static int
by_heat_asc (const void *a, const void *b)
{
  int64_t x = *(const int64_t *) a, y = *(const int64_t *) b;
  if (sort_heat[x] != sort_heat[y]) return sort_heat[x] < sort_heat[y] ? -1 : 1;
  return x < y ? -1 : x > y;
}

/* Tier.plan_migrations (the simulator is serialised by its caller, so the static sort key is safe) */
static void
tier_plan (struct volume *v, const int64_t *heat)
{
  if (v->plan_len || v->moving >= 0) return;
  int64_t *on_hdd = xmalloc (v->n_ext * sizeof *on_hdd), *on_ssd = xmalloc (v->n_ext * sizeof *on_ssd);
  size_t nh = 0, ns = 0;
  for (int64_t e = 0; e < v->n_ext; e++) {
    if (v->where_tier[e] == T_HDD && heat[e] > 0) on_hdd[nh++] = e;
    else if (v->where_tier[e] == T_SSD) on_ssd[ns++] = e;
  }
  sort_heat = heat;
  qsort (on_hdd, nh, sizeof *on_hdd, by_heat_desc);
  qsort (on_ssd, ns, sizeof *on_ssd, by_heat_asc);
  int64_t free_ssd = (int64_t) v->free_slots[T_SSD].len;
  double budget = v->max_migrations < 0 ? INFINITY : (double) v->max_migrations;
  size_t cold_i = 0;
  for (size_t i = 0; i < nh; i++) {
    int64_t e = on_hdd[i];
    if (budget <= 0) break;
    if (free_ssd > 0) {
      plan_push (v, e, T_SSD);
      free_ssd--;
      budget -= 1;
    }
    else if (cold_i < ns && heat[on_ssd[cold_i]] < heat[e] && budget >= 2) {
      int64_t cold = on_ssd[cold_i++];
      plan_push (v, cold, T_HDD);
      plan_push (v, e, T_SSD);
      budget -= 2;
    }
    else
      break;
  }
  free (on_hdd);
  free (on_ssd);
}

static void
tier_fire (struct spindle_sim *s, struct volume *v, double t)
{
  if (v->has_move_at && v->move_at <= v->next_cycle) {
    v->has_move_at = false;
    tier_next_move (s, v, t);
    return;
  }
  v->cycles++;
  v->next_cycle = t + v->cycle_s;
  /* history.append(heat_now) into a ring of window_cycles rows */
  int64_t slot;
  if (v->hist_len < v->window_cycles) slot = (v->hist_head + v->hist_len++) % v->window_cycles;
  else { slot = v->hist_head; v->hist_head = (v->hist_head + 1) % v->window_cycles; }
  memcpy (v->history + slot * v->n_ext, v->heat_now, v->n_ext * sizeof *v->heat_now);
  memset (v->heat_now, 0, v->n_ext * sizeof *v->heat_now);
  int64_t *heat = xcalloc (v->n_ext, sizeof *heat);
  for (int64_t h = 0; h < v->hist_len; h++) {
    const int64_t *row = v->history + ((v->hist_head + h) % v->window_cycles) * v->n_ext;
    for (int64_t e = 0; e < v->n_ext; e++) heat[e] += row[e];
  }
  tier_plan (v, heat);
  free (heat);
  tier_next_move (s, v, t);
}

/* ------------------------------------------------------------------ controller cache (ctrlcache.py) */

#define PAGE 4096

struct pwrite { int64_t offset, length; struct cont done, eta; };

static inline int64_t page_lo (int64_t offset) { return offset / PAGE; }
static inline int64_t page_hi (int64_t offset, int64_t length) { return (offset + length - 1) / PAGE; }

/* ControllerCache._schedule */
static void
cache_schedule (struct spindle_sim *s, struct volume *v, double t, struct cont done, struct cont eta)
{
  call (s, eta, t);
  v->eseq++;
  struct cont *c = xmalloc (sizeof *c);
  *c = done;
  heap_push (&v->events, t, v->eseq, c);
}

static bool
cache_fits (const struct volume *v, int64_t offset, int64_t length)
{
  int64_t fresh = 0;
  for (int64_t p = page_lo (offset); p <= page_hi (offset, length); p++)
    if (v->dirty[p] == 0) fresh++;
  return v->used + fresh <= v->size_pages;
}

static void
fifo_push (struct volume *v, int64_t page, int64_t seq)
{
  if (v->fifo_head + v->fifo_len == v->fifo_cap) {
    if (v->fifo_head > 0) {
      memmove (v->fifo, v->fifo + v->fifo_head, v->fifo_len * sizeof *v->fifo);
      v->fifo_head = 0;
    }
    if (v->fifo_len == v->fifo_cap) {
      v->fifo_cap = v->fifo_cap ? 2 * v->fifo_cap : 256;
      v->fifo = xrealloc (v->fifo, v->fifo_cap * sizeof *v->fifo);
    }
  }
  v->fifo[v->fifo_head + v->fifo_len].page = page;
  v->fifo[v->fifo_head + v->fifo_len].seq = seq;
  v->fifo_len++;
}

/* ControllerCache._accept */
static void
cache_accept (struct spindle_sim *s, struct volume *v, int64_t offset, int64_t length, double t, struct cont done,
              struct cont eta)
{
  for (int64_t p = page_lo (offset); p <= page_hi (offset, length); p++)
    if (v->dirty[p] == 0) {
      v->dseq++;
      v->dirty[p] = v->dseq;
      v->ndirty++;
      fifo_push (v, p, v->dseq);
      v->used++;
    }
  v->write_backs++;
  if (v->watermark && v->used >= v->high_pages) v->draining = true;
  cache_schedule (s, v, t + v->c_overhead + (double) length / v->c_link, done, eta);
}

static void cache_destage_more (struct spindle_sim *s, struct volume *v, double t);

/* ControllerCache.submit */
static void
cache_submit (struct spindle_sim *s, struct volume *v, int64_t offset, int64_t length, bool write, double t,
              struct cont on_done, struct cont eta)
{
  int64_t lo = page_lo (offset), hi = page_hi (offset, length);
  if (!write) {
    bool hit = true;
    for (int64_t p = lo; p <= hi && hit; p++) hit = v->dirty[p] != 0 || v->inflight[p] > 0;
    if (hit) {
      v->read_hits++;
      cache_schedule (s, v, t + v->c_overhead + (double) length / v->c_link, on_done, eta);
    }
    else
      volume_submit (s, v->array, offset, length, false, t, on_done, eta);
    return;
  }
  if (!v->write_back || hi - lo + 1 > v->size_pages) {
    volume_submit (s, v->array, offset, length, true, t, on_done, eta);
    return;
  }
  if (v->blocked.len || !cache_fits (v, offset, length)) {
    v->full_stalls++;
    struct pwrite *w = xmalloc (sizeof *w);
    w->offset = offset; w->length = length; w->done = on_done; w->eta = eta;
    pv_push (&v->blocked, w);
  }
  else
    cache_accept (s, v, offset, length, t, on_done, eta);
  cache_destage_more (s, v, t);
}

/* ControllerCache.flush */
static void
cache_flush (struct spindle_sim *s, struct volume *v, double t, struct cont done, struct cont eta)
{
  if (!v->write_back)
    volume_flush (s, v->array, t, done, eta);
  else if (v->battery_backed)
    cache_schedule (s, v, t + v->c_overhead, done, eta);
  else if (v->ndirty == 0 && v->destaging == 0)
    volume_flush (s, v->array, t, done, eta);
  else {
    struct waiter *w = xmalloc (sizeof *w);
    w->done = done; w->eta = eta;
    pv_push (&v->cwaiters, w);
    cache_destage_more (s, v, t);
  }
}

static bool
cache_want (const struct volume *v)
{
  return !v->watermark || v->draining || v->blocked.len > 0 || v->cwaiters.len > 0;
}

struct destage { struct volume *v; int64_t lo_p, hi_p; };

/* ControllerCache._destaged's closure */
static void
cache_destaged (struct spindle_sim *s, void *ctx, double t)
{
  struct destage *d = ctx;
  struct volume *v = d->v;
  for (int64_t p = d->lo_p; p <= d->hi_p; p++) v->inflight[p]--;
  v->used -= d->hi_p - d->lo_p + 1;
  free (d);
  v->destaging--;
  if (v->watermark && v->used <= v->low_pages) v->draining = false;
  while (v->blocked.len) {
    struct pwrite *w = pv_get (&v->blocked, 0);
    if (!cache_fits (v, w->offset, w->length)) break;
    pv_popleft (&v->blocked);
    cache_accept (s, v, w->offset, w->length, t, w->done, w->eta);
    free (w);
  }
  if (v->cwaiters.len && v->ndirty == 0 && v->destaging == 0) {
    struct pvec waiters = v->cwaiters;
    memset (&v->cwaiters, 0, sizeof v->cwaiters);
    for (size_t i = 0; i < waiters.len; i++) {
      struct waiter *w = pv_get (&waiters, i);
      volume_flush (s, v->array, t, w->done, w->eta);
      free (w);
    }
    pv_free (&waiters);
  }
  cache_destage_more (s, v, t);
}

/* ControllerCache._destage_one */
static void
cache_destage_one (struct spindle_sim *s, struct volume *v, double t)
{
  int64_t page;
  for (;;) {
    struct pent e = v->fifo[v->fifo_head++];
    if (--v->fifo_len == 0) v->fifo_head = 0;
    if (v->dirty[e.page] == e.seq) { page = e.page; break; }
  }
  int64_t first = page * PAGE / v->segment * v->segment / PAGE;
  int64_t end_b = first * PAGE + v->segment < v->capacity ? first * PAGE + v->segment : v->capacity;
  int64_t last = (end_b - 1) / PAGE;
  int64_t lo_p = page, hi_p = page;
  while (lo_p > first && v->dirty[lo_p - 1] != 0) lo_p--;
  while (hi_p < last && v->dirty[hi_p + 1] != 0) hi_p++;
  for (int64_t p = lo_p; p <= hi_p; p++) {
    v->dirty[p] = 0;
    v->ndirty--;
    v->inflight[p]++;
  }
  int64_t lo = lo_p * PAGE, hi = (hi_p + 1) * PAGE < v->capacity ? (hi_p + 1) * PAGE : v->capacity;
  v->destaging++;
  v->destages++;
  v->destaged_bytes += hi - lo;
  struct destage *d = xmalloc (sizeof *d);
  d->v = v; d->lo_p = lo_p; d->hi_p = hi_p;
  volume_submit (s, v->array, lo, hi - lo, true, t, mk (cache_destaged, d), NOCONT);
}

static void
cache_destage_more (struct spindle_sim *s, struct volume *v, double t)
{
  while (v->destaging < v->destage_depth && v->ndirty > 0 && cache_want (v))
    cache_destage_one (s, v, t);
}

static void
cache_fire (struct spindle_sim *s, struct volume *v, double t)
{
  struct hent e = heap_pop (&v->events);
  struct cont *c = e.p;
  struct cont done = *c;
  free (c);
  call (s, done, t);
}

static void
volume_submit (struct spindle_sim *s, struct volume *v, int64_t offset, int64_t length, bool write, double t,
               struct cont on_done, struct cont eta)
{
  switch (v->kind) {
  case V_SINGLE: member_submit (s, v->members[0], new_op (offset, length, write, on_done, eta), t); break;
  case V_RAID1: raid1_submit (s, v, offset, length, write, t, on_done, eta); break;
  case V_RAID5: raid5_submit (s, v, offset, length, write, t, on_done, eta); break;
  case V_CACHE: cache_submit (s, v, offset, length, write, t, on_done, eta); break;
  default: tier_submit (s, v, offset, length, write, t, on_done, eta);
  }
}

static bool
volume_next_time (const struct volume *v, double *out)
{
  if (v->kind == V_CACHE) {
    if (!v->events.len) return false;
    *out = v->events.v[0].t;
    return true;
  }
  if (v->kind != V_TIER) return false;
  *out = v->has_move_at ? pymin (v->next_cycle, v->move_at) : v->next_cycle;
  return true;
}

static void
volume_fire (struct spindle_sim *s, struct volume *v, double t)
{
  if (v->kind == V_CACHE) cache_fire (s, v, t);
  else tier_fire (s, v, t);
}

/* ------------------------------------------------------------------ the simulator (arrays.Simulator) */

struct evec { struct spindle_event *v; size_t head, len, cap; };

static void
ev_push (struct evec *q, uint64_t token, double t, int sleep)
{
  if (q->head + q->len == q->cap) {
    if (q->head > 0) {
      memmove (q->v, q->v + q->head, q->len * sizeof *q->v);
      q->head = 0;
    }
    if (q->len == q->cap) {
      q->cap = q->cap ? 2 * q->cap : 64;
      q->v = xrealloc (q->v, q->cap * sizeof *q->v);
    }
  }
  struct spindle_event e = { token, t, sleep };
  q->v[q->head + q->len++] = e;
}

struct spindle_sim {
  char *name;
  int64_t capacity;
  struct volume *root;
  struct member *members;
  size_t nmembers;
  struct volume *volumes;
  size_t nvolumes;
  struct counters array;
  double now, latency_sum_s;
  struct evec done, etas;
};

struct host { uint64_t token; int kind; int64_t length; double t; };

static void
host_complete (struct spindle_sim *s, void *ctx, double t_done)
{
  struct host *h = ctx;
  qd_change (&s->array, t_done, -1);
  if (h->kind != SPINDLE_FLUSH) count_done (&s->array, h->kind == SPINDLE_WRITE, h->length);
  s->latency_sum_s += t_done - h->t;
  ev_push (&s->done, h->token, t_done, 0);
  free (h);
}

static void
host_eta (struct spindle_sim *s, void *ctx, double t_done)
{
  struct host *h = ctx;
  ev_push (&s->etas, h->token, t_done, 0);
}

static void
host_flush_eta (struct spindle_sim *s, void *ctx, double t_done)
{
  struct host *h = ctx;
  if (t_done > s->now) ev_push (&s->etas, h->token, t_done, 1);
}

int
spindle_sim_submit (struct spindle_sim *s, uint64_t token, int kind, int64_t offset, int64_t length, double t,
                    char *err, size_t errlen)
{
  if (kind != SPINDLE_FLUSH && (offset < 0 || length <= 0 || offset > s->capacity - length)) {
    if (err) snprintf (err, errlen, "%s offset=%" PRId64 " length=%" PRId64 ": outside the device (%" PRId64 " bytes)",
                       kind == SPINDLE_WRITE ? "write" : "read", offset, length, s->capacity);
    return -1;
  }
  if (kind != SPINDLE_READ && kind != SPINDLE_WRITE && kind != SPINDLE_FLUSH) {
    if (err) snprintf (err, errlen, "unknown command kind %d", kind);
    return -1;
  }
  s->now = pymax (s->now, t);
  qd_change (&s->array, t, +1);
  struct host *h = xmalloc (sizeof *h);
  h->token = token; h->kind = kind; h->length = length; h->t = t;
  if (kind == SPINDLE_FLUSH)
    volume_flush (s, s->root, t, mk (host_complete, h), mk (host_flush_eta, h));
  else
    volume_submit (s, s->root, offset, length, kind == SPINDLE_WRITE, t, mk (host_complete, h), mk (host_eta, h));
  return 0;
}

void
spindle_sim_advance (struct spindle_sim *s, double until)
{
  for (;;) {
    double best_t = INFINITY, nt;
    struct member *bm = NULL;
    struct volume *bv = NULL;
    for (size_t i = 0; i < s->nmembers; i++)
      if (member_next_time (&s->members[i], &nt) && nt < best_t) { best_t = nt; bm = &s->members[i]; bv = NULL; }
    for (size_t i = 0; i < s->nvolumes; i++)
      if (volume_next_time (&s->volumes[i], &nt) && nt < best_t) { best_t = nt; bv = &s->volumes[i]; bm = NULL; }
    if ((!bm && !bv) || best_t > until) break;
    s->now = pymax (s->now, best_t);
    if (bm) member_fire (s, bm, best_t);
    else volume_fire (s, bv, best_t);
  }
  s->now = pymax (s->now, until);
}

double
spindle_sim_next_event_time (const struct spindle_sim *s)
{
  return spindle_sim_next_free_time (s, NULL, 0);
}

double
spindle_sim_next_free_time (const struct spindle_sim *s, const double *owned, size_t n)
{
  double best = INFINITY, nt;
  for (size_t i = 0; i < s->nmembers + s->nvolumes; i++) {
    bool any = i < s->nmembers ? member_next_time (&s->members[i], &nt)
                               : volume_next_time (&s->volumes[i - s->nmembers], &nt);
    if (!any || nt >= best) continue;
    bool mine = false;
    for (size_t j = 0; j < n && !mine; j++) mine = owned[j] == nt;
    if (!mine) best = nt;
  }
  return best;
}

int spindle_sim_has_event (const struct spindle_sim *s) { return isfinite (spindle_sim_next_event_time (s)); }
double spindle_sim_now (const struct spindle_sim *s) { return s->now; }
int64_t spindle_sim_capacity (const struct spindle_sim *s) { return s->capacity; }
void spindle_free (void *p) { free (p); }

static size_t
take (struct evec *q, struct spindle_event *out, size_t max)
{
  size_t n = q->len < max ? q->len : max;
  memcpy (out, q->v + q->head, n * sizeof *out);
  q->head += n;
  q->len -= n;
  if (q->len == 0) q->head = 0;
  return n;
}

size_t spindle_sim_take_done (struct spindle_sim *s, struct spindle_event *out, size_t max) { return take (&s->done, out, max); }
size_t spindle_sim_take_etas (struct spindle_sim *s, struct spindle_event *out, size_t max) { return take (&s->etas, out, max); }

static size_t
take_arrays (struct evec *q, uint64_t *tokens, double *times, size_t max)
{
  size_t n = 0;
  struct spindle_event e;
  while (n < max && take (q, &e, 1)) { tokens[n] = e.token; times[n] = e.t; n++; }
  return n;
}

size_t spindle_sim_take_done_arrays (struct spindle_sim *s, uint64_t *tk, double *t, size_t max) { return take_arrays (&s->done, tk, t, max); }
size_t spindle_sim_take_etas_arrays (struct spindle_sim *s, uint64_t *tk, double *t, size_t max) { return take_arrays (&s->etas, tk, t, max); }

/* ------------------------------------------------------------------ counters as JSON (Simulator.counters) */

/* Python's round(x, n) prints as the correctly rounded decimal; so does glibc's %.nf (no exact decimal ties
 * exist at n >= 1 for binary doubles) */
static void
counters_common (struct sb *b, const struct counters *c, double t, bool member)
{
  double integral = c->qd_integral + (double) c->queue_depth * pymax (0.0, t - c->t_last);
  sb_printf (b, "{\"name\": ");
  sb_str (b, c->name);
  sb_printf (b, ", \"reads\": %" PRId64 ", \"writes\": %" PRId64 ", \"bytes_read\": %" PRId64
             ", \"bytes_written\": %" PRId64, c->reads, c->writes, c->bytes_read, c->bytes_written);
  if (member)
    sb_printf (b, ", \"busy_s\": %.6f, \"utilization\": %.4f", c->busy_s, t > 0 ? c->busy_s / t : 0.0);
  sb_printf (b, ", \"queue_depth\": %" PRId64 ", \"queue_depth_max\": %" PRId64 ", \"queue_depth_mean\": %.4f",
             c->queue_depth, c->queue_depth_max, t > 0 ? integral / t : 0.0);
  if (member) {
    int64_t seeks = 0;
    sb_printf (b, ", \"seek_hist_log2_cyl\": [");
    for (int i = 0; i < SEEK_BINS; i++) {
      sb_printf (b, "%s%" PRId64, i ? ", " : "", c->seek_hist[i]);
      seeks += c->seek_hist[i];
    }
    sb_printf (b, "], \"seek_cyl_mean\": %.2f, \"cache_hits\": %" PRId64 "}",
               c->seek_cyl_total / (double) (seeks > 1 ? seeks : 1), c->cache_hits);
  }
}

static const char *TIER_NAMES[] = { "ssd", "hdd", "split", "unmapped" };

char *
spindle_sim_counters_json (const struct spindle_sim *s, int with_close)
{
  struct sb b = { 0 };
  double t = s->now;
  int64_t ios = s->array.reads + s->array.writes;
  sb_printf (&b, "{\"time_s\": %.6f, \"array\": ", t);
  counters_common (&b, &s->array, t, false);
  sb_printf (&b, ", \"latency_mean_ms\": %.4f, \"latency_s_sum\": %.6f",
             ios ? s->latency_sum_s / (double) ios * 1e3 : 0.0, s->latency_sum_s);
  /* volumes' extras in Simulator.volumes order; a later volume's key replaces an earlier one's value in place
   * (dict.update), which only a RAID5 under both tiers of a pool would exercise: its last rows are kept */
  const struct volume *last_raid5 = NULL, *last_cache = NULL;
  for (size_t i = 0; i < s->nvolumes; i++) {
    if (s->volumes[i].kind == V_RAID5) last_raid5 = &s->volumes[i];
    if (s->volumes[i].kind == V_CACHE) last_cache = &s->volumes[i];
  }
  bool raid5_done = false, cache_done = false;
  for (size_t i = 0; i < s->nvolumes; i++) {
    const struct volume *v = &s->volumes[i];
    if (v->kind == V_RAID5 && !raid5_done) {
      sb_printf (&b, ", \"rmw_rows\": %" PRId64 ", \"full_stripe_rows\": %" PRId64, last_raid5->rmw_rows,
                 last_raid5->full_rows);
      raid5_done = true;
    }
    else if (v->kind == V_CACHE && !cache_done) {
      const struct volume *c = last_cache;
      sb_printf (&b, ", \"cache_read_hits\": %" PRId64 ", \"cache_write_backs\": %" PRId64
                 ", \"cache_full_stalls\": %" PRId64 ", \"cache_destages\": %" PRId64
                 ", \"cache_destaged_bytes\": %" PRId64 ", \"cache_used_bytes\": %" PRId64,
                 c->read_hits, c->write_backs, c->full_stalls, c->destages, c->destaged_bytes, c->used * PAGE);
      cache_done = true;
    }
    else if (v->kind == V_TIER) {
      int64_t on_ssd = 0;
      for (int64_t e = 0; e < v->n_ext; e++) on_ssd += v->where_tier[e] == T_SSD;
      sb_printf (&b, ", \"extents\": %" PRId64 ", \"ssd_slots\": %" PRId64 ", \"extents_allocated\": %" PRId64
                 ", \"extents_on_ssd\": %" PRId64 ", \"promotions\": %" PRId64 ", \"demotions\": %" PRId64
                 ", \"migrated_bytes\": %" PRId64 ", \"tier_cycles\": %" PRId64 ", \"migration_running\": %s"
                 ", \"migrations_planned\": %zu, \"heat_ios\": %" PRId64 ", \"heat_ignored_ios\": %" PRId64,
                 v->n_ext, v->ssd_slots, v->allocated, on_ssd, v->promotions, v->demotions, v->migrated_bytes,
                 v->cycles, v->moving >= 0 ? "true" : "false", v->plan_len, v->heat_ios, v->heat_ignored_ios);
      for (int c = 0; c < 3; c++)
        sb_printf (&b, ", \"%s_reads\": %" PRId64 ", \"%s_writes\": %" PRId64, TIER_NAMES[c],
                   v->landed_ios[c][0], TIER_NAMES[c], v->landed_ios[c][1]);
      sb_printf (&b, ", \"unmapped_reads\": %" PRId64, v->landed_ios[T_UNMAPPED][0]);
      for (int c = 0; c < 2; c++)
        sb_printf (&b, ", \"%s_bytes_read\": %" PRId64 ", \"%s_bytes_written\": %" PRId64, TIER_NAMES[c],
                   v->landed_bytes[c][0], TIER_NAMES[c], v->landed_bytes[c][1]);
      sb_printf (&b, ", \"unmapped_bytes_read\": %" PRId64, v->landed_bytes[T_UNMAPPED][0]);
    }
  }
  sb_printf (&b, "}, \"members\": [");
  for (size_t i = 0; i < s->nmembers; i++) {
    if (i) sb_printf (&b, ", ");
    counters_common (&b, &s->members[i].c, t, true);
  }
  sb_printf (&b, "]%s", with_close ? "}" : "");
  return b.s;
}

/* ------------------------------------------------------------------ building from the flat spec (cspec.py) */

struct kv { char **k, **v; size_t n; };

static const char *
kv_get (const struct kv *kv, const char *key)
{
  for (size_t i = 0; i < kv->n; i++)
    if (strcmp (kv->k[i], key) == 0) return kv->v[i];
  return NULL;
}

struct build { const struct kv *kv; char *err; size_t errlen; bool failed; };

static const char *
need (struct build *b, const char *fmt, ...)
{
  char key[256];
  va_list ap;
  va_start (ap, fmt);
  vsnprintf (key, sizeof key, fmt, ap);
  va_end (ap);
  const char *v = kv_get (b->kv, key);
  if (!v && !b->failed) {
    snprintf (b->err, b->errlen, "spindle spec: missing key %s", key);
    b->failed = true;
  }
  return v ? v : "0";
}

#define NEED_F(b, ...) strtod (need ((b), __VA_ARGS__), NULL)
#define NEED_I(b, ...) strtoll (need ((b), __VA_ARGS__), NULL, 10)

static void
build_curve (struct build *b, struct curve *c, int i, const char *which)
{
  c->a = NEED_F (b, "m%d.%s.a", i, which);
  c->b = NEED_F (b, "m%d.%s.b", i, which);
  c->c = NEED_F (b, "m%d.%s.c", i, which);
  c->e = NEED_F (b, "m%d.%s.e", i, which);
  c->d_b = NEED_F (b, "m%d.%s.d_b", i, which);
}

static void
build_member (struct build *b, struct member *m, int i)
{
  const char *kind = need (b, "m%d.kind", i);
  m->c.name = strdup (need (b, "m%d.name", i));
  if (strcmp (kind, "disk") == 0) {
    m->kind = M_DISK;
    m->k = NEED_F (b, "m%d.k", i);
    m->rho_bar = NEED_F (b, "m%d.rho_bar", i);
    m->used = NEED_F (b, "m%d.used", i);
    m->t_rev = NEED_F (b, "m%d.t_rev", i);
    m->revs = NEED_F (b, "m%d.revs", i);
    m->cylinders = NEED_F (b, "m%d.cylinders", i);
    build_curve (b, &m->sr, i, "seek_r");
    build_curve (b, &m->sw, i, "seek_w");
    m->queued_cmd_s = NEED_F (b, "m%d.queued_cmd_s", i);
    m->overhead = NEED_F (b, "m%d.overhead", i);
    m->iface = NEED_F (b, "m%d.iface", i);
    m->starvation_ms = NEED_F (b, "m%d.starvation_ms", i);
    m->queue_depth = NEED_I (b, "m%d.queue_depth", i);
    m->write_cache = NEED_I (b, "m%d.write_cache", i) != 0;
    m->write_cache_bytes = NEED_I (b, "m%d.write_cache_bytes", i);
    m->readahead_bytes = NEED_I (b, "m%d.readahead_bytes", i);
    const char *sched = need (b, "m%d.scheduler", i);
    m->scheduler = strcmp (sched, "fifo") == 0 ? SCHED_FIFO : strcmp (sched, "clook") == 0 ? SCHED_CLOOK : SCHED_SPTF;
    m->ra_start = -1.0;
    m->ra_frozen = true;
  }
  else if (strcmp (kind, "ssd") == 0) {
    m->kind = M_SSD;
    m->read_us = NEED_F (b, "m%d.read_us", i);
    m->write_us = NEED_F (b, "m%d.write_us", i);
    m->read_mb_s = NEED_F (b, "m%d.read_mb_s", i);
    m->write_mb_s = NEED_F (b, "m%d.write_mb_s", i);
    m->channels = NEED_I (b, "m%d.channels", i);
  }
  else if (strcmp (kind, "zero") == 0)
    m->kind = M_ZERO;
  else if (!b->failed) {
    snprintf (b->err, b->errlen, "spindle spec: m%d.kind %s is not disk, ssd or zero", i, kind);
    b->failed = true;
  }
}

static struct member **
member_list (struct build *b, struct spindle_sim *s, int j, size_t *n)
{
  const char *list = need (b, "v%d.members", j);
  size_t cap = 8;
  struct member **out = xmalloc (cap * sizeof *out);
  *n = 0;
  for (const char *p = list; *p;) {
    char *end;
    long i = strtol (p, &end, 10);
    if (end == p || i < 0 || (size_t) i >= s->nmembers) {
      if (!b->failed) snprintf (b->err, b->errlen, "spindle spec: v%d.members: bad list %s", j, list);
      b->failed = true;
      break;
    }
    if (*n == cap) { cap *= 2; out = xrealloc (out, cap * sizeof *out); }
    out[(*n)++] = &s->members[i];
    p = *end == ',' ? end + 1 : end;
  }
  return out;
}

static void
build_volume (struct build *b, struct spindle_sim *s, int j)
{
  struct volume *v = &s->volumes[j];
  const char *kind = need (b, "v%d.kind", j);
  v->capacity = NEED_I (b, "v%d.capacity", j);
  v->members = member_list (b, s, j, &v->nmembers);
  v->moving = -1;
  if (strcmp (kind, "single") == 0) v->kind = V_SINGLE;
  else if (strcmp (kind, "raid1") == 0) v->kind = V_RAID1;
  else if (strcmp (kind, "raid5") == 0) {
    v->kind = V_RAID5;
    v->n = NEED_I (b, "v%d.n", j);
    v->su = NEED_I (b, "v%d.su", j);
    v->row_bytes = NEED_I (b, "v%d.row_bytes", j);
  }
  else if (strcmp (kind, "cache") == 0) {
    v->kind = V_CACHE;
    int64_t a = NEED_I (b, "v%d.array", j);
    if (a <= j || (size_t) a >= s->nvolumes) {
      if (!b->failed) snprintf (b->err, b->errlen, "spindle spec: v%d: bad cache array volume", j);
      b->failed = true;
      return;
    }
    v->array = &s->volumes[a];
    v->segment = NEED_I (b, "v%d.segment", j);
    v->size_pages = NEED_I (b, "v%d.size_pages", j);
    v->high_pages = NEED_I (b, "v%d.high_pages", j);
    v->low_pages = NEED_I (b, "v%d.low_pages", j);
    v->write_back = NEED_I (b, "v%d.write_back", j) != 0;
    v->battery_backed = NEED_I (b, "v%d.battery_backed", j) != 0;
    v->watermark = NEED_I (b, "v%d.watermark", j) != 0;
    v->destage_depth = NEED_I (b, "v%d.destage_depth", j);
    v->c_overhead = NEED_F (b, "v%d.overhead", j);
    v->c_link = NEED_F (b, "v%d.link", j);
    if (b->failed) return;
    if (v->capacity <= 0 || v->segment <= 0 || v->segment % PAGE || v->size_pages <= 0 || v->destage_depth <= 0) {
      snprintf (b->err, b->errlen, "spindle spec: v%d: cache sizes must be positive (segment in 4 KiB pages)", j);
      b->failed = true;
      return;
    }
    v->npages = (v->capacity + PAGE - 1) / PAGE;
    v->dirty = xcalloc (v->npages, sizeof *v->dirty);
    v->inflight = xcalloc (v->npages, sizeof *v->inflight);
  }
  else if (strcmp (kind, "tier") == 0) {
    v->kind = V_TIER;
    int64_t ssd = NEED_I (b, "v%d.ssd", j), hdd = NEED_I (b, "v%d.hdd", j);
    if (ssd <= j || hdd <= j || (size_t) ssd >= s->nvolumes || (size_t) hdd >= s->nvolumes) {
      if (!b->failed) snprintf (b->err, b->errlen, "spindle spec: v%d: bad tier volumes", j);
      b->failed = true;
      return;
    }
    v->tiers[T_SSD] = &s->volumes[ssd];
    v->tiers[T_HDD] = &s->volumes[hdd];
    v->extent_bytes = NEED_I (b, "v%d.extent_bytes", j);
    v->n_ext = NEED_I (b, "v%d.n_ext", j);
    v->ssd_slots = NEED_I (b, "v%d.ssd_slots", j);
    v->cycle_s = NEED_F (b, "v%d.cycle_s", j);
    v->window_cycles = NEED_I (b, "v%d.window_cycles", j);
    v->heat_max_io_bytes = NEED_I (b, "v%d.heat_max_io_bytes", j);
    v->move_interval_s = NEED_F (b, "v%d.move_interval_s", j);
    v->max_migrations = NEED_I (b, "v%d.max_migrations", j);
    v->chunk_bytes = NEED_I (b, "v%d.migration_chunk_bytes", j);
    v->new_allocation = strcmp (need (b, "v%d.new_allocation", j), "ssd") == 0 ? T_SSD : T_HDD;
    if (b->failed) return;
    if (v->n_ext <= 0 || v->ssd_slots <= 0 || v->window_cycles <= 0 || v->extent_bytes <= 0 || v->chunk_bytes <= 0) {
      snprintf (b->err, b->errlen, "spindle spec: v%d: tier sizes must be positive", j);
      b->failed = true;
      return;
    }
    v->where_tier = xmalloc (v->n_ext);
    memset (v->where_tier, -1, v->n_ext);
    v->where_slot = xcalloc (v->n_ext, sizeof *v->where_slot);
    ir_init (&v->free_slots[T_SSD], v->ssd_slots);
    for (int64_t i = 0; i < v->ssd_slots; i++) ir_push (&v->free_slots[T_SSD], i);
    ir_init (&v->free_slots[T_HDD], v->n_ext);
    for (int64_t i = 0; i < v->n_ext; i++) ir_push (&v->free_slots[T_HDD], i);
    v->heat_now = xcalloc (v->n_ext, sizeof *v->heat_now);
    v->history = xcalloc (v->n_ext * v->window_cycles, sizeof *v->history);
    v->next_cycle = v->cycle_s;
  }
  else if (!b->failed) {
    snprintf (b->err, b->errlen, "spindle spec: v%d.kind %s is not single, raid1, raid5 or tier", j, kind);
    b->failed = true;
  }
}

struct spindle_sim *
spindle_sim_new (const char *text, char *err, size_t errlen)
{
  struct kv kv = { 0 };
  size_t cap = 0;
  char *copy = strdup (text);
  for (char *line = strtok (copy, "\n"); line; line = strtok (NULL, "\n")) {
    if (*line == '#' || *line == '\0') continue;
    char *eq = strchr (line, '=');
    if (!eq) continue;
    *eq = '\0';
    if (kv.n == cap) {
      cap = cap ? 2 * cap : 256;
      kv.k = xrealloc (kv.k, cap * sizeof *kv.k);
      kv.v = xrealloc (kv.v, cap * sizeof *kv.v);
    }
    kv.k[kv.n] = line;
    kv.v[kv.n++] = eq + 1;
  }
  struct build b = { &kv, err, errlen, false };
  struct spindle_sim *s = xcalloc (1, sizeof *s);
  const char *fmt = need (&b, "format");
  if (!b.failed && strcmp (fmt, "snaptax-spindle 1") != 0) {
    snprintf (err, errlen, "spindle spec: format %s is not 'snaptax-spindle 1'", fmt);
    b.failed = true;
  }
  s->name = strdup (need (&b, "name"));
  s->array.name = s->name;
  s->capacity = NEED_I (&b, "capacity");
  int64_t nm = NEED_I (&b, "members"), nv = NEED_I (&b, "volumes");
  if (!b.failed && (nm < 1 || nv < 1 || nm > 4096 || nv > 4096)) {
    snprintf (err, errlen, "spindle spec: %" PRId64 " members, %" PRId64 " volumes", nm, nv);
    b.failed = true;
  }
  if (!b.failed) {
    s->nmembers = nm;
    s->nvolumes = nv;
    s->members = xcalloc (nm, sizeof *s->members);
    s->volumes = xcalloc (nv, sizeof *s->volumes);
    for (int i = 0; i < nm && !b.failed; i++) build_member (&b, &s->members[i], i);
    for (int j = 0; j < nv && !b.failed; j++) build_volume (&b, s, j);
    s->root = &s->volumes[0];
  }
  free (kv.k);
  free (kv.v);
  free (copy);
  if (b.failed) {
    spindle_sim_free (s);
    return NULL;
  }
  return s;
}

void
spindle_sim_free (struct spindle_sim *s)
{
  if (!s) return;
  /* outstanding commands' contexts are not tracked: freeing mid-flight leaks them (the plugin frees at exit) */
  for (size_t i = 0; i < s->nmembers; i++) {
    struct member *m = &s->members[i];
    free (m->c.name);
    pv_free (&m->queue); pv_free (&m->overflow); pv_free (&m->dirty); pv_free (&m->blocked);
    pv_free (&m->flush_waiters); pv_free (&m->waiting);
    free (m->acks.v); free (m->flush_acks.v); free (m->running.v);
  }
  for (size_t j = 0; j < s->nvolumes; j++) {
    struct volume *v = &s->volumes[j];
    free (v->members);
    free (v->where_tier); free (v->where_slot); free (v->free_slots[0].v); free (v->free_slots[1].v);
    free (v->heat_now); free (v->history); free (v->plan);
    free (v->dirty); free (v->inflight); free (v->fifo); free (v->events.v);
    pv_free (&v->blocked); pv_free (&v->cwaiters);
  }
  free (s->members);
  free (s->volumes);
  free (s->name);
  free (s->done.v);
  free (s->etas.v);
  free (s);
}
