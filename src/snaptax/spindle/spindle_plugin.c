/* spindle: a sparse backing file served with the timing of a simulated drive or array, as a C nbdkit plugin.
 *
 *   nbdkit -f -U SOCK -t 64 build/nbdkit-spindle.so spec=SPEC.txt file=BACKING \
 *       [counters=COUNTERS.json] [interval=0.5] [spin_us=auto|N] [rt_priority=10] [cpu_latency_us=0|off]
 *
 * spec      the device as snaptax.spindle.cspec writes it (flat key=value, from the Python Simulator built for the
 *           same spec: one source of truth for parameters)
 * file      the backing file (created sparse by serve(); data really lives there: pread/pwrite)
 * counters  where counters are written, atomically, every `interval` s and at exit: the Python plugin's file
 *           (arrays.Simulator.counters() plus the "emulator" block), so snaptax.spindle.serve.flat_counters, the
 *           record and every study read it unchanged
 * spin_us   how long before its completion time a request thread stops sleeping and spins (default: adaptive,
 *           from the sleeps' own overshoot)
 *
 * Built by snaptax.spindle.build (make setup) with the model core spindle_core.c, which transcribes model.py and
 * arrays.py; tests/spindle/test_cmodel.py holds the two to the same completion times and counters. It replaces the
 * Python plugin (plugin.py, still selectable: serve(..., plugin="python")), whose per-command work under one lock
 * and the GIL made replies late by several per cent of a drive's service time and served the ~20 us flash tier
 * at ~350 us.
 *
 * TIMING. Simulated time = CLOCK_MONOTONIC since the plugin was configured. Requests are scheduled in simulated
 * time under one mutex (nbdkit's PARALLEL thread model: one thread per outstanding request). A request thread
 * advances the simulator to `now`, submits, does its data I/O, and waits until its completion time is fixed
 * (at dispatch: at once when the device is idle, later when it waits in a queue). Then it times its own reply:
 * it sleeps until shortly before that time and spins for the rest (timer wake-ups on a loaded 2-core VM overshoot
 * by tens to hundreds of microseconds, which the spin absorbs: the margin adapts to the sleeps' own overshoot,
 * mean + 3 deviations, bounded so that spinning, one thread at a time, takes at most a quarter of a CPU), advances the simulator past its completion (which completes it and dispatches what its
 * device had queued, telling those threads their times) and returns, so nbdkit replies from this very thread with
 * no hand-off. A pump thread processes every other event (destages, the read phase of a RAID5 read-modify-write,
 * tier migrations and cycles) at its time, and an owned event after a grace period should its thread be
 * descheduled; it also writes the counters. Decisions (queue order, seek, rotation) depend on simulated time only,
 * so a late thread delays its own reply but never changes the schedule.
 *
 * Two settings make that work on 2 vCPUs shared with fio and qemu-storage-daemon (measured in the commit that
 * introduced them): request threads run SCHED_FIFO (rt_priority, default 10) from request to reply (see
 * real_time()), and while serving the plugin holds a CPU latency request of cpu_latency_us (default 0) on
 * /dev/cpu_dma_latency, so idle vCPUs poll instead of halting (a halted vCPU takes ~70 us to take an interrupt
 * here, a polling one ~30 us; the zero-latency device's QD1 round trip falls from ~450 to ~60 us). The request is
 * the kernel's PM QoS: it lasts as long as this process holds the file open.
 *
 * WHAT IS COUNTED, in the counters' "emulator" block (all cumulative; readers difference two snapshots)
 *   released, release_late_s_sum      replies and the sum of (reply time - simulated completion): the emulator's
 *                                      error at the plugin boundary (as the Python plugin's, measured here at the
 *                                      callback's return)
 *   boundary_s_sum, model_s_sum        per reply, callback entry -> return (real) and submission -> completion
 *                                      (simulated): the plugin-boundary accuracy is model / boundary
 *   flushes_released, flush_late_s_sum flushes alone
 *   idle_arrivals, idle_gap_s_sum      arrivals with nothing outstanding and the real time since the last reply
 *   idle_phase_hist, idle_phase_bin_us such arrivals' time since the last completion (simulated), 2 us bins
 *   self_timed                         replies timed by their own thread (the rest were completed by the pump)
 *   spin_margin_us, sleep_overshoot_us_mean   the current spin margin and the sleeps' mean overshoot (levels)
 *   rt_priority, rt_refused, cpu_latency_qos  the settings above, and whether the kernel refused them
 *   self_timed_wake_late_s_sum, self_timed_reply_work_s_sum   a self-timed reply's lateness in two parts: how
 *                                      late its own wait ended (a sleep that overshot its spin margin, a spin
 *                                      preempted), and the work from then to the return (the lock, the advance
 *                                      that completes it and dispatches what was queued, the bookkeeping)
 *   spin_s_sum, spin_denied            time spent spinning, and waits that found another thread spinning (they
 *                                      sleep until the completion time itself)
 *   late_hist_log2_us                  replies by lateness: bin 0 < 1 us, bin i in [2^(i-1), 2^i) us
 *   outstanding, errors, last_error    levels, for hang and error diagnoses
 */
