/* spindle_core: the emulated drives and arrays of snaptax.spindle (model.py + arrays.py) in C, in simulated time.
 *
 * One core, two users: the nbdkit plugin (spindle_plugin.c, which maps simulated time 1:1 onto CLOCK_MONOTONIC)
 * and, built alone as a shared library, the certified-data test (tests/spindle/test_cmodel.py via
 * snaptax.spindle.cmodel), which replays one request trace through this core and through the Python Simulator
 * and requires the same completion time per request and the same counters. Nothing here reads a clock, sleeps
 * or locks: the caller owns time and serialisation.
 *
 * The device comes as the flat key=value text snaptax.spindle.cspec writes from the Python Simulator built for
 * the same spec (derived figures such as the seek curve's coefficients are the Python model's own numbers, so
 * there is one source of truth for parameters).
 */
#ifndef SPINDLE_CORE_H
#define SPINDLE_CORE_H

#include <stddef.h>
#include <stdint.h>

#define SPINDLE_READ 0
#define SPINDLE_WRITE 1
#define SPINDLE_FLUSH 2

struct spindle_sim;

/* A completion or a completion time fixed ahead ("eta"): the host command's token and its simulated time.
 * `sleep` marks a flush's eta (as Simulator.sleep_etas). */
struct spindle_event {
  uint64_t token;
  double t;
  int sleep;
};

/* NULL on error, with a one-line message in err. */
struct spindle_sim *spindle_sim_new (const char *spec_text, char *err, size_t errlen);
void spindle_sim_free (struct spindle_sim *sim);
/* kind: SPINDLE_READ/WRITE/FLUSH. Call spindle_sim_advance(t) first. -1 (and a message) on a refused command. */
int spindle_sim_submit (struct spindle_sim *sim, uint64_t token, int kind, int64_t offset, int64_t length,
                        double t, char *err, size_t errlen);
void spindle_sim_advance (struct spindle_sim *sim, double until);
/* The next event time of any member or timed volume; INFINITY when none. */
double spindle_sim_next_event_time (const struct spindle_sim *sim);
/* The next event time whose time is not in owned[0..n) (events the request threads time themselves). */
double spindle_sim_next_free_time (const struct spindle_sim *sim, const double *owned, size_t n);
/* Drain completions / etas so far into out[0..max); returns how many (call again while it returns max). */
size_t spindle_sim_take_done (struct spindle_sim *sim, struct spindle_event *out, size_t max);
size_t spindle_sim_take_etas (struct spindle_sim *sim, struct spindle_event *out, size_t max);
double spindle_sim_now (const struct spindle_sim *sim);
int64_t spindle_sim_capacity (const struct spindle_sim *sim);
/* Simulator.counters() as JSON (without the emulator block): a malloc'ed string the caller frees
 * (spindle_free). `with_close` 0 leaves the outer object open (no final '}') for the plugin to append to. */
char *spindle_sim_counters_json (const struct spindle_sim *sim, int with_close);
void spindle_free (void *p);

/* Flat ctypes-friendly wrappers for the test: the next event time with a flag instead of INFINITY. */
int spindle_sim_has_event (const struct spindle_sim *sim);
size_t spindle_sim_take_done_arrays (struct spindle_sim *sim, uint64_t *tokens, double *times, size_t max);
size_t spindle_sim_take_etas_arrays (struct spindle_sim *sim, uint64_t *tokens, double *times, size_t max);

#endif
