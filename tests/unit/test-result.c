/*
 * test-result.c - tool_result_seal, the last step before a result is sent:
 * a failure's text copied into structuredContent.error.output (Codex shows
 * only structuredContent), the text held under TOOL_RESULT_BUDGET (Claude
 * Code previews bigger results) with cuts on UTF-8 character starts, and the
 * pause after a progress notification (SDK 1.x reads one sent with the result
 * as an error).
 */
#include "testutil.h"

#include "base/util.h"
#include "tools/tools.h"

static struct config cfg;
static struct tool_services svc = { .cfg = &cfg };

static struct tool_ctx make_ctx(void)
{
	struct tool_ctx ctx = { .svc = &svc };
	cfg.output_bytes = 8192;
	return ctx;
}

static size_t dumped(const json_t *j)
{
	return j ? json_dumpb(j, NULL, 0, JSON_COMPACT) : 0;
}

static size_t text_size(const struct tool_result *res)
{
	size_t i, n = dumped(res->structured);
	json_t *b;
	json_array_foreach (res->content, i, b)
		if (strcmp(json_string_value(json_object_get(b, "type")), "image") != 0 &&
		    strcmp(json_string_value(json_object_get(b, "type")), "resource") != 0)
			n += dumped(b);
	return n;
}

static void add_text(struct tool_result *res, const char *p, size_t n)
{
	json_array_append_new(res->content, json_pack("{s:s, s:s%}", "type", "text", "text", p, n));
}

static void test_failure_folded(void **state)
{
	struct tool_ctx ctx = make_ctx();
	struct tool_result res;

	tool_result_init(&res);
	add_text(&res, "stdout:\nstep 3\n", 15);
	json_array_append_new(res.content, json_pack("{s:s, s:s, s:s}", "type", "image", "data", "iVBORw0K", "mimeType",
						     "image/png"));
	add_text(&res, "Traceback: KeyboardInterrupt", 28);
	/* as add_outcome and tool_fail build it: the error first */
	json_array_insert_new(res.content, 0, json_pack("{s:s, s:s}", "type", "text", "text", "Error (timeout): slow"));
	res.is_error = true;
	tool_structured(&res, json_pack("{s:{s:s, s:s}}", "error", "code", "timeout", "message", "slow"));
	tool_result_seal(&ctx, &res);
	const char *out = json_string_value(json_object_get(json_object_get(res.structured, "error"), "output"));
	assert_non_null(out);
	assert_string_equal(out, "stdout:\nstep 3\n\nTraceback: KeyboardInterrupt\n[1 image in the result's content]");
	tool_result_finish(&res);

	/* a failure whose structuredContent has more than the error is left alone (run_command's streams) */
	tool_result_init(&res);
	add_text(&res, "stdout:\nx", 9);
	res.is_error = true;
	tool_structured(&res,
			json_pack("{s:s, s:{s:s, s:s}}", "stdout", "x", "error", "code", "timeout", "message", "m"));
	tool_result_seal(&ctx, &res);
	assert_null(json_object_get(json_object_get(res.structured, "error"), "output"));
	tool_result_finish(&res);

	/* pip's and git's own output is kept as it is */
	tool_result_init(&res);
	add_text(&res, "more text", 9);
	res.is_error = true;
	tool_structured(&res, json_pack("{s:{s:s, s:s, s:s}}", "error", "code", "pip_failed", "message", "m", "output",
					"pip said"));
	tool_result_seal(&ctx, &res);
	assert_string_equal(json_string_value(json_object_get(json_object_get(res.structured, "error"), "output")),
			    "pip said");
	tool_result_finish(&res);

	/* a long failure text is cut in the middle to the output cap */
	tool_result_init(&res);
	char *big = malloc(100000);
	assert_non_null(big);
	memset(big, 'a', 100000);
	memcpy(big + 100000 - 8, "THE-END\n", 8);
	add_text(&res, big, 100000);
	res.is_error = true;
	tool_structured(&res, json_pack("{s:{s:s, s:s}}", "error", "code", "timeout", "message", "m"));
	tool_result_seal(&ctx, &res);
	out = json_string_value(json_object_get(json_object_get(res.structured, "error"), "output"));
	assert_non_null(out);
	assert_true(strlen(out) < 8192 + 200);
	assert_non_null(strstr(out, "bytes cut from the middle"));
	assert_non_null(strstr(out, "THE-END\n"));
	assert_true(text_size(&res) <= TOOL_RESULT_BUDGET);
	free(big);
	tool_result_finish(&res);
}