#define _GNU_SOURCE
#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "spindle_core.h"

#define THREAD_MODEL NBDKIT_THREAD_MODEL_PARALLEL

#define GAP_BIN_S 2e-6
#define GAP_BINS 2000           /* 0 ... 4 ms; the last bin holds everything beyond */
#define LATE_BINS 24
#define OWNED_GRACE_S 1e-3      /* the pump completes an owned event only this long after its time */
#define SPIN_MIN_S 20e-6        /* adaptive spin margin: bounds */
#define SPIN_MAX_S 2e-3         /* a bound on the overshoot estimate, not on the CPU: SPIN_BUDGET bounds that */
#define SPIN_BUDGET 0.25        /* at most this share of one CPU spent spinning: margin <= budget x the mean time
                                   between replies */

static const char *cfg_spec, *cfg_file, *cfg_counters;
static double cfg_interval = 0.5;
static double cfg_spin_s = -1;  /* < 0: adaptive */
static int cfg_rt_priority = 10;     /* SCHED_FIFO priority of the request threads; 0: leave them SCHED_OTHER */
static int cfg_cpu_latency_us = 0;   /* /dev/cpu_dma_latency request while serving; < 0: none */

static struct spindle_sim *sim;
static int fd = -1;
static int64_t size;
static struct timespec t0;

static pthread_mutex_t lock;      /* priority-inheriting: a real-time request thread may wait for the pump */
static pthread_cond_t pump_cv;
static pthread_t pump;
static bool pump_running, stopping;
static double pump_wake_at = INFINITY;

/* One outstanding host command, on its request thread's stack, in the list `reqs` while registered. */
struct req {
  uint64_t token;
  int kind;
  double t_entry, t_arrival;
  bool eta_known, done, waiting;
  double eta, t_done, t_spun;   /* t_spun: when its own wait for the completion time ended (self-timed) */
  pthread_cond_t cv;
  struct req *prev, *next;
};

static struct req *reqs;
static int64_t outstanding;
static uint64_t next_token = 1;

/* bookkeeping under `lock` */
static double last_release = -1, last_done_t = -1;
static int64_t gap_n, errors;
static double gap_sum;
static int64_t phase_hist[GAP_BINS];
static char last_error[512];
static double overshoot_mean = 100e-6, overshoot_dev = 50e-6;   /* EWMAs of the sleeps' overshoot */
static double reply_interval = 1e-3;   /* EWMA of the real time between two replies (s) */
static double spin_margin (void);

/* counted at the reply, without the lock (nanoseconds) */
static atomic_int_fast64_t released, late_ns, boundary_ns, model_ns, flushes, flush_late_ns, self_timed;
static atomic_int_fast64_t wake_late_ns, reply_work_ns;   /* self-timed replies' lateness, split */
static atomic_int_fast64_t late_hist[LATE_BINS];
static atomic_int spinners;                 /* request threads spinning now: 0 or 1 */
static atomic_int_fast64_t spin_ns, spin_denied;   /* time spent spinning; waits that found the spin taken */
static atomic_int_fast64_t rt_refused;      /* request threads that could not be made real-time */
static int qos_fd = -1;                     /* held open while serving: the CPU latency request */
static bool qos_held;

/* a spin-wait hint to the CPU (and to a hypervisor's pause-loop detection) */
static inline void
cpu_relax (void)
{
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause ();
#elif defined(__aarch64__)
  __asm__ volatile ("yield" ::: "memory");
#else
  __asm__ volatile ("" ::: "memory");
#endif
}

static inline double
now (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (double) (ts.tv_sec - t0.tv_sec) + (double) (ts.tv_nsec - t0.tv_nsec) * 1e-9;
}

