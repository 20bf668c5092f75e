/*
 * test-checkpoint.c - finding a checkpoint by id or name (checkpoint_find):
 * ids win, names keep to a session when one is given, an ambiguous name and
 * an unknown one are refused with the code the tools return, and a
 * checkpoint that lost its tag (deleted, waiting for what rests on it) is
 * found by neither.
 */
#include "testutil.h"

#include <errno.h>
#include <string.h>

#include "sandbox/checkpoint.h"

static void put(struct checkpoint *c, const char *id, const char *name, const char *session, bool tagged)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->id, sizeof(c->id), "%s", id);
	snprintf(c->name, sizeof(c->name), "%s", name);
	snprintf(c->session, sizeof(c->session), "%s", session);
	c->tagged = tagged;
}

static void test_find(void **state)
{
	(void)state;
	struct checkpoint list[5];
	struct err e;
	put(&list[0], "aaaaaaaaaaaa", "good", "111111111111", true);
	put(&list[1], "bbbbbbbbbbbb", "good", "222222222222", true);
	put(&list[2], "cccccccccccc", "only", "111111111111", true);
	put(&list[3], "dddddddddddd", "gone", "111111111111", false);
	/* a name that is another's id: the id wins */
	put(&list[4], "eeeeeeeeeeee", "aaaaaaaaaaaa", "222222222222", true);

	assert_ptr_equal(checkpoint_find(list, 5, "bbbbbbbbbbbb", NULL, &e), &list[1]);
	assert_ptr_equal(checkpoint_find(list, 5, "bbbbbbbbbbbb", "111111111111", &e), &list[1]);
	assert_ptr_equal(checkpoint_find(list, 5, "aaaaaaaaaaaa", NULL, &e), &list[0]);
	assert_ptr_equal(checkpoint_find(list, 5, "only", NULL, &e), &list[2]);
	assert_ptr_equal(checkpoint_find(list, 5, "good", "222222222222", &e), &list[1]);

	err_clear(&e);
	assert_null(checkpoint_find(list, 5, "good", NULL, &e));
	assert_int_equal(e.code, ERRCODE_INVALID_ARGUMENT);
	assert_non_null(strstr(e.msg, "2 checkpoints are named 'good'"));

	err_clear(&e);
	assert_null(checkpoint_find(list, 5, "only", "222222222222", &e));
	assert_int_equal(e.code, ERRCODE_CHECKPOINT_NOT_FOUND);
	assert_non_null(strstr(e.msg, "of this session"));

	err_clear(&e);
	assert_null(checkpoint_find(list, 5, "dddddddddddd", NULL, &e));
	assert_int_equal(e.code, ERRCODE_CHECKPOINT_NOT_FOUND);
	assert_null(checkpoint_find(list, 5, "gone", NULL, &e));
	assert_null(checkpoint_find(list, 0, "good", NULL, &e));
	assert_string_equal(errcode_name(ERRCODE_CHECKPOINT_NOT_FOUND), "checkpoint_not_found");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_find),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
