/*
 * foreign.c - files that are no training log at all: a page, an image, an
 * archive, an executable, a database, binary data. Told from their first
 * bytes (the formats' published magic numbers) before any reader runs, so
 * `runmon import report.html` is refused at once, not read as a log whose
 * lines happen to say "loss".
 */
#include <string.h>

#include "import_internal.h"

static const struct {
	const char *magic;
	size_t len, at;
	const char *kind;
} magics[] = {
    {"\x89PNG\r\n\x1a\n", 8, 0, "a PNG image"},
    {"\xff\xd8\xff", 3, 0, "a JPEG image"},
    {"GIF8", 4, 0, "a GIF image"},
    {"RIFF", 4, 0, "a RIFF file (WebP image, WAV audio)"},
    {"%PDF-", 5, 0, "a PDF document"},
    {"\x1f\x8b", 2, 0, "a gzip archive"},
    {"PK\x03\x04", 4, 0, "a zip archive"},
    {"BZh", 3, 0, "a bzip2 archive"},
    {"\xfd"
     "7zXZ\x00",
     6, 0, "an xz archive"},
    {"\x28\xb5\x2f\xfd", 4, 0, "a zstd archive"},
    {"7z\xbc\xaf\x27\x1c", 6, 0, "a 7-zip archive"},
    {"ustar", 5, 257, "a tar archive"},
    {"\x7f"
     "ELF",
     4, 0, "an executable (ELF)"},
    {"SQLite format 3", 16, 0, "an SQLite database"},
    {"PAR1", 4, 0, "a Parquet file"},
    {"\x93NUMPY", 6, 0, "a NumPy array"},
    {"ARROW1", 6, 0, "an Arrow IPC file"},
};

/* Does the text, after a BOM and blank space, open with word (any case)? */
static int opens_with(const uint8_t *h, size_t n, const char *word)
{
	size_t i = 0, w = strlen(word);
	if (n >= 3 && !memcmp(h, "\xef\xbb\xbf", 3))
		i = 3;
	while (i < n && (h[i] == ' ' || h[i] == '\t' || h[i] == '\r' || h[i] == '\n'))
		i++;
	if (n - i < w)
		return 0;
	for (size_t k = 0; k < w; k++) {
		uint8_t c = h[i + k];
		if (c >= 'A' && c <= 'Z')
			c = (uint8_t)(c - 'A' + 'a');
		if (c != (uint8_t)word[k])
			return 0;
	}
	return 1;
}

const char *rm_foreign_kind(const uint8_t *head, size_t n)
{
	for (size_t i = 0; i < sizeof(magics) / sizeof(magics[0]); i++)
		if (n >= magics[i].at + magics[i].len && !memcmp(head + magics[i].at, magics[i].magic, magics[i].len))
			return magics[i].kind;
	if (opens_with(head, n, "<!doctype html") || opens_with(head, n, "<html"))
		return "an HTML page";
	if (opens_with(head, n, "<?xml") || opens_with(head, n, "<svg"))
		return "an XML document";
	/* Text never holds NUL (UTF-16 aside, which no trainer writes): a NUL
	 * in the first 4 KiB is binary data. The W&B binary log is told
	 * apart before this is asked. */
	if (memchr(head, 0, n < 4096 ? n : 4096))
		return "binary data";
	return NULL;
}