static struct timespec
abs_time (double t)
{
  double whole = floor (t);
  struct timespec ts = { t0.tv_sec + (time_t) whole, t0.tv_nsec + (long) ((t - whole) * 1e9) };
  while (ts.tv_nsec >= 1000000000L) { ts.tv_sec++; ts.tv_nsec -= 1000000000L; }
  return ts;
}

static __thread bool slack_set;

/* Linux coalesces a thread's timer wake-ups by 50 us by default (PR_SET_TIMERSLACK); we want them exact */
static void
timer_slack (void)
{
  if (!slack_set) {
    prctl (PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    slack_set = true;
  }
}

/* A request thread runs SCHED_FIFO (rt_priority) from the moment nbdkit hands it a request until it returns the
 * reply: its submission, data I/O and timer wake-up then preempt fio and qemu-storage-daemon at once instead of
 * waiting for the fair scheduler's turn, and its spin is not preempted by them (measured on the 2-vCPU VM with both
 * CPUs busy: sleep overshoot p99 85 us instead of 2.3 ms; a flash-tier command's mean lateness 682 -> 3 us at QD32;
 * real-time only while waiting left it 779 us late: the submission and data I/O before the wait were then
 * preempted). It returns to SCHED_OTHER before it replies, so nbdkit's socket reads and replies do not preempt the
 * client at every message (real-time throughout cost the harness 42 -> 18k IOPS on the zero-latency device at
 * QD32). The threads only spin in the last `spin margin` before a completion, one at a time (spin_margin() says
 * why); the kernel's real-time throttling (95 %) bounds them anyway. */
static __thread int rt_state;   /* 0: SCHED_OTHER, 1: real-time now, -1: refused */

static void
real_time (bool on)
{
  if (cfg_rt_priority <= 0 || rt_state < 0 || (rt_state == 1) == on) return;
  struct sched_param sp = { .sched_priority = on ? cfg_rt_priority : 0 };
  if (pthread_setschedparam (pthread_self (), on ? SCHED_FIFO : SCHED_OTHER, &sp) != 0) {
    atomic_fetch_add (&rt_refused, 1);
    rt_state = -1;
    return;
  }
  rt_state = on ? 1 : 0;
}

static struct req *
find (uint64_t token)
{
  for (struct req *r = reqs; r; r = r->next)
    if (r->token == token) return r;
  return NULL;
}

static void
unregister (struct req *r)
{
  if (r->prev) r->prev->next = r->next;
  else reqs = r->next;
  if (r->next) r->next->prev = r->prev;
  outstanding--;
}

/* Under the lock: hand completions and newly fixed completion times to their threads. */
static void
deliver (void)
{
  struct spindle_event ev[64];
  size_t n;
  while ((n = spindle_sim_take_etas (sim, ev, 64)) > 0)
    for (size_t i = 0; i < n; i++) {
      struct req *r = find (ev[i].token);
      if (r && !r->done) {
        r->eta_known = true;
        r->eta = ev[i].t;
        if (r->waiting) pthread_cond_signal (&r->cv);
      }
    }
  while ((n = spindle_sim_take_done (sim, ev, 64)) > 0)
    for (size_t i = 0; i < n; i++) {
      struct req *r = find (ev[i].token);
      if (r && !r->done) {
        r->done = true;
        r->t_done = ev[i].t;
        if (r->waiting) pthread_cond_signal (&r->cv);
      }
    }
}

/* Under the lock: when the pump must next look: the next event no request thread is timing, an owned event
 * after the grace period, the next counters dump. */
static double next_dump;

static double
pump_deadline (void)
{
  double owned[256];
  size_t n = 0;
  double first_owned = INFINITY;
  for (struct req *r = reqs; r; r = r->next)
    if (r->eta_known && !r->done) {
      if (n < sizeof owned / sizeof *owned) owned[n++] = r->eta;
      if (r->eta < first_owned) first_owned = r->eta;
    }
  double wake = spindle_sim_next_free_time (sim, owned, n);
  if (first_owned + OWNED_GRACE_S < wake) wake = first_owned + OWNED_GRACE_S;
  if (cfg_counters && next_dump < wake) wake = next_dump;
  return wake;
}

/* Under the lock: wake the pump if it sleeps past what it must now see. */
static void
nudge_pump (void)
{
  if (pump_running && pump_deadline () < pump_wake_at) pthread_cond_signal (&pump_cv);
}

static void
json_escape (char *out, size_t len, const char *in)
{
  size_t k = 0;
  for (; *in && k + 7 < len; in++) {
    if (*in == '"' || *in == '\\') { out[k++] = '\\'; out[k++] = *in; }
    else if ((unsigned char) *in < 0x20) k += snprintf (out + k, len - k, "\\u%04x", *in);
    else out[k++] = *in;
  }
  out[k] = '\0';
}

/* Write the counters atomically (rename over the old file): readers never see a part. Takes the lock. */
static pthread_mutex_t dump_lock = PTHREAD_MUTEX_INITIALIZER;   /* one writer of the file at a time */

static void
dump (void)
{
  if (!cfg_counters) return;
  pthread_mutex_lock (&dump_lock);
  pthread_mutex_lock (&lock);
  char *core = spindle_sim_counters_json (sim, 0);
  double gap = gap_sum;
  int64_t gaps = gap_n, outst = outstanding, errs = errors;
  static int64_t hist[GAP_BINS];
  memcpy (hist, phase_hist, sizeof hist);
  char err[1100];
  json_escape (err, sizeof err, last_error);
  double margin = spin_margin ();
  double over = overshoot_mean;
  pthread_mutex_unlock (&lock);

  char tmp[4096];
  snprintf (tmp, sizeof tmp, "%s.tmp", cfg_counters);
  FILE *f = fopen (tmp, "w");
  if (!f) { free (core); pthread_mutex_unlock (&dump_lock); return; }
  int64_t n = atomic_load (&released), nf = atomic_load (&flushes);
  double late = atomic_load (&late_ns) * 1e-9;
  fprintf (f, "%s, \"emulator\": {\"plugin\": \"c\", \"release_late_us_mean\": %.2f, \"released\": %" PRId64
           ", \"release_late_s_sum\": %.9f, \"flushes_released\": %" PRId64 ", \"flush_late_s_sum\": %.9f"
           ", \"boundary_s_sum\": %.9f, \"model_s_sum\": %.9f"
           ", \"idle_gap_us_mean\": %.2f, \"idle_arrivals\": %" PRId64 ", \"idle_gap_s_sum\": %.9f"
           ", \"self_timed\": %" PRId64 ", \"idle_phase_bin_us\": %.1f, \"outstanding\": %" PRId64
           ", \"errors\": %" PRId64 ", \"last_error\": \"%s\", \"spin_margin_us\": %.2f"
           ", \"sleep_overshoot_us_mean\": %.2f, \"self_timed_wake_late_s_sum\": %.9f"
           ", \"self_timed_reply_work_s_sum\": %.9f, \"spin_s_sum\": %.9f, \"spin_denied\": %" PRId64
           ", \"rt_priority\": %d, \"rt_refused\": %" PRId64
           ", \"cpu_latency_qos\": %s, \"late_hist_log2_us\": [",
           core, n ? late / n * 1e6 : 0.0, n, late, nf, atomic_load (&flush_late_ns) * 1e-9,
           atomic_load (&boundary_ns) * 1e-9, atomic_load (&model_ns) * 1e-9,
           gaps ? gap / gaps * 1e6 : 0.0, gaps, gap, (int64_t) atomic_load (&self_timed), GAP_BIN_S * 1e6, outst,
           errs, err, margin * 1e6, over * 1e6, atomic_load (&wake_late_ns) * 1e-9,
           atomic_load (&reply_work_ns) * 1e-9, atomic_load (&spin_ns) * 1e-9, (int64_t) atomic_load (&spin_denied),
           cfg_rt_priority, (int64_t) atomic_load (&rt_refused),
           qos_held ? "true" : "false");
  free (core);
  for (int i = 0; i < LATE_BINS; i++) fprintf (f, "%s%" PRId64, i ? ", " : "", (int64_t) atomic_load (&late_hist[i]));
  fprintf (f, "], \"idle_phase_hist\": [");
  for (int i = 0; i < GAP_BINS; i++) fprintf (f, "%s%" PRId64, i ? ", " : "", hist[i]);
  fprintf (f, "]}}");
  if (fclose (f) == 0) rename (tmp, cfg_counters);
  else unlink (tmp);
  pthread_mutex_unlock (&dump_lock);
}

static void *
pump_thread (void *arg)
{
  (void) arg;
  timer_slack ();
  pthread_mutex_lock (&lock);
  while (!stopping) {
    double t = now ();
    spindle_sim_advance (sim, t);
    deliver ();
    if (cfg_counters && t >= next_dump) {
      next_dump = t + cfg_interval;
      pthread_mutex_unlock (&lock);
      dump ();
      pthread_mutex_lock (&lock);
      continue;
    }
    pump_wake_at = pump_deadline ();
    if (pump_wake_at > now ()) {
      if (isinf (pump_wake_at)) pthread_cond_wait (&pump_cv, &lock);
      else {
        struct timespec ts = abs_time (pump_wake_at);
        pthread_cond_timedwait (&pump_cv, &lock, &ts);
      }
    }
    pump_wake_at = -INFINITY;   /* awake: no need to signal */
  }
  pthread_mutex_unlock (&lock);
  return NULL;
}

static int
start_pump (void)
{
  pthread_mutex_lock (&lock);
  bool start = !pump_running;
  pump_running = true;
  pthread_mutex_unlock (&lock);
  if (start) {
    int err = pthread_create (&pump, NULL, pump_thread, NULL);
    if (err) {
      nbdkit_error ("spindle: cannot start the pump thread: %s", strerror (err));
      pump_running = false;
      return -1;
    }
  }
  return 0;
}

/* ------------------------------------------------------------------ one request */

static int
request (struct req *r, int kind, uint64_t offset, uint32_t count)
{
  timer_slack ();
  real_time (true);
  memset (r, 0, sizeof *r);
  pthread_cond_init (&r->cv, NULL);
  r->kind = kind;
  r->t_entry = now ();
  pthread_mutex_lock (&lock);
  double t = now ();
  spindle_sim_advance (sim, t);
  deliver ();
  if (outstanding == 0 && last_release >= 0) {
    gap_sum += t - last_release;
    gap_n++;
    if (last_done_t >= 0) {
      double ph = (t - last_done_t) / GAP_BIN_S;
      phase_hist[ph < GAP_BINS - 1 ? (int) ph : GAP_BINS - 1]++;
    }
  }
  r->token = next_token++;
  r->t_arrival = t;
  char err[400];
  if (spindle_sim_submit (sim, r->token, kind, (int64_t) offset, count, t, err, sizeof err) != 0) {
    errors++;
    snprintf (last_error, sizeof last_error, "%s", err);
    pthread_mutex_unlock (&lock);
    pthread_cond_destroy (&r->cv);
    real_time (false);
    nbdkit_error ("spindle: %s", err);
    nbdkit_set_error (EIO);
    return -1;
  }
  r->next = reqs;
  if (reqs) reqs->prev = r;
  reqs = r;
  outstanding++;
  deliver ();
  nudge_pump ();
  pthread_mutex_unlock (&lock);
  return 0;
}

/* Under the lock. The adaptive margin covers the sleeps' overshoot (mean + 3 deviations, at least SPIN_MIN_S) but
 * never more than SPIN_MAX_S, nor more than SPIN_BUDGET of the mean time between replies (which wins, below
 * SPIN_MIN_S, above ~12 500 replies a second), so that the spinning (one thread at a time, see wait_until) takes at
 * most a quarter of a CPU. Before the budget and the single spinner the margin ran away on the flash tier: CPUs busy
 * with fio and qemu-storage-daemon made sleeps overshoot, the margin grew to its 2 ms bound, every request thread
 * spun from submission to reply at real-time priority, the starved clients kept 1.8 commands outstanding instead of
 * 12 (2 100 IO/s instead of 13 000 at 32 KiB, QD16), and since no thread slept any more the overshoot's average could
 * not come down: the tiered pool's bimodal flash-tier rate. The budget and the single spinner prevent that by
 * themselves, so SPIN_MAX_S only bounds the overshoot estimate: a bound of 200 us as well (8dabdccee) cut the margin
 * where replies are far apart and the CPUs idle, and make bench's release lateness was higher with it (36 / 113 us
 * at QD1 / QD32 in one run, 16-21 / 44-58 in two without; science plan, section 28). A half-CPU budget or a second
 * spinner cost the flash tier its rate (ibid.). */
static double
spin_margin (void)
{
  if (cfg_spin_s >= 0) return cfg_spin_s;
  double m = fmin (SPIN_MAX_S, fmax (SPIN_MIN_S, overshoot_mean + 3 * overshoot_dev));
  return fmin (m, SPIN_BUDGET * reply_interval);
}

static double
sleep_until (double target)
{
  struct timespec ts = abs_time (target);
  while (clock_nanosleep (CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
    ;
  return now () - target;
}

/* Sleep until shortly before `eta`, spin for the rest. One thread spins at a time: one that finds the spin taken
 * sleeps until `eta` itself and is late by its wake-up, so that spinning can never take more than one CPU from the
 * clients (and sleeps, hence the overshoot's average, go on). Returns the last sleep's overshoot (s) past its
 * target, or NAN when it did not sleep. */
static double
wait_until (double eta, double margin)
{
  double over = NAN;
  double target = eta - margin;
  if (target > now ()) over = sleep_until (target);
  int free_slot = 0;
  if (!atomic_compare_exchange_strong (&spinners, &free_slot, 1)) {
    atomic_fetch_add (&spin_denied, 1);
    if (eta > now ()) over = sleep_until (eta);
    return over;
  }
  double t0_spin = now (), t = t0_spin;
  while (t < eta) {
    cpu_relax ();
    t = now ();
  }
  atomic_store (&spinners, 0);
  atomic_fetch_add (&spin_ns, (int64_t) llround ((t - t0_spin) * 1e9));
  return over;
}

static void
finish (struct req *r)
{
  pthread_mutex_lock (&lock);
  for (;;) {
    if (r->done) break;
    if (r->eta_known) {
      double eta = r->eta, margin = spin_margin ();
      pthread_mutex_unlock (&lock);
      double over = wait_until (eta, margin);
      r->t_spun = now ();
      pthread_mutex_lock (&lock);
      if (isfinite (over)) {   /* EWMAs over the last ~64 sleeps */
        overshoot_mean += (over - overshoot_mean) / 64;
        overshoot_dev += (fabs (over - overshoot_mean) - overshoot_dev) / 64;
      }
      if (!r->done) {
        /* our completion time has come: process it (and what the device had queued behind it) ourselves */
        spindle_sim_advance (sim, now ());
        deliver ();
        if (r->done) {
          atomic_fetch_add (&self_timed, 1);
          r->eta = eta;   /* kept for the split below */
        }
        else r->t_spun = 0;
      }
      if (!r->done) r->eta_known = false;   /* cannot happen (an eta is the completion time): wait for delivery */
      continue;
    }
    r->waiting = true;
    pthread_cond_wait (&r->cv, &lock);
    r->waiting = false;
  }
  unregister (r);
  double t_release = now ();
  if (last_release >= 0) reply_interval += (t_release - last_release - reply_interval) / 64;
  last_release = t_release;
  if (r->t_done > last_done_t) last_done_t = r->t_done;
  nudge_pump ();
  pthread_mutex_unlock (&lock);
  double t_reply = now ();
  double late = t_reply - r->t_done;
  int64_t late_n = (int64_t) llround (late * 1e9);
  atomic_fetch_add (&released, 1);
  atomic_fetch_add (&late_ns, late_n);
  atomic_fetch_add (&boundary_ns, (int64_t) llround ((t_reply - r->t_entry) * 1e9));
  atomic_fetch_add (&model_ns, (int64_t) llround ((r->t_done - r->t_arrival) * 1e9));
  if (r->kind == SPINDLE_FLUSH) {
    atomic_fetch_add (&flushes, 1);
    atomic_fetch_add (&flush_late_ns, late_n);
  }
  if (r->t_spun > 0) {   /* self-timed: how late its wait ended, and the work between that and the reply */
    atomic_fetch_add (&wake_late_ns, (int64_t) llround ((r->t_spun - r->t_done) * 1e9));
    atomic_fetch_add (&reply_work_ns, (int64_t) llround ((t_reply - r->t_spun) * 1e9));
  }
  double us = late * 1e6;
  int bin = us < 1.0 ? 0 : 1 + (int) log2 (us);
  atomic_fetch_add (&late_hist[bin < LATE_BINS - 1 ? bin : LATE_BINS - 1], 1);
  real_time (false);
}

/* ------------------------------------------------------------------ nbdkit callbacks */

static int
spindle_config (const char *key, const char *value)
{
  if (strcmp (key, "spec") == 0) cfg_spec = value;
  else if (strcmp (key, "file") == 0) cfg_file = value;
  else if (strcmp (key, "counters") == 0) cfg_counters = value;
  else if (strcmp (key, "interval") == 0) {
    char *end;
    cfg_interval = strtod (value, &end);
    if (*end || !(cfg_interval > 0)) { nbdkit_error ("spindle: interval=%s: expected seconds > 0", value); return -1; }
  }
  else if (strcmp (key, "rt_priority") == 0) {
    char *end;
    long v = strtol (value, &end, 10);
    if (*end || v < 0 || v > 99) { nbdkit_error ("spindle: rt_priority=%s: expected 0 (off) ... 99", value); return -1; }
    cfg_rt_priority = (int) v;
  }
  else if (strcmp (key, "cpu_latency_us") == 0) {
    if (strcmp (value, "off") == 0) cfg_cpu_latency_us = -1;
    else {
      char *end;
      long v = strtol (value, &end, 10);
      if (*end || v < 0) { nbdkit_error ("spindle: cpu_latency_us=%s: expected off or microseconds >= 0", value); return -1; }
      cfg_cpu_latency_us = (int) v;
    }
  }
  else if (strcmp (key, "spin_us") == 0) {
    if (strcmp (value, "auto") == 0) cfg_spin_s = -1;
    else {
      char *end;
      double us = strtod (value, &end);
      if (*end || !(us >= 0)) { nbdkit_error ("spindle: spin_us=%s: expected auto or microseconds >= 0", value); return -1; }
      cfg_spin_s = us * 1e-6;
    }
  }
  else {
    nbdkit_error ("spindle: unknown parameter %s (spec, file, counters, interval, spin_us, rt_priority, "
                  "cpu_latency_us)", key);
    return -1;
  }
  return 0;
}

static char *
read_all (const char *path)
{
  FILE *f = fopen (path, "r");
  if (!f) return NULL;
  size_t cap = 1 << 16, len = 0;
  char *buf = malloc (cap);
  size_t n;
  while (buf && (n = fread (buf + len, 1, cap - len - 1, f)) > 0) {
    len += n;
    if (cap - len - 1 == 0) {
      char *nb = realloc (buf, cap * 2);
      if (!nb) { free (buf); buf = NULL; break; }
      buf = nb;
      cap *= 2;
    }
  }
  fclose (f);
  if (buf) buf[len] = '\0';
  return buf;
}

static int
spindle_config_complete (void)
{
  if (!cfg_spec || !cfg_file) {
    nbdkit_error ("spindle: missing parameter %s=", !cfg_spec ? "spec" : "file");
    return -1;
  }
  char *text = read_all (cfg_spec);
  if (!text) {
    nbdkit_error ("spindle: cannot read spec %s: %m", cfg_spec);
    return -1;
  }
  char err[512];
  sim = spindle_sim_new (text, err, sizeof err);
  free (text);
  if (!sim) {
    nbdkit_error ("spindle: %s: %s", cfg_spec, err);
    return -1;
  }
  size = spindle_sim_capacity (sim);
  fd = open (cfg_file, O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    nbdkit_error ("spindle: cannot open backing file %s: %m", cfg_file);
    return -1;
  }
  struct stat st;
  if (fstat (fd, &st) != 0 || st.st_size < size) {
    nbdkit_error ("spindle: backing file %s is smaller than the device (%" PRId64 " bytes)", cfg_file, size);
    return -1;
  }
  pthread_mutexattr_t ma;
  pthread_mutexattr_init (&ma);
  pthread_mutexattr_setprotocol (&ma, PTHREAD_PRIO_INHERIT);
  pthread_mutex_init (&lock, &ma);
  pthread_mutexattr_destroy (&ma);
  /* Keep idle CPUs polling instead of halting while we serve (PM QoS; released when the process exits): a halted
   * vCPU takes ~70 us (median) to take a timer or wake-up interrupt on this VM, a polling one ~30 us. */
  if (cfg_cpu_latency_us >= 0) {
    qos_fd = open ("/dev/cpu_dma_latency", O_WRONLY | O_CLOEXEC);
    int32_t v = cfg_cpu_latency_us;
    qos_held = qos_fd >= 0 && write (qos_fd, &v, sizeof v) == (ssize_t) sizeof v;
  }
  pthread_condattr_t ca;
  pthread_condattr_init (&ca);
  pthread_condattr_setclock (&ca, CLOCK_MONOTONIC);
  pthread_cond_init (&pump_cv, &ca);
  pthread_condattr_destroy (&ca);
  clock_gettime (CLOCK_MONOTONIC, &t0);
  return 0;
}

/* threads must start after nbdkit daemonizes (a fork keeps only the forking thread) */
static int spindle_after_fork (void) { return start_pump (); }

static void
spindle_cleanup (void)
{
  if (pump_running) {
    pthread_mutex_lock (&lock);
    stopping = true;
    pthread_cond_signal (&pump_cv);
    pthread_mutex_unlock (&lock);
    pthread_join (pump, NULL);
    pump_running = false;
  }
  if (sim) {
    pthread_mutex_lock (&lock);
    spindle_sim_advance (sim, now ());
    deliver ();
    pthread_mutex_unlock (&lock);
    dump ();
  }
}

static void
spindle_unload (void)
{
  if (qos_fd >= 0) close (qos_fd);
  if (fd >= 0) close (fd);
  spindle_sim_free (sim);
  sim = NULL;
}

static void *
spindle_open (int readonly)
{
  static int handle;
  if (start_pump () != 0) return NULL;
  return &handle;
}

/* a client is done: make its work visible in the counters at once (and deliver what the advance completes:
 * other clients' commands, whose threads wait for them) */
static void
spindle_close (void *h)
{
  pthread_mutex_lock (&lock);
  spindle_sim_advance (sim, now ());
  deliver ();
  pthread_mutex_unlock (&lock);
  dump ();
}

static int64_t spindle_get_size (void *h) { return size; }
static int spindle_can_write (void *h) { return 1; }
static int spindle_can_flush (void *h) { return 1; }
static int spindle_is_rotational (void *h) { return 1; }
static int spindle_can_multi_conn (void *h) { return 1; }   /* one simulator behind all connections */

static int
spindle_pread (void *h, void *buf, uint32_t count, uint64_t offset, uint32_t flags)
{
  struct req r;
  if (request (&r, SPINDLE_READ, offset, count) != 0) return -1;
  char *p = buf;
  uint32_t left = count;
  uint64_t off = offset;
  int rc = 0;
  while (left > 0) {
    ssize_t n = pread (fd, p, left, (off_t) off);
    if (n < 0) {
      if (errno == EINTR) continue;
      nbdkit_error ("spindle: pread: %m");
      rc = -1;
      break;
    }
    if (n == 0) { memset (p, 0, left); break; }   /* beyond the file's end: zeros */
    p += n; left -= (uint32_t) n; off += (uint64_t) n;
  }
  finish (&r);
  pthread_cond_destroy (&r.cv);
  return rc;
}

static int
spindle_pwrite (void *h, const void *buf, uint32_t count, uint64_t offset, uint32_t flags)
{
  struct req r;
  if (request (&r, SPINDLE_WRITE, offset, count) != 0) return -1;
  const char *p = buf;
  uint32_t left = count;
  uint64_t off = offset;
  int rc = 0;
  while (left > 0) {
    ssize_t n = pwrite (fd, p, left, (off_t) off);
    if (n < 0) {
      if (errno == EINTR) continue;
      nbdkit_error ("spindle: pwrite: %m");
      rc = -1;
      break;
    }
    p += n; left -= (uint32_t) n; off += (uint64_t) n;
  }
  finish (&r);
  pthread_cond_destroy (&r.cv);
  return rc;
}

/* no fsync: the emulated device's durability is not under test, and a host fsync would add the host disk's
 * latency to the model's */
static int
spindle_flush (void *h, uint32_t flags)
{
  struct req r;
  if (request (&r, SPINDLE_FLUSH, 0, 0) != 0) return -1;
  finish (&r);
  pthread_cond_destroy (&r.cv);
  return 0;
}

static struct nbdkit_plugin plugin = {
  .name = "spindle",
  .longname = "snaptax emulated spindle (simulated drive or array timing)",
  .version = "1",
  .config = spindle_config,
  .config_complete = spindle_config_complete,
  .config_help = "spec=SPEC file=BACKING [counters=JSON] [interval=S] [spin_us=auto|N] [rt_priority=10] "
                 "[cpu_latency_us=0|off]",
  .after_fork = spindle_after_fork,
  .cleanup = spindle_cleanup,
  .unload = spindle_unload,
  .open = spindle_open,
  .close = spindle_close,
  .get_size = spindle_get_size,
  .can_write = spindle_can_write,
  .can_flush = spindle_can_flush,
  .is_rotational = spindle_is_rotational,
  .can_multi_conn = spindle_can_multi_conn,
  .pread = spindle_pread,
  .pwrite = spindle_pwrite,
  .flush = spindle_flush,
};

NBDKIT_REGISTER_PLUGIN (plugin)
