/*
 * jsonfix.c - JSON as Python's json module writes it (bare NaN, Infinity,
 * -Infinity), made acceptable to a strict parser. See parse.h.
 */
#include <string.h>

#include "runmon/parse.h"

char *rm_json_quote_nonfinite(const char *in, size_t n, size_t *outlen)
{
	char *out = rm_xmalloc(n + n / 2 + 16), *o = out;
	size_t cap = n + n / 2 + 16;
	int in_str = 0;
	for (size_t i = 0; i < n; i++) {
		if ((size_t)(o - out) + 16 > cap) {
			size_t used = (size_t)(o - out);
			cap *= 2;
			out = rm_xrealloc(out, cap);
			o = out + used;
		}
		char c = in[i];
		if (in_str) {
			*o++ = c;
			if (c == '\\' && i + 1 < n)
				*o++ = in[++i];
			else if (c == '"')
				in_str = 0;
			continue;
		}
		if (c == '"')
			in_str = 1;
		const char *word = NULL;
		if (c == 'N' && n - i >= 3 && !memcmp(in + i, "NaN", 3))
			word = "NaN";
		else if (c == 'I' && n - i >= 8 && !memcmp(in + i, "Infinity", 8))
			word = "Infinity";
		else if (c == '-' && n - i >= 9 && !memcmp(in + i, "-Infinity", 9))
			word = "-Infinity";
		if (word) {
			size_t wl = strlen(word);
			*o++ = '"';
			memcpy(o, word, wl);
			o += wl;
			*o++ = '"';
			i += wl - 1;
			continue;
		}
		*o++ = c;
	}
	*o = '\0';
	*outlen = (size_t)(o - out);
	return out;
}
