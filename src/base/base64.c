/*
 * base64.c - encode in groups of three bytes; decode a character at a time
 * through a 256-entry table, so every byte value is classified without a
 * branch on ranges and input may stop anywhere.
 */
#include "base/base64.h"

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* Decode classes beyond the 0..63 values. */
#define B64_BAD 0xff
#define B64_PAD 0xfe
#define B64_SPACE 0xfd

static unsigned char decode_class(unsigned char c);

size_t base64_encoded_len(size_t n)
{
	return (n + 2) / 3 * 4;
}

void base64_encode(const void *in, size_t n, char *out)
{
	const unsigned char *p = in;
	size_t i = 0;

	for (; n - i >= 3; i += 3) {
		unsigned v = (unsigned)p[i] << 16 | (unsigned)p[i + 1] << 8 | p[i + 2];
		*out++ = alphabet[v >> 18];
		*out++ = alphabet[(v >> 12) & 63];
		*out++ = alphabet[(v >> 6) & 63];
		*out++ = alphabet[v & 63];
	}
	if (n - i == 1) {
		unsigned v = (unsigned)p[i] << 16;
		*out++ = alphabet[v >> 18];
		*out++ = alphabet[(v >> 12) & 63];
		*out++ = '=';
		*out++ = '=';
	} else if (n - i == 2) {
		unsigned v = (unsigned)p[i] << 16 | (unsigned)p[i + 1] << 8;
		*out++ = alphabet[v >> 18];
		*out++ = alphabet[(v >> 12) & 63];
		*out++ = alphabet[(v >> 6) & 63];
		*out++ = '=';
	}
	*out = '\0';
}

size_t base64_decoded_max(size_t len)
{
	return len / 4 * 3 + 3;
}

static unsigned char decode_class(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return (unsigned char)(c - 'A');
	if (c >= 'a' && c <= 'z')
		return (unsigned char)(c - 'a' + 26);
	if (c >= '0' && c <= '9')
		return (unsigned char)(c - '0' + 52);
	switch (c) {
	case '+':
		return 62;
	case '/':
		return 63;
	case '=':
		return B64_PAD;
	case ' ':
	case '\t':
	case '\r':
	case '\n':
		return B64_SPACE;
	default:
		return B64_BAD;
	}
}

long long base64_decode(const char *in, size_t len, void *out)
{
	unsigned char *o = out;
	unsigned acc = 0;
	size_t got = 0, pads = 0, written = 0;

	for (size_t i = 0; i < len; i++) {
		unsigned char v = decode_class((unsigned char)in[i]);
		if (v == B64_SPACE)
			continue;
		if (v == B64_BAD)
			return -1;
		if (v == B64_PAD) {
			/* padding only completes a group of 2 or 3 characters */
			if (got % 4 < 2 || got % 4 + pads >= 4)
				return -1;
			pads++;
			continue;
		}
		if (pads)
			return -1; /* data after padding */
		acc = acc << 6 | v;
		if (++got % 4 == 0) {
			o[written++] = (unsigned char)(acc >> 16);
			o[written++] = (unsigned char)(acc >> 8);
			o[written++] = (unsigned char)acc;
			acc = 0;
		}
	}
	switch (got % 4) {
	case 0:
		if (pads)
			return -1;
		break;
	case 1:
		return -1;
	case 2:
		if (pads && pads != 2)
			return -1;
		o[written++] = (unsigned char)(acc >> 4);
		break;
	case 3:
		if (pads && pads != 1)
			return -1;
		o[written++] = (unsigned char)(acc >> 10);
		o[written++] = (unsigned char)(acc >> 2);
		break;
	}
	return (long long)written;
}
