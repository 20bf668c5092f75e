/*
 * jsonscan.c - the token count behind a JSON text's decoding cost (see
 * jsonscan.h).
 *
 * Tokens are told apart by their first byte: '{' and '[' open containers, a
 * quote starts a string (a key when ':' follows it), and any other run of
 * bytes that is not whitespace or punctuation is one bare token.  A string
 * runs to the next quote not escaped by a backslash; an unterminated one runs
 * to the end.  The estimate adds the text's own length and the longest
 * token's (see JSONSCAN_COST_LONGEST).
 */
#include "base/jsonscan.h"

static bool is_space(unsigned char c);
static bool is_bare(unsigned char c);
static size_t add_sat(size_t a, size_t b);
static void longest(struct jsonscan *s, size_t len);
static size_t skip_string(const char *p, size_t n, size_t i, bool *nul);

static bool is_space(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static bool is_bare(unsigned char c)
{
	return !is_space(c) && c != '{' && c != '}' && c != '[' && c != ']' && c != ',' && c != ':' && c != '"';
}

static size_t add_sat(size_t a, size_t b)
{
	return a > (size_t)-1 - b ? (size_t)-1 : a + b;
}

static void longest(struct jsonscan *s, size_t len)
{
	if (len > s->longest)
		s->longest = len;
}

/* From just past an opening quote: the index of the closing quote, or n. */
static size_t skip_string(const char *p, size_t n, size_t i, bool *nul)
{
	while (i < n && p[i] != '"') {
		if (p[i] != '\\') {
			i++;
			continue;
		}
		if (n - i >= 6 && p[i + 1] == 'u' && p[i + 2] == '0' && p[i + 3] == '0' && p[i + 4] == '0' &&
		    p[i + 5] == '0')
			*nul = true;
		i += n - i >= 2 ? 2 : 1;
	}
	return i;
}

void jsonscan_measure(const char *p, size_t n, struct jsonscan *ret)
{
	struct jsonscan s = { 0 };
	size_t depth = 0, i = 0, cost = add_sat(n, JSONSCAN_COST_BASE);
	bool top_object = false, top_done = false, want_id = false;

	while (i < n) {
		unsigned char c = (unsigned char)p[i];
		if (c == '{' || c == '[') {
			if (depth == 0 && !top_done)
				top_object = c == '{';
			if (c == '{')
				s.objects++, cost = add_sat(cost, JSONSCAN_COST_OBJECT);
			else
				s.arrays++, cost = add_sat(cost, JSONSCAN_COST_ARRAY);
			if (++depth > s.depth)
				s.depth = depth;
			want_id = false;
			i++;
		} else if (c == '}' || c == ']') {
			if (depth > 0 && --depth == 0)
				top_done = true;
			want_id = false;
			i++;
		} else if (c == '"') {
			size_t start = i;
			i = skip_string(p, n, i + 1, &s.nul_escape);
			i += i < n; /* past the closing quote */
			s.strings++;
			cost = add_sat(cost, JSONSCAN_COST_STRING);
			longest(&s, i - start);
			size_t k = i;
			while (k < n && is_space((unsigned char)p[k]))
				k++;
			bool key = k < n && p[k] == ':';
			bool in_top = top_object && !top_done && depth == 1;
			if (key) {
				want_id = in_top && i - start == 4 && p[start + 1] == 'i' && p[start + 2] == 'd' &&
					  p[start + 3] == '"';
				if (want_id)
					s.id_start = s.id_len = 0; /* the last "id" counts, as in jansson */
			} else {
				if (want_id)
					s.id_start = start, s.id_len = i - start;
				want_id = false;
			}
		} else if (is_bare(c)) {
			size_t start = i;
			while (i < n && is_bare((unsigned char)p[i]))
				i++;
			s.bare++;
			cost = add_sat(cost, JSONSCAN_COST_BARE);
			longest(&s, i - start);
			if (want_id)
				s.id_start = start, s.id_len = i - start;
			want_id = false;
		} else {
			i++; /* whitespace, ',' and ':' */
		}
	}
	for (int k = 0; k < JSONSCAN_COST_LONGEST; k++)
		cost = add_sat(cost, s.longest);
	s.cost = cost;
	*ret = s;
}
