/*
 * repl.h - the framing between the server and the Python driver (driver.py)
 * that runs inside a session's container.
 *
 * Both directions carry frames of a 5-byte header and a payload:
 *
 *	[type, 1 byte][size, 4 bytes big-endian]  payload (size bytes)
 *
 * server -> driver: 'c' a cell to run (JSON {cell, code, workspace, cap}),
 *                   'i' interrupt cell N (its number in ASCII).
 * driver -> server: 'h' ready (JSON {python, pid}), 'o' / 'e' a chunk of the
 *                   cell's stdout / stderr, 'f' a PNG figure, 'r' the cell's
 *                   result (JSON, last frame of a cell).
 *
 * User code never writes to the protocol fd (the driver moves fds 1 and 2
 * onto pipes it forwards as 'o'/'e' frames), so any bytes a cell prints
 * arrive as payload, whatever they contain.  The parser is pure like
 * stream_demux_feed: payload comes back as slices of the caller's input.
 */
#ifndef REPL_H
#define REPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"

/* Largest payload accepted in one frame (a figure PNG is the biggest). */
#define REPL_FRAME_MAX (16u << 20)
/* Length of a frame header. */
#define REPL_HEADER_LEN 5

enum repl_type {
	REPL_CODE = 'c',
	REPL_INTERRUPT = 'i',
	REPL_HELLO = 'h',
	REPL_STDOUT = 'o',
	REPL_STDERR = 'e',
	REPL_FIGURE = 'f',
	REPL_RESULT = 'r',
};

enum repl_frame_state {
	REPL_FRAME_HEADER,  /* reading a header; hdr_len bytes of it seen */
	REPL_FRAME_PAYLOAD, /* inside a payload, `remaining` bytes left */
	REPL_FRAME_ERROR,   /* a malformed header was seen; stays here */
};

struct repl_frame {
	enum repl_frame_state state;
	size_t hdr_len;	    /* header bytes seen so far (0..REPL_HEADER_LEN-1) */
	uint32_t size;	    /* the current frame's payload size */
	uint32_t remaining; /* payload bytes still to come */
	int type;	    /* the current frame's enum repl_type */
};

/* One run of a frame's payload: frames split across reads come in several. */
struct repl_piece {
	int type;	   /* enum repl_type (driver -> server types only) */
	struct slice data; /* inside the caller's input; empty only for an empty frame */
	uint32_t size;	   /* the whole frame's payload size */
	bool first, last;  /* this piece starts / ends its frame */
};

void repl_frame_init(struct repl_frame *f);
/*
 * Consumes from in[0..len) and sets *ret_consumed to the bytes used.
 * Returns 1 with *ret, a piece of payload (an empty frame yields one empty
 * piece with first and last set); -2 when all of `in` was used and more is
 * needed; -1 on a malformed header (a type the driver does not send, a size
 * over REPL_FRAME_MAX), after which every call returns -1 and *ret_consumed
 * is not set.
 */
int repl_frame_feed(struct repl_frame *f, const char *in, size_t len, size_t *ret_consumed, struct repl_piece *ret);
/* True between frames: EOF here is a clean end, anywhere else a truncation. */
bool repl_frame_at_boundary(const struct repl_frame *f);
/* Writes the header of a frame of this type and payload size. */
void repl_frame_header(char out[REPL_HEADER_LEN], int type, uint32_t size);

#endif
