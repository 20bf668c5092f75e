/*
 * capture.h - keeps what a model should see of one output stream: the first
 * half of the cap and the last half (a ring), with the total byte count, so a
 * command printing 50 MB costs the server at most `cap` bytes.
 */
#ifndef CAPTURE_H
#define CAPTURE_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"

struct capture {
	size_t cap;	 /* bytes kept at most (head + tail) */
	struct buf head; /* the first cap/2 bytes */
	char *ring;	 /* the last cap - cap/2 bytes after head */
	size_t ring_cap;
	size_t ring_len;
	size_t ring_pos; /* next write position */
	uint64_t total;	 /* bytes seen */
};

void capture_init(struct capture *c, size_t cap);
void capture_finish(struct capture *c);
void capture_add(struct capture *c, const char *p, size_t n);
/* True once more than cap bytes were seen (the middle was dropped). */
bool capture_truncated(const struct capture *c);
/*
 * Appends the kept bytes to out: everything when nothing was dropped, else
 * head, a marker line saying how much was left out, and tail.
 */
void capture_render(const struct capture *c, struct buf *out);
/* Appends the kept bytes with no marker (head then tail, in order). */
void capture_raw(const struct capture *c, struct buf *out);
/*
 * Copies p[0..n) into out (a NUL-terminated string of at most outsz - 1
 * bytes) without its trailing newlines and spaces: a script's stderr as an
 * error message quotes it. outsz > 0.
 */
void capture_trim_copy(const char *p, size_t n, char *out, size_t outsz);
/* capture_render into a trimmed string (capture_trim_copy). */
void capture_render_trimmed(const struct capture *c, char *out, size_t outsz);

#endif
