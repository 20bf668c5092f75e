/*
 * fuzz-schema.c - schema_validate on arbitrary JSON arguments.
 *
 * The input, parsed as JSON, is checked against every tool's input schema and
 * a fixed schema that uses each keyword schema.c knows.  The answer is 0 or
 * -EINVAL, and a refusal always says why.  When the first line is itself a
 * schema that schema_lint accepts, the rest is validated against it too:
 * schemas are ours, but nothing lint lets through may crash the validator.
 */
#include <errno.h>
#include <string.h>

#include "base/util.h"
#include "fuzz.h"
#include "tools/schema.h"
#include "tools/tools.h"

static const char every_keyword[] =
	"{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"s\"],\"properties\":{"
	"\"s\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":8},"
	"\"i\":{\"type\":\"integer\",\"minimum\":-5,\"maximum\":5},"
	"\"x\":{\"type\":\"number\",\"minimum\":0.5,\"maximum\":1e6},"
	"\"b\":{\"type\":\"boolean\"},"
	"\"z\":{\"type\":\"null\"},"
	"\"e\":{\"type\":\"string\",\"enum\":[\"python\",\"node\",\"shell\"]},"
	"\"a\":{\"type\":\"array\",\"maxItems\":3,\"items\":{\"type\":\"object\",\"required\":[\"k\"],"
	"\"additionalProperties\":false,\"properties\":{\"k\":{\"type\":\"string\"},"
	"\"deep\":{\"type\":\"array\",\"items\":{\"type\":\"array\",\"items\":{\"type\":\"integer\"}}}}}},"
	"\"o\":{\"type\":\"object\",\"properties\":{}}}}";

static json_t *fixed;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct err e;

	util_json_init();
	err_clear(&e);
	FUZZ_CHECK(tools_init(&e) == 0);
	fixed = json_loads(every_keyword, 0, NULL);
	FUZZ_CHECK(fixed != NULL);
	FUZZ_CHECK(schema_lint(fixed, &e) == 0);
	return 0;
}

static void validate(const json_t *schema, json_t *value)
{
	struct err e;

	err_clear(&e);
	int r = schema_validate(schema, value, &e);
	FUZZ_CHECK(r == 0 || r == -EINVAL);
	FUZZ_CHECK(memchr(e.msg, '\0', sizeof(e.msg)) != NULL);
	if (r < 0)
		FUZZ_CHECK(e.msg[0] != '\0' && e.code != 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *value = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
	if (!value)
		return 0;
	validate(fixed, value);
	for (size_t i = 0; i < tools_count(); i++)
		validate(tools_input_schema(tools_at(i)), value);
	json_decref(value);

	const char *nl = memchr(data, '\n', size);
	if (!nl)
		return 0;
	size_t k = (size_t)(nl - (const char *)data);
	json_t *schema = json_loadb((const char *)data, k, 0, NULL);
	value = json_loadb(nl + 1, size - k - 1, JSON_DECODE_ANY, NULL);
	struct err e;
	if (schema && value && schema_lint(schema, &e) == 0)
		validate(schema, value);
	json_decref(schema);
	json_decref(value);
	return 0;
}
