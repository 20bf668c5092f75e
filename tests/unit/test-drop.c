/*
 * test-drop.c - drop_scrub, the last step before a transfer's messages reach
 * the model: the drop's path and the session's slot names never survive it,
 * whole, glued to other hex digits or cut short by a cap, at every length of
 * the text, in a buffer with nothing writable past its end.
 */
#include "testutil.h"

#include <string.h>

#include "sandbox/agentctl.h"
#include "sandbox/drop.h"

static const char *const names[SESSION_DROP_SLOTS] = {
	"0123456789abcdef0123456789abcdef",
	"fedcba9876543210fedcba9876543210",
	"a1b2c3d4e5f60718293a4b5c6d7e8f90",
	"00112233445566778899aabbccddeeff",
};

static struct session *with_slots(void)
{
	struct session *s = xcalloc(1, sizeof(*s));
	for (int i = 0; i < SESSION_DROP_SLOTS; i++)
		snprintf(s->drop_slot[i], sizeof(s->drop_slot[i]), "%s", names[i]);
	return s;
}

/* No DROP_SCRUB_RUN hex digits of any slot name, and not the drop's path, are in text. */
static void assert_clean(const char *text)
{
	assert_null(strstr(text, AGENTCTL_DROP));
	for (int i = 0; i < SESSION_DROP_SLOTS; i++)
		for (size_t off = 0; off + DROP_SCRUB_RUN <= SESSION_DROP_SLOT_LEN; off++)
			if (memmem(text, strlen(text), names[i] + off, DROP_SCRUB_RUN))
				fail_msg("'%s' keeps part of slot %d", text, i);
}

/* Scrubs text in a guarded buffer of exactly strlen + 1 bytes; returns a copy of the result. */
static char *scrub_guarded(const struct session *s, const char *text)
{
	size_t n = strlen(text) + 1;
	struct guarded g = guarded_copy(text, n);
	drop_scrub(s, g.p, n);
	assert_true(strlen(g.p) < n);
	char *out = xstrdup(g.p);
	guarded_free(&g);
	return out;
}

static void test_cases(void **state)
{
	struct session *s = with_slots();
	char in[512];
	const struct {
		const char *fmt, *want;
	} cases[] = {
		{ "x: cannot open " AGENTCTL_DROP "/%s/t/x: Permission denied",
		  "x: cannot open the staged copy/t/x: Permission denied" },
		{ "%s and %s", "the staged copy and the staged copy" },
		{ AGENTCTL_DROP ": group-writable%.0s", "the staged copy: group-writable" },
		{ "glued abc%sdef end", "glued the staged copy end" },
		/* a run shorter than the placeholder: the placeholder is cut to the buffer */
		{ "cut %.10s", "cut the staged" },
		{ "tail %.16s.", "tail the staged copy." },
		{ "six %.6s.", "six the sta" },
		{ "short %.5s stays%.0s", "short 01234 stays" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		snprintf(in, sizeof(in), cases[i].fmt, names[0], names[0]);
		char *out = scrub_guarded(s, in);
		assert_string_equal(out, cases[i].want);
		free(out);
	}
	/* what names no slot is left alone: numbers, a container id, words with hex letters */
	const char *plain = "the files add up to more than the 104857600-byte limit; container "
			    "4b825dc642cb6eb9a060e54bf8d69288fbee4904aaaaaaaaaaaaaaaaaaaaaaaa: decaf beef";
	char *out = scrub_guarded(s, plain);
	assert_string_equal(out, plain);
	free(out);
	free(s);
}

/* Every prefix of texts holding each slot: clean, never longer, nothing written past the buffer. */
static void test_every_length(void **state)
{
	struct session *s = with_slots();
	char full[1024];

	for (int i = 0; i < SESSION_DROP_SLOTS; i++) {
		snprintf(full, sizeof(full), "copy of %s/%s/f/name failed; %s%s again", AGENTCTL_DROP, names[i],
			 names[i], names[(i + 1) % SESSION_DROP_SLOTS]);
		for (size_t k = 0; k <= strlen(full); k++) {
			char prefix[1024];
			snprintf(prefix, k + 1, "%s", full);
			char *out = scrub_guarded(s, prefix);
			assert_clean(out);
			free(out);
		}
	}
	/* a session that never used the drop has no names: only the path goes */
	struct session *none = xcalloc(1, sizeof(*none));
	char *out = scrub_guarded(none, "at " AGENTCTL_DROP " 0123456789abcdef");
	assert_string_equal(out, "at the staged copy 0123456789abcdef");
	free(out);
	free(none);
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cases),
		cmocka_unit_test(test_every_length),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
