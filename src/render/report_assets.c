/*
 * report_assets.c - a report's inline style and script (src/render/
 * report.css and report.js, embedded at build time) and the Content-
 * Security-Policy that allows exactly those two by their SHA-256 hashes:
 * the file makes no request of any kind and runs nothing else, from
 * file:// or from a server.
 */
#include <string.h>

#include "report_internal.h"
#include "runmon/common.h"

extern const char rm_report_css[], rm_report_js[];

/* 'sha256-<base64 of the digest>' (CSP Level 2, "hash-source"). */
static void hash_source(const char *text, char *out, size_t cap)
{
	uint8_t digest[32];
	char b64[48];
	rm_sha256(text, strlen(text), digest);
	rm_base64(digest, sizeof(digest), b64, sizeof(b64));
	snprintf(out, cap, "'sha256-%s'", b64);
}

void rm_report_html_head(FILE *fp)
{
	char style[64], script[64];
	hash_source(rm_report_css, style, sizeof(style));
	hash_source(rm_report_js, script, sizeof(script));
	fprintf(fp,
	        "<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; style-src %s; script-src %s;"
	        " base-uri 'none'; form-action 'none'\">\n<style>%s</style>",
	        style, script, rm_report_css);
}

void rm_report_html_script(FILE *fp)
{
	fprintf(fp, "<script>%s</script>\n", rm_report_js);
}
