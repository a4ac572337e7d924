/*
 * test_outfile.c - the output file written whole or not at all: a longer
 * old file leaves no tail, a planted symlink is replaced and its target
 * untouched, an abort keeps what the path had, a FIFO or device is
 * written in place, a directory is refused.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runmon/common.h"
#include "testutil.h"

static char *slurp(const char *path)
{
	static char buf[4096];
	FILE *fp = fopen(path, "rb");
	assert_non_null(fp);
	size_t n = fread(buf, 1, sizeof(buf) - 1, fp);
	buf[n] = '\0';
	fclose(fp);
	return buf;
}

static void write_whole(const char *path, const char *text)
{
	struct rm_outfile o;
	struct rm_err err;
	assert_int_equal(rm_outfile_open(&o, path, &err), RM_OK);
	fputs(text, o.fp);
	assert_int_equal(rm_outfile_commit(&o, &err), RM_OK);
}

static void new_file_is_written(void **state)
{
	const char *p = tu_tmp_path("new.html");
	write_whole(p, "<p>report</p>\n");
	assert_string_equal(slurp(p), "<p>report</p>\n");
}

/* Written in place, a shorter report over a longer one would keep the old
 * tail; written beside and renamed, it cannot. */
static void longer_file_leaves_no_tail(void **state)
{
	const char *p = tu_write_file("long.md", "a much longer old report than the new one\n", 43);
	write_whole(p, "short\n");
	assert_string_equal(slurp(p), "short\n");
}

/* A symlink planted at the path (by another user, in a shared directory)
 * is replaced by the report; the file it pointed at is left as it was. */
static void symlink_is_replaced_not_followed(void **state)
{
	const char *victim = tu_write_file("victim", "precious\n", 9);
	const char *link = tu_tmp_path("report-link.html");
	assert_int_equal(symlink(victim, link), 0);
	write_whole(link, "report\n");
	struct stat sb;
	assert_int_equal(lstat(link, &sb), 0);
	assert_true(S_ISREG(sb.st_mode));
	assert_string_equal(slurp(link), "report\n");
	assert_string_equal(slurp(victim), "precious\n");
}

static void abort_keeps_the_old_file(void **state)
{
	const char *p = tu_write_file("kept.json", "{\"old\": 1}\n", 11);
	struct rm_outfile o;
	struct rm_err err;
	assert_int_equal(rm_outfile_open(&o, p, &err), RM_OK);
	fputs("{\"half", o.fp);
	rm_outfile_abort(&o);
	assert_string_equal(slurp(p), "{\"old\": 1}\n");
	/* and no temporary file is left beside it */
	char dir[512], cmd[600];
	snprintf(dir, sizeof(dir), "%s", p);
	*strrchr(dir, '/') = '\0';
	snprintf(cmd, sizeof(cmd), "ls -a '%s' | grep -q '^\\.kept\\.json\\.'", dir);
	assert_int_not_equal(system(cmd), 0);
}

/* Under a file-size limit (ulimit -f), with SIGXFSZ ignored as runmon's
 * main does: the write fails with "File too large" naming the path, the
 * old file keeps what it had, and no temporary file is left (issue 49.5:
 * report -o and simulate --out left hidden files). In a child, so the
 * limit stays there. */
static void file_size_limit_fails_cleanly(void **state)
{
	const char *p = tu_write_file("limited.html", "old\n", 4);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct rlimit rl = {65536, 65536};
		signal(SIGXFSZ, SIG_IGN);
		setrlimit(RLIMIT_FSIZE, &rl);
		struct rm_outfile o;
		struct rm_err err;
		if (rm_outfile_open(&o, p, &err))
			_exit(10);
		for (int i = 0; i < 20000; i++)
			fputs("<p>a line of a report</p>\n", o.fp);
		int rc = rm_outfile_commit(&o, &err);
		_exit(rc == RM_E_IO && strstr(err.msg, "File too large") && strstr(err.msg, "limited.html") ? 0 : 11);
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_string_equal(slurp(p), "old\n");
	char dir[512], cmd[600];
	snprintf(dir, sizeof(dir), "%s", p);
	*strrchr(dir, '/') = '\0';
	snprintf(cmd, sizeof(cmd), "ls -a '%s' | grep -q '^\\.limited\\.html\\.'", dir);
	assert_int_not_equal(system(cmd), 0);
}

static void fifo_is_written_in_place(void **state)
{
	const char *p = tu_tmp_path("pipe");
	assert_int_equal(mkfifo(p, 0600), 0);
	int rfd = open(p, O_RDONLY | O_NONBLOCK); /* a reader, so the writer's open does not block */
	assert_true(rfd >= 0);
	struct rm_outfile o;
	struct rm_err err;
	assert_int_equal(rm_outfile_open(&o, p, &err), RM_OK);
	assert_null(o.tmp);
	fputs("through\n", o.fp);
	assert_int_equal(rm_outfile_commit(&o, &err), RM_OK);
	char buf[16] = {0};
	assert_int_equal(read(rfd, buf, sizeof(buf) - 1), 8);
	assert_string_equal(buf, "through\n");
	close(rfd);
	struct stat sb;
	assert_int_equal(stat(p, &sb), 0);
	assert_true(S_ISFIFO(sb.st_mode)); /* not replaced by a regular file */
}

static void directory_and_empty_path_refused(void **state)
{
	struct rm_outfile o;
	struct rm_err err;
	assert_int_equal(rm_outfile_open(&o, tu_tmp_path(""), &err), RM_E_IO);
	assert_non_null(strstr(err.msg, "it is a directory"));
	assert_int_equal(rm_outfile_open(&o, "", &err), RM_E_USAGE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(new_file_is_written),
	    cmocka_unit_test(longer_file_leaves_no_tail),
	    cmocka_unit_test(symlink_is_replaced_not_followed),
	    cmocka_unit_test(abort_keeps_the_old_file),
	    cmocka_unit_test(file_size_limit_fails_cleanly),
	    cmocka_unit_test(fifo_is_written_in_place),
	    cmocka_unit_test(directory_and_empty_path_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
