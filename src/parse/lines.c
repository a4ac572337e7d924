/*
 * lines.c - chunked line reader; see runmon/parse.h.
 */
#include "runmon/parse.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK (1u << 20)

int rm_lines_open(struct rm_lines *lr, const char *path, struct rm_err *err)
{
	memset(lr, 0, sizeof(*lr));
	lr->path = path;
	lr->max_line = RM_LINES_MAX_DEFAULT;
	if (!strcmp(path, "-")) {
		lr->fp = stdin;
	} else {
		lr->fp = fopen(path, "rb");
		if (!lr->fp)
			return rm_err_set(err, errno == ENOENT || errno == EACCES ? RM_E_INPUT : RM_E_IO,
			                  "cannot open '%s': %s", path, strerror(errno));
	}
	lr->cap = CHUNK;
	lr->buf = rm_xmalloc(lr->cap + 1);
	return RM_OK;
}

/* A line longer than max_line (a tqdm bar redrawn with \r over a whole
 * epoch): its bytes are read past to its newline, never held, and the
 * line is returned empty with lr->overlong set (skip_long). */
static int skip_line(struct rm_lines *lr, struct rm_err *err)
{
	for (;;) {
		char *nl = memchr(lr->buf + lr->pos, '\n', lr->len - lr->pos);
		if (nl) {
			size_t keep = lr->len - (size_t)(nl - lr->buf); /* the newline and what follows */
			memmove(lr->buf, nl, keep);
			lr->buf_offset += (size_t)(nl - lr->buf);
			lr->len = keep;
			lr->pos = 0;
			lr->overlong = 1;
			return RM_OK;
		}
		lr->buf_offset += lr->len;
		lr->len = lr->pos = 0;
		size_t n = fread(lr->buf, 1, lr->cap, lr->fp);
		if (n == 0) {
			if (ferror(lr->fp))
				return rm_err_set(err, RM_E_IO, "cannot read '%s': %s", lr->path, strerror(errno));
			lr->eof = 1;
			lr->overlong = 1;
			return RM_OK;
		}
		lr->len = n;
	}
}

/* Moves the unread tail to the front and reads more; grows the buffer when
 * a single line fills it. */
static int fill(struct rm_lines *lr, struct rm_err *err)
{
	if (lr->pos > 0) {
		memmove(lr->buf, lr->buf + lr->pos, lr->len - lr->pos);
		lr->buf_offset += lr->pos;
		lr->len -= lr->pos;
		lr->pos = 0;
	}
	if (lr->len == lr->cap) {
		if (lr->cap >= lr->max_line) {
			if (lr->skip_long)
				return skip_line(lr, err);
			rm_err_set(err, RM_E_INPUT, "%s:%llu: line longer than %zu bytes", lr->path,
			           (unsigned long long)lr->lineno + 1, lr->max_line);
			err->bad_line = lr->lineno + 1; /* the lines before it stand (a followed file's) */
			return RM_E_INPUT;
		}
		lr->cap *= 2;
		lr->buf = rm_xrealloc(lr->buf, lr->cap + 1);
	}
	size_t n = fread(lr->buf + lr->len, 1, lr->cap - lr->len, lr->fp);
	if (n == 0) {
		if (ferror(lr->fp))
			return rm_err_set(err, RM_E_IO, "cannot read '%s': %s", lr->path, strerror(errno));
		lr->eof = 1;
	}
	lr->len += n;
	rm_progress_at((double)(lr->buf_offset + lr->len)); /* a branch a chunk when no task runs */
	return RM_OK;
}

int rm_lines_next(struct rm_lines *lr, char **line, size_t *len, struct rm_err *err)
{
	char *nl = NULL;
	size_t scanned = 0;
	*line = NULL;
	*len = 0;
	lr->overlong = 0;
	for (;;) {
		char *start = lr->buf + lr->pos + scanned;
		size_t avail = lr->len - lr->pos - scanned;
		nl = avail ? memchr(start, '\n', avail) : NULL;
		if (nl || lr->eof)
			break;
		scanned = lr->len - lr->pos;
		int rc = fill(lr, err);
		if (rc)
			return rc;
		if (lr->overlong) { /* skipped to its newline (buf[0]), or to the end */
			nl = lr->len ? lr->buf : NULL;
			break;
		}
	}
	if (lr->overlong) {
		lr->offset = lr->buf_offset;
		lr->pos = nl ? 1 : 0;
		lr->next_offset = lr->buf_offset + lr->pos;
		lr->lineno++;
		*line = lr->buf; /* empty: the caller counts it as a bad line */
		lr->buf[lr->pos ? 0 : lr->len] = '\0';
		*len = 0;
		return RM_OK;
	}
	char *s = lr->buf + lr->pos;
	size_t n = nl ? (size_t)(nl - s) : lr->len - lr->pos;
	if (!nl && n == 0)
		return RM_OK; /* end of file */
	if (!nl && lr->complete_only) {
		lr->partial = 1; /* still being written: the next read takes it */
		return RM_OK;
	}
	if (lr->stop_before && lr->lineno + 1 >= lr->stop_before)
		return RM_OK; /* an end before a bad line */
	lr->offset = lr->buf_offset + lr->pos;
	lr->pos += n + (nl ? 1 : 0);
	lr->next_offset = lr->buf_offset + lr->pos;
	lr->lineno++;
	if (n > 0 && s[n - 1] == '\r')
		n--;
	s[n] = '\0';
	if (n >= 3 && !memcmp(s, "\xEF\xBB\xBF", 3)) { /* the file's, or another's after `cat a b` */
		s += 3;
		n -= 3;
	}
	*line = s;
	*len = n;
	return RM_OK;
}

int rm_lines_seek(struct rm_lines *lr, uint64_t offset, uint64_t lineno, struct rm_err *err)
{
	if (fseeko(lr->fp, (off_t)offset, SEEK_SET))
		return rm_err_set(err, RM_E_IO, "cannot seek in '%s': %s", lr->path, strerror(errno));
	lr->len = lr->pos = 0;
	lr->eof = lr->partial = 0;
	lr->buf_offset = lr->offset = lr->next_offset = offset;
	lr->lineno = lineno;
	return RM_OK;
}

void rm_lines_close(struct rm_lines *lr)
{
	if (lr->fp && lr->fp != stdin)
		fclose(lr->fp);
	free(lr->buf);
	memset(lr, 0, sizeof(*lr));
}
