/*
 * agentproto.h - the framing between the server and sandbox-mcp-agent, the
 * small static program that runs commands inside a session's container
 * (src/agent/agent.c, docs/agent.md).
 *
 * Both directions carry frames like repl.h's, a 5-byte header then a payload:
 *
 *	[type, 1 byte][size, 4 bytes big-endian]  payload (size bytes)
 *
 * server -> agent: 'R' run a command (payload: fields, see below),
 *                  'B' run one of the agent's built-in file operations
 *                  (same fields: the first 'a' names it, the others are
 *                  its arguments; no 's' or 'e'), answered like 'R',
 *                  'I' bytes for its stdin, 'C' close its stdin,
 *                  'K' kill its process group.
 * agent -> server: 'H' hello ("sandbox-mcp-agent <version> <pid>"),
 *                  'P' the command started ("<pgid>"),
 *                  'F' it could not start ("<errno> <message>"),
 *                  'O' / 'E' a chunk of its stdout / stderr,
 *                  'X' it ended ("<exit code> <cpu ms> <max rss KiB>";
 *                  the last frame of a command).
 *
 * An 'R' payload is a list of fields, each a tag byte, the value and a NUL:
 * 'a' one argv element (in order), 's' a shell command (run as
 * /bin/sh -c), 'e' one "K=V" environment entry, 'd' the working directory.
 *
 * This file has no project includes: the agent is built from it with
 * musl-gcc, apart from the server.  The parsers are pure: payload comes back
 * as pointers into the caller's input.
 */
#ifndef AGENTPROTO_H
#define AGENTPROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The egress relay (`agent --relay PORT`, src/agent/relay.c, docs/egress.md)
 * speaks the same frames with types of its own.  It listens on the
 * sandbox's loopback and carries each accepted connection to the server,
 * which is the proxy.  Every payload but 'H' and 'F' starts with the
 * connection's id, 4 bytes big-endian, chosen by the agent and never reused:
 *
 * agent -> server: 'H' listening ("relay <port>"), 'F' could not listen
 *                  ("<errno> <message>"), 'N' a connection was accepted,
 *                  'D' bytes it sent, 'Z' it sent EOF, 'K' it is gone,
 *                  'W' credit: then 4 more bytes, a count of the server's
 *                  'D' bytes written to it.
 * server -> agent: 'D' bytes for it, 'Z' no more bytes (shut down its write
 *                  side), 'K' close it, 'W' credit as above.
 *
 * Flow control: each side may have at most AGENTPROTO_RELAY_WINDOW bytes of
 * one connection unacknowledged; more is a protocol error.  So neither side
 * buffers more than a window per connection, and one connection that does
 * not read stalls only itself.  After a 'K' either way the id is dead, and
 * frames for it that cross the 'K' are dropped.
 */
#define AGENTPROTO_RELAY_TO_AGENT "DZKW"
#define AGENTPROTO_RELAY_TO_SERVER "HFNDZKW"
/* Bytes of data in one 'D' frame at most (the id not counted). */
#define AGENTPROTO_RELAY_DATA_MAX (64u << 10)
/* Unacknowledged bytes per connection and direction. */
#define AGENTPROTO_RELAY_WINDOW (512u << 10)
/* Connections the agent keeps open at once; it closes any past this at once. */
#define AGENTPROTO_RELAY_CONNS_MAX 256
/* Length of a relay frame's fixed part: header and id ('W' adds 4). */
#define AGENTPROTO_RELAY_HEAD (AGENTPROTO_HEADER_LEN + 4)

/* Largest payload accepted in one frame either way. */
#define AGENTPROTO_FRAME_MAX (4u << 20)
/* Length of a frame header. */
#define AGENTPROTO_HEADER_LEN 5
/* Most fields in an 'R' payload (argv and env entries together). */
#define AGENTPROTO_FIELDS_MAX 4096

/* The frame types each side accepts. */
#define AGENTPROTO_TO_AGENT "RBICK"
#define AGENTPROTO_TO_SERVER "HPFOEX"

enum agentproto_state {
	AGENTPROTO_HEADER,  /* reading a header; hdr_len bytes of it seen */
	AGENTPROTO_PAYLOAD, /* inside a payload, `remaining` bytes left */
	AGENTPROTO_ERROR,   /* a malformed header was seen; stays here */
};

