/*
 * base64.h - RFC 4648 base64 (standard alphabet, '=' padding), for images in
 * tool results and binary file content.
 *
 * Pure: no allocation, no I/O.  The caller sizes the output with
 * base64_encoded_len / base64_decoded_max.
 */
#ifndef BASE64_H
#define BASE64_H

#include <stddef.h>

/* Largest input base64_encoded_len accepts (its result must fit a size_t). */
#define BASE64_INPUT_MAX (((size_t)-1 / 4) * 3 - 3)

/* Characters base64_encode writes for n bytes (not counting the NUL). */
size_t base64_encoded_len(size_t n);
/* Writes base64_encoded_len(n) characters and a NUL to out. n <= BASE64_INPUT_MAX. */
void base64_encode(const void *in, size_t n, char *out);
/* Bytes base64_decode may write for len characters (an upper bound). */
size_t base64_decoded_max(size_t len);
/*
 * Decodes in[0..len): the standard alphabet, with or without '=' padding;
 * ASCII whitespace is skipped. Returns bytes written to out (room for
 * base64_decoded_max(len)), or -1 on any other character, misplaced padding
 * or a dangling final character.
 */
long long base64_decode(const char *in, size_t len, void *out);

#endif
