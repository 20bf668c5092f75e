/*
 * stream.c - Docker's multiplexed stdout/stderr frames.
 *
 * The header is checked a byte at a time as it arrives, so output that was
 * never multiplexed (an exec started with Tty: true, or a plain HTTP body)
 * fails on its first byte rather than being read as a size.  The daemon
 * always writes zero padding, and the size is capped: a header claiming 4 GB
 * is rejected before any payload is expected.  Payload is handed out as it
 * arrives, with no copying, so memory use does not depend on the frame size.
 */
#include <string.h>

#include "engine/stream.h"

void stream_demux_init(struct stream_demux *d)
{
	memset(d, 0, sizeof(*d));
	d->state = STREAM_DEMUX_HEADER;
}

int stream_demux_feed(struct stream_demux *d, const char *in, size_t len, size_t *ret_consumed, int *ret_stream,
		      struct slice *ret_data)
{
	size_t i = 0;

	while (i < len) {
		switch (d->state) {
		case STREAM_DEMUX_HEADER: {
			unsigned char c = (unsigned char)in[i];
			if (d->hdr_len == 0) {
				if (c > STREAM_SYSTEMERR)
					goto malformed;
				d->stream = c;
				d->remaining = 0;
			} else if (d->hdr_len < 4) {
				if (c != 0)
					goto malformed;
			} else {
				d->remaining = d->remaining << 8 | c;
			}
			i++;
			if (++d->hdr_len < STREAM_HEADER_LEN)
				break;
			if (d->remaining > STREAM_FRAME_MAX)
				goto malformed;
			d->hdr_len = 0;
			if (d->remaining > 0)
				d->state = STREAM_DEMUX_PAYLOAD;
			break;
		}
		case STREAM_DEMUX_PAYLOAD: {
			size_t n = len - i;
			if (n > d->remaining)
				n = d->remaining;
			*ret_stream = d->stream;
			*ret_data = slice_make(in + i, n);
			d->remaining -= (uint32_t)n;
			if (d->remaining == 0)
				d->state = STREAM_DEMUX_HEADER;
			*ret_consumed = i + n;
			return 1;
		}
		case STREAM_DEMUX_ERROR:
			return -1;
		}
	}
	if (d->state == STREAM_DEMUX_ERROR)
		return -1;
	*ret_consumed = i;
	return -2;

malformed:
	d->state = STREAM_DEMUX_ERROR;
	return -1;
}

bool stream_demux_at_boundary(const struct stream_demux *d)
{
	return d->state == STREAM_DEMUX_HEADER && d->hdr_len == 0;
}
