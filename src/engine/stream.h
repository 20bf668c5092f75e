/*
 * stream.h - demultiplexer for the Docker Engine's attach/exec stream when
 * the exec has no TTY.
 *
 * Each frame is an 8-byte header followed by its payload:
 *
 *	[type][0][0][0][size, 4 bytes big-endian]  payload (size bytes)
 *
 * type is 0 stdin, 1 stdout, 2 stderr, or 3 for an error the daemon itself
 * put into the stream (moby's stdcopy.Systemerr; the payload is its message).
 * Pure: no I/O, no allocation; payload comes back as slices of the caller's
 * input, so a frame split across reads comes back in several pieces.
 */
#ifndef STREAM_H
#define STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"

/* Largest payload accepted in one frame (the daemon sends at most 32 KiB). */
#define STREAM_FRAME_MAX (1u << 20)
/* Length of a frame header. */
#define STREAM_HEADER_LEN 8

enum stream_type {
	STREAM_STDIN = 0,
	STREAM_STDOUT = 1,
	STREAM_STDERR = 2,
	STREAM_SYSTEMERR = 3, /* the daemon reports an error of its own */
};

enum stream_demux_state {
	STREAM_DEMUX_HEADER,  /* reading a header; hdr_len bytes of it seen */
	STREAM_DEMUX_PAYLOAD, /* inside a payload, `remaining` bytes left */
	STREAM_DEMUX_ERROR,   /* a malformed header was seen; stays here */
};

struct stream_demux {
	enum stream_demux_state state;
	size_t hdr_len;	    /* header bytes seen so far (0..STREAM_HEADER_LEN-1) */
	uint32_t remaining; /* payload bytes still to come (the size, while in the header) */
	int stream;	    /* the enum stream_type of the current frame */
};

void stream_demux_init(struct stream_demux *d);
/*
 * Consumes from in[0..len) and sets *ret_consumed to the bytes of `in` used.
 * Returns 1 with *ret_stream (an enum stream_type) and *ret_data, a run of
 * payload inside `in` (maybe part of a frame: call again with the rest);
 * -2 when all of `in` was used and more is needed; -1 if a header is
 * malformed (unknown type, nonzero padding, size over STREAM_FRAME_MAX), after
 * which every call returns -1 and *ret_consumed is not set. Zero-length
 * frames are skipped.
 */
int stream_demux_feed(struct stream_demux *d, const char *in, size_t len, size_t *ret_consumed, int *ret_stream,
		      struct slice *ret_data);
/* True between frames: EOF here is a clean end, anywhere else a truncation. */
bool stream_demux_at_boundary(const struct stream_demux *d);

#endif
