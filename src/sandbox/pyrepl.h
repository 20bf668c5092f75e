/*
 * pyrepl.h - a long-lived Python interpreter in a session's container,
 * reached over one attached exec stream.
 *
 * The interpreter is `python3 -c <driver.py>` started through exec's
 * pid-reporting wrapper (so its process group can be killed) with stdin and
 * stdout carrying the frames of repl.h.  A cell runs until the driver sends
 * its result; past the deadline, or on cancellation, the driver is asked to
 * interrupt it (SIGINT: KeyboardInterrupt in the cell, state kept), and if no
 * result comes within PYREPL_INTERRUPT_GRACE_MS the process group is killed
 * (state lost; the caller starts a new interpreter next time).
 *
 * A struct pyrepl is used by one thread at a time (calls on a session are
 * serialized); it owns its stream.
 */
#ifndef PYREPL_H
#define PYREPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "base/buf.h"
#include "base/call.h"
#include "base/capture.h"
#include "base/errcode.h"
#include "engine/engine.h"

/* From exec start to the driver's hello. */
#define PYREPL_START_TIMEOUT_MS 30000
/* From the interrupt to giving up on the cell and killing the interpreter. */
#define PYREPL_INTERRUPT_GRACE_MS 2000
/*
 * Largest hello or result frame accepted (the driver keeps its results under
 * it), and what decoding one may cost (jsonscan.h): user code can reach the
 * driver's send(), so a frame is measured before it is parsed, and one over
 * either limit ends the call with too_large and stops the interpreter.
 */
#define PYREPL_RESULT_MAX (1u << 20)
#define PYREPL_RESULT_COST_MAX (4u << 20)
#define PYREPL_RESULT_DEPTH_MAX 16
/* Largest figure kept, figures kept per cell, and their bytes together. */
#define PYREPL_FIGURE_MAX (4u << 20)
#define PYREPL_FIGURES_MAX 8
#define PYREPL_FIGURES_TOTAL_MAX (12u << 20)
/* The driver's own stderr kept for error messages. */
#define PYREPL_DIAG_MAX 2048
/* Socket bytes read per call, and at most buffered while idle. */
#define PYREPL_READ_CHUNK (64 * 1024)
#define PYREPL_IDLE_BUFFER_MAX (4u << 20)

struct pyrepl;

struct pyrepl_opts {
	const char *container_id;
	const char *user;    /* exec user */
	const char *workdir; /* the workspace: cwd, and where changed files are looked for */
	const char *guard;   /* exec_spec.guard */
};

/* A chunk of the cell's output (stream 1 stdout, 2 stderr). */
typedef void (*pyrepl_output_fn)(void *arg, int stream, const char *p, size_t n);

struct pyrepl_request {
	const char *code;
	size_t code_len;
	int timeout_ms;	 /* 0: no deadline */
	size_t cap;	 /* bytes of each stream kept */
	size_t save_cap; /* bytes of each stream the driver saves in the workspace past cap (0: no limit) */
	pyrepl_output_fn on_output;
	void (*on_tick)(void *arg); /* at least once a second while running */
	void *arg;
};

struct pyrepl_result {
	unsigned cell;
	struct capture out, err;
	json_t *result;				/* the driver's result object; NULL when the cell never finished */
	struct buf figures[PYREPL_FIGURES_MAX]; /* PNG bytes */
	size_t nfigures;
	size_t figures_dropped; /* past the count or size caps */
	size_t figures_bytes;
	bool timed_out;
	bool cancelled;
	bool interrupted;	    /* the interrupt was sent */
	bool lost;		    /* the interpreter is gone (killed or died): its state with it */
	bool killed;		    /* we killed it */
	bool restarted;		    /* killing it took a container restart */
	int exit_code;		    /* when it died, if known; else -1 */
	char diag[PYREPL_DIAG_MAX]; /* what it printed on its own stderr, when it died */
	int64_t duration_ms;
};

/*
 * Starts an interpreter and waits for it to be ready. 0 with *ret, or
 * -errno with err: ERRCODE_PYTHON_NOT_FOUND when the image has no usable
 * python3, ERRCODE_CANCELLED, ERRCODE_TIMEOUT, or the engine's errors.
 */
int pyrepl_start(struct engine *e, struct call *call, const struct pyrepl_opts *o, struct pyrepl **ret,
		 struct err *err);
/*
 * Runs one cell. 0 when it ran, failed, was interrupted, or the interpreter
 * died or was killed on the way (all in res); -EPIPE with err when the
 * interpreter was already gone before the cell reached it (nothing ran).
 * res must be released with pyrepl_result_finish in both cases.
 */
int pyrepl_run(struct pyrepl *p, struct call *call, const struct pyrepl_request *req, struct pyrepl_result *res,
	       struct err *err);
void pyrepl_result_finish(struct pyrepl_result *res);
/* False once the interpreter is known to be gone; looks at the stream without blocking. */
bool pyrepl_alive(struct pyrepl *p);
/* The interpreter's Python version ("3.11.2"). */
const char *pyrepl_python_version(const struct pyrepl *p);
/* Milliseconds its start took. */
int64_t pyrepl_start_ms(const struct pyrepl *p);
/* Closes the stream (the driver exits on EOF) and frees p. NULL is a no-op. */
void pyrepl_destroy(struct pyrepl *p);
/* Cells this interpreter has run (what a rollback or a fork loses); 0 for NULL. */
unsigned pyrepl_cells(const struct pyrepl *p);
/* Kills the interpreter's process group (unless that was done already), then destroys p. NULL is a no-op. */
void pyrepl_kill(struct pyrepl *p);

#endif