struct agentproto {
	const char *types; /* the types accepted (AGENTPROTO_TO_*) */
	enum agentproto_state state;
	size_t hdr_len;
	uint32_t size;
	uint32_t remaining;
	int type;
};

/* One run of a frame's payload: frames split across reads come in several. */
struct agentproto_piece {
	int type;
	const char *p; /* inside the caller's input */
	size_t n;      /* 0 only for an empty frame */
	uint32_t size; /* the whole frame's payload size */
	bool first, last;
};

/* The exit report of an 'X' frame. */
struct agentproto_exit {
	int code;	    /* 0..255; 128+N for signal N */
	uint64_t cpu_ms;    /* user + system time of the command's waited-for processes */
	uint64_t maxrss_kb; /* peak RSS of its largest process */
};

/* types: AGENTPROTO_TO_AGENT or AGENTPROTO_TO_SERVER (borrowed, static). */
void agentproto_init(struct agentproto *f, const char *types);
/*
 * Consumes from in[0..len) and sets *ret_consumed. 1 with *ret, a piece of
 * payload (an empty frame yields one empty piece with first and last set);
 * -2 when all of `in` was used and more is needed; -1 on a malformed header
 * (a type not in f->types, a size over AGENTPROTO_FRAME_MAX), after which
 * every call returns -1 and *ret_consumed is not set.
 */
int agentproto_feed(struct agentproto *f, const char *in, size_t len, size_t *ret_consumed,
		    struct agentproto_piece *ret);
/* True between frames: EOF here is a clean end, anywhere else a truncation. */
bool agentproto_at_boundary(const struct agentproto *f);
/* Writes the header of a frame of this type and payload size. */
void agentproto_header(char out[AGENTPROTO_HEADER_LEN], int type, uint32_t size);
/*
 * The next field of an 'R' payload p[0..len) from *off: 1 with its tag and
 * value (NUL-terminated in p, value[value_len] == '\0') and *off moved past
 * it; 0 at the end; -1 when the field has no NUL, an empty tag or a tag
 * outside "asde".
 */
int agentproto_field(const char *p, size_t len, size_t *off, int *ret_tag, const char **ret_value,
		     size_t *ret_value_len);
/* Parses an 'X' payload. 0, or -1 when it is not three decimal numbers. */
int agentproto_parse_exit(const char *p, size_t len, struct agentproto_exit *ret);

/*
 * Collects whole relay frames out of pieces: a payload of at most
 * AGENTPROTO_RELAY_DATA_MAX + 8 bytes is gathered into buf.
 */
struct agentproto_whole {
	struct agentproto f;
	uint32_t n; /* payload bytes gathered */
	char buf[AGENTPROTO_RELAY_DATA_MAX + 8];
};
void agentproto_whole_init(struct agentproto_whole *w, const char *types);
/*
 * Consumes from in[0..len) and sets *ret_consumed. 1 when a whole frame is
 * in w (w->f.type, w->buf[0..w->n)), good until the next call; -2 when all
 * of `in` was used and more is needed; -1 on a malformed header or a frame
 * too big for buf (every later call returns -1).
 */
int agentproto_whole_feed(struct agentproto_whole *w, const char *in, size_t len, size_t *ret_consumed);
/* Writes a relay frame's header and id: AGENTPROTO_RELAY_HEAD bytes; size counts the id and what follows. */
void agentproto_relay_head(char out[AGENTPROTO_RELAY_HEAD], int type, uint32_t size, uint32_t id);
/* The 4-byte big-endian number at p. */
uint32_t agentproto_u32(const char *p);

/* Longest head line of the built-in "read" (two numbers, a space, a newline). */
#define AGENTPROTO_HEAD_MAX 48
/*
 * The head line the built-in "read" writes before the file's bytes:
 * "<size> <mode>\n", both decimal, mode at most 07777. Looks for it at the
 * start of p[0..len): 1 with the size, the mode and *ret_len (the line's
 * length, newline included); 0 when no newline came yet and len is under
 * AGENTPROTO_HEAD_MAX; -1 when it is malformed.
 */
int agentproto_parse_head(const char *p, size_t len, uint64_t *ret_size, unsigned *ret_mode, size_t *ret_len);

#endif
