/*
 * replay.c — a plain driver for the fuzz targets, for builds without
 * libFuzzer (gcc, or clang without -Dfuzz=true): feeds every file named
 * on the command line, and every file in every directory named, to
 * LLVMFuzzerTestOneInput once, in name order.  A target aborts on a broken
 * contract, so reaching the end is a pass.
 *   usage: fuzz-replay-TARGET FILE|DIR...      (exit 0 pass)
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t replayed;

static int replay_file(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	uint8_t *buf = NULL;
	size_t len = 0;

	if (fd < 0 || fstat(fd, &st) < 0) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	buf = malloc(st.st_size > 0 ? (size_t)st.st_size : 1);
	if (!buf) {
		fprintf(stderr, "replay: %s: out of memory\n", path);
		close(fd);
		return -1;
	}
	while (len < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + len, (size_t)st.st_size - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			fprintf(stderr, "replay: %s: short read\n", path);
			free(buf);
			close(fd);
			return -1;
		}
		len += (size_t)n;
	}
	close(fd);
	/* A copy of exactly the input's size, so that ASan sees any read
	 * past its end. */
	LLVMFuzzerTestOneInput(buf, len);
	free(buf);
	replayed++;
	return 0;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

static int replay(const char *path)
{
	struct stat st;

	if (stat(path, &st) < 0) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode))
		return replay_file(path);

	struct dirent **list;
	int n = scandir(path, &list, NULL, by_name), rc = 0;
	if (n < 0) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	for (int i = 0; i < n; i++) {
		const char *name = list[i]->d_name;
		if (name[0] != '.') {
			char sub[4096];
			snprintf(sub, sizeof(sub), "%s/%s", path, name);
			if (replay(sub) < 0)
				rc = -1;
		}
		free(list[i]);
	}
	free(list);
	return rc;
}

int main(int argc, char **argv)
{
	int rc = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
		return 2;
	}
	for (int i = 1; i < argc; i++)
		if (replay(argv[i]) < 0)
			rc = 1;
	printf("replayed %zu inputs\n", replayed);
	return rc;
}
