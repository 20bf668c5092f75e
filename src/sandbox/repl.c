/*
 * repl.c - frames from the Python driver.
 *
 * The type byte is checked as soon as it arrives, so a stream that is not
 * ours (a traceback printed by a python3 too broken to run the driver, a
 * user process writing to the protocol fd) fails on its first byte.  Sizes
 * are capped before any payload is expected.  Unlike Docker's demuxer, an
 * empty frame is reported: 'h' and 'r' frames mean something by existing.
 */
#include <string.h>

#include "sandbox/repl.h"

static bool driver_type(unsigned char c);

static bool driver_type(unsigned char c)
{
	switch (c) {
	case REPL_HELLO:
	case REPL_STDOUT:
	case REPL_STDERR:
	case REPL_FIGURE:
	case REPL_RESULT:
		return true;
	default:
		return false;
	}
}

void repl_frame_init(struct repl_frame *f)
{
	memset(f, 0, sizeof(*f));
	f->state = REPL_FRAME_HEADER;
}

int repl_frame_feed(struct repl_frame *f, const char *in, size_t len, size_t *ret_consumed, struct repl_piece *ret)
{
	size_t i = 0;

	while (i < len || (f->state == REPL_FRAME_PAYLOAD && f->size == 0)) {
		switch (f->state) {
		case REPL_FRAME_HEADER: {
			unsigned char c = (unsigned char)in[i++];
			if (f->hdr_len == 0) {
				if (!driver_type(c))
					goto malformed;
				f->type = c;
				f->size = 0;
			} else {
				f->size = f->size << 8 | c;
			}
			if (++f->hdr_len < REPL_HEADER_LEN)
				break;
			if (f->size > REPL_FRAME_MAX)
				goto malformed;
			f->hdr_len = 0;
			f->remaining = f->size;
			f->state = REPL_FRAME_PAYLOAD;
			break;
		}
		case REPL_FRAME_PAYLOAD: {
			size_t n = len - i;
			if (n > f->remaining)
				n = f->remaining;
			ret->type = f->type;
			ret->data = slice_make(in + i, n);
			ret->size = f->size;
			ret->first = f->remaining == f->size;
			f->remaining -= (uint32_t)n;
			ret->last = f->remaining == 0;
			if (ret->last) {
				f->state = REPL_FRAME_HEADER;
				f->size = 0;
			}
			*ret_consumed = i + n;
			return 1;
		}
		case REPL_FRAME_ERROR:
			return -1;
		}
	}
	if (f->state == REPL_FRAME_ERROR)
		return -1;
	*ret_consumed = i;
	return -2;

malformed:
	f->state = REPL_FRAME_ERROR;
	return -1;
}

bool repl_frame_at_boundary(const struct repl_frame *f)
{
	return f->state == REPL_FRAME_HEADER && f->hdr_len == 0;
}

void repl_frame_header(char out[REPL_HEADER_LEN], int type, uint32_t size)
{
	out[0] = (char)type;
	out[1] = (char)(size >> 24);
	out[2] = (char)(size >> 16);
	out[3] = (char)(size >> 8);
	out[4] = (char)size;
}
