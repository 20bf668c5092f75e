/*
 * tlshello.c - the SNI of a ClientHello (RFC 8446 4.1.2, RFC 6066 3).
 *
 * A ClientHello may come in several handshake records: their payloads are
 * gathered (up to TLSHELLO_MAX) before the message is read.  Every length
 * is checked against what is left before it is used.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "proxy/tlshello.h"

struct rd {
	const unsigned char *p;
	size_t n, off;
};

static bool take(struct rd *r, size_t k, const unsigned char **ret)
{
	if (r->n - r->off < k)
		return false;
	if (ret)
		*ret = r->p + r->off;
	r->off += k;
	return true;
}

static bool u8(struct rd *r, size_t *v)
{
	const unsigned char *q;
	if (!take(r, 1, &q))
		return false;
	*v = q[0];
	return true;
}

static bool u16(struct rd *r, size_t *v)
{
	const unsigned char *q;
	if (!take(r, 2, &q))
		return false;
	*v = (size_t)q[0] << 8 | q[1];
	return true;
}

/* The server_name extension's body. FOUND or NOT_TLS. */
static int server_name(struct rd *e, char *name, size_t namesz)
{
	size_t list, type, len;
	const unsigned char *q;
	bool found = false;
	if (!u16(e, &list) || list != e->n - e->off || list == 0)
		return TLSHELLO_NOT_TLS;
	while (e->off < e->n) {
		if (!u8(e, &type) || !u16(e, &len) || !take(e, len, &q))
			return TLSHELLO_NOT_TLS;
		if (type != 0)
			continue;
		if (found || len == 0 || len >= namesz || memchr(q, '\0', len))
			return TLSHELLO_NOT_TLS;
		memcpy(name, q, len);
		name[len] = '\0';
		found = true;
	}
	return found ? TLSHELLO_FOUND : TLSHELLO_NOT_TLS;
}

/* A whole ClientHello body (after the 4-byte handshake header). */
static int client_hello(struct rd *r, char *name, size_t namesz)
{
	size_t len, ext_len;
	if (!take(r, 2 + 32, NULL) || !u8(r, &len) || len > 32 || !take(r, len, NULL) || !u16(r, &len) || len < 2 ||
	    len % 2 || !take(r, len, NULL) || !u8(r, &len) || len < 1 || !take(r, len, NULL))
		return TLSHELLO_NOT_TLS;
	if (r->off == r->n)
		return TLSHELLO_NO_SNI; /* no extensions at all */
	if (!u16(r, &ext_len) || ext_len != r->n - r->off)
		return TLSHELLO_NOT_TLS;
	int found = TLSHELLO_MORE; /* no server_name seen yet */
	while (r->off < r->n) {
		size_t type;
		const unsigned char *q;
		if (!u16(r, &type) || !u16(r, &len) || !take(r, len, &q))
			return TLSHELLO_NOT_TLS;
		if (type == 0 && found == TLSHELLO_FOUND)
			return TLSHELLO_NOT_TLS; /* two server_name extensions */
		if (type == 0) {
			struct rd e = { q, len, 0 };
			found = server_name(&e, name, namesz);
			if (found != TLSHELLO_FOUND)
				return found;
		}
	}
	return found == TLSHELLO_FOUND ? TLSHELLO_FOUND : TLSHELLO_NO_SNI;
}

int tlshello_sni(const unsigned char *p, size_t n, char *name, size_t namesz)
{
	static const size_t rec_hdr = 5;
	unsigned char hs[TLSHELLO_MAX];
	size_t hs_len = 0, off = 0;

	for (;;) {
		/* the handshake message is whole once its 4-byte header's length is there */
		if (hs_len >= 4) {
			if (hs[0] != 1)
				return TLSHELLO_NOT_TLS;
			size_t msg = (size_t)hs[1] << 16 | (size_t)hs[2] << 8 | hs[3];
			if (msg + 4 > sizeof(hs))
				return TLSHELLO_NOT_TLS;
			if (hs_len >= msg + 4) {
				struct rd r = { hs + 4, msg, 0 };
				return client_hello(&r, name, namesz);
			}
		}
		if (off >= TLSHELLO_MAX)
			return TLSHELLO_NOT_TLS; /* more records than a hello may take, whatever follows */
		if (n - off < rec_hdr) {
			/* what there is must look like the start of a handshake record */
			if (n > off && p[off] != 0x16)
				return TLSHELLO_NOT_TLS;
			if (n - off > 1 && p[off + 1] != 0x03)
				return TLSHELLO_NOT_TLS;
			return off >= TLSHELLO_MAX ? TLSHELLO_NOT_TLS : TLSHELLO_MORE;
		}
		size_t rec = (size_t)p[off + 3] << 8 | p[off + 4];
		if (p[off] != 0x16 || p[off + 1] != 0x03 || rec == 0 || rec > sizeof(hs) - hs_len)
			return TLSHELLO_NOT_TLS;
		if (n - off - rec_hdr < rec)
			return TLSHELLO_MORE;
		memcpy(hs + hs_len, p + off + rec_hdr, rec);
		hs_len += rec;
		off += rec_hdr + rec;
	}
}
