/*
 * outfile.c - see runmon/common.h.
 */
#define _GNU_SOURCE /* mkostemp */
#include "runmon/common.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void clear(struct rm_outfile *o)
{
	free(o->path);
	free(o->tmp);
	memset(o, 0, sizeof(*o));
}

int rm_outfile_open(struct rm_outfile *o, const char *path, struct rm_err *err)
{
	struct stat sb;
	memset(o, 0, sizeof(*o));
	if (!strcmp(path, "-")) {
		o->fp = stdout;
		return RM_OK;
	}
	if (!*path)
		return rm_err_set(err, RM_E_USAGE, "an empty output path");
	o->path = rm_xstrdup(path);
	int fd;
	if (!stat(path, &sb) && !S_ISREG(sb.st_mode)) {
		if (S_ISDIR(sb.st_mode)) {
			clear(o);
			return rm_err_set(err, RM_E_IO, "cannot write '%s': it is a directory", path);
		}
		fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
	} else {
		const char *slash = strrchr(path, '/');
		int dirlen = slash ? (int)(slash - path) + 1 : 0;
		o->tmp = rm_xasprintf("%.*s.%s.XXXXXX", dirlen, path, slash ? slash + 1 : path);
		fd = mkostemp(o->tmp, O_CLOEXEC); /* O_CREAT | O_EXCL: never through a symlink */
		if (fd >= 0) {
			mode_t mask = umask(0);
			umask(mask);
			if (fchmod(fd, 0666 & ~mask)) { /* a report is as readable as any file the user writes */
				int e = errno;
				close(fd);
				unlink(o->tmp);
				errno = e;
				fd = -1;
			}
		}
	}
	if (fd < 0 || !(o->fp = fdopen(fd, "w"))) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		rm_err_set(err, RM_E_IO, "cannot write '%s': %s", path, strerror(e));
		clear(o);
		return RM_E_IO;
	}
	return RM_OK;
}

int rm_outfile_commit(struct rm_outfile *o, struct rm_err *err)
{
	int rc = RM_OK;
	if (!o->path) {
		if (fflush(stdout) || ferror(stdout))
			rc = rm_err_set(err, RM_E_IO, "cannot write output: %s", strerror(errno));
		clear(o);
		return rc;
	}
	int bad = fflush(o->fp) || ferror(o->fp) || (o->tmp && fsync(fileno(o->fp)));
	int e = errno;
	bad |= fclose(o->fp) != 0;
	if (!bad && o->tmp && rename(o->tmp, o->path))
		bad = 1, e = errno;
	if (bad) {
		rc = rm_err_set(err, RM_E_IO, "cannot write '%s': %s", o->path, strerror(e));
		if (o->tmp)
			unlink(o->tmp);
	}
	clear(o);
	return rc;
}

void rm_outfile_abort(struct rm_outfile *o)
{
	if (o->path) {
		fclose(o->fp);
		if (o->tmp)
			unlink(o->tmp);
	}
	clear(o);
}