/* Every string of the result is whole UTF-8 (jansson refuses anything else) and the total fits. */
static void check_fits(struct tool_result *res, const char *first)
{
	assert_true(text_size(res) <= TOOL_RESULT_BUDGET);
	assert_string_equal(json_string_value(json_object_get(json_array_get(res->content, 0), "text")), first);
}

static void test_budget(void **state)
{
	struct tool_ctx ctx = make_ctx();
	struct tool_result res;
	const char *fill[] = { "\xc3\xa9", "\x01", "\xe2\x82\xac", "\xf0\x9f\x98\x80", "\"", "x" };

	for (size_t f = 0; f < sizeof(fill) / sizeof(fill[0]); f++) {
		size_t k = strlen(fill[f]), n = 40000 / k * k;
		char *p = malloc(n);
		assert_non_null(p);
		for (size_t i = 0; i < n; i += k)
			memcpy(p + i, fill[f], k);
		tool_result_init(&res);
		add_text(&res, "exit code 0; the facts first", 28);
		add_text(&res, p, n);
		add_text(&res, p, n);
		tool_structured(&res, json_pack("{s:s%, s:s%, s:i}", "stdout", p, n, "stderr", p, n, "exit_code", 0));
		tool_result_seal(&ctx, &res);
		check_fits(&res, "exit code 0; the facts first");
		/* cuts fall on character starts: no replacement character appears */
		for (size_t b = 1; b < 3; b++)
			assert_null(strstr(json_string_value(json_object_get(json_array_get(res.content, b), "text")),
					   "\xEF\xBF\xBD"));
		assert_null(strstr(json_string_value(json_object_get(res.structured, "stdout")), "\xEF\xBF\xBD"));
		assert_non_null(strstr(json_string_value(json_object_get(json_array_get(res.content, 1), "text")),
				       "bytes cut to keep the result under 48000 bytes"));
		assert_int_equal(json_integer_value(json_object_get(res.structured, "exit_code")), 0);
		tool_result_finish(&res);
		free(p);
	}

	/* images do not count, and a result under the budget is untouched */
	tool_result_init(&res);
	add_text(&res, "small", 5);
	char *img = malloc(200000);
	assert_non_null(img);
	memset(img, 'A', 200000);
	json_array_append_new(res.content, json_pack("{s:s, s:s%, s:s}", "type", "image", "data", img, (size_t)200000,
						     "mimeType", "image/png"));
	tool_result_seal(&ctx, &res);
	assert_int_equal(json_string_length(json_object_get(json_array_get(res.content, 1), "data")), 200000);
	check_fits(&res, "small");
	/* nor do embedded resources (file_read's base64 blobs): data, not text to preview */
	json_array_append_new(res.content, json_pack("{s:s, s:{s:s, s:s%}}", "type", "resource", "resource", "uri",
						     "sandbox://x/a.bin", "blob", img, (size_t)200000));
	tool_result_seal(&ctx, &res);
	assert_int_equal(json_string_length(
				 json_object_get(json_object_get(json_array_get(res.content, 2), "resource"), "blob")),
			 200000);
	check_fits(&res, "small");
	free(img);
	tool_result_finish(&res);
}

static void test_progress_settles(void **state)
{
	struct tool_ctx ctx = make_ctx();
	struct tool_result res;

	tool_result_init(&res);
	int64_t t0 = now_ms();
	tool_result_seal(&ctx, &res);
	assert_true(now_ms() - t0 < 50); /* no progress sent: no wait */
	ctx.progress_sent_ms = now_ms();
	t0 = now_ms();
	tool_result_seal(&ctx, &res);
	assert_true(now_ms() - t0 >= 95); /* a result right after a progress notification waits */
	ctx.progress_sent_ms = now_ms() - 1000;
	t0 = now_ms();
	tool_result_seal(&ctx, &res);
	assert_true(now_ms() - t0 < 50); /* one long ago: no wait */
	tool_result_finish(&res);
}

int main(void)
{
	util_json_init();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_failure_folded),
		cmocka_unit_test(test_budget),
		cmocka_unit_test(test_progress_settles),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
