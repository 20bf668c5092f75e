/*
 * fuzz-policy.c - egress rules and presets on arbitrary text.
 *
 * Beyond not crashing: a rule that parses formats to text that parses to
 * the same rule; a rule is always within a ceiling made of itself; a host
 * a rule names exactly is found by it, on each of its ports; the presets
 * text either checks whole or is refused, and names every preset it lists.
 */
#include <string.h>

#include "fuzz.h"
#include "proxy/policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	memcpy(text, data, size);
	text[size] = '\0';
	struct policy_rule r, r2;
	struct err e;
	char t[POLICY_RULE_TEXT_MAX + 64];

	if (strlen(text) == size && policy_rule_parse(text, false, &r, &e) == 0) {
		policy_rule_format(&r, t, sizeof(t));
		FUZZ_CHECK(policy_rule_parse(t, false, &r2, &e) == 0);
		FUZZ_CHECK(strcmp(r.host, r2.host) == 0 && r.nports == r2.nports && r.methods == r2.methods);
		struct policy self = { 0 };
		FUZZ_CHECK(policy_add(&self, &r) == 0);
		FUZZ_CHECK(policy_within(&self, &r));
		if (r.host[0] != '*')
			for (unsigned i = 0; i < r.nports; i++)
				FUZZ_CHECK(policy_find(&self, r.host, r.ports[i]) != NULL);
		policy_finish(&self);
	}
	struct policy p = { 0 };
	if (strlen(text) == size && policy_presets_check(text, &e) == 0) {
		char names[4096];
		policy_preset_names(text, names, sizeof(names));
		FUZZ_CHECK(strncmp(names, "pypi, npm, github, debian", 25) == 0);
		(void)policy_presets_all(text, &p, &e);
		policy_finish(&p);
	}
	free(text);
	return 0;
}
