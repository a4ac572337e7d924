/*
 * fuzz_replay.c - runs a libFuzzer target over files (a committed corpus,
 * crashes found earlier), so every build checks them without clang.
 * usage: fuzz_replay FILE...
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		FILE *fp = fopen(argv[i], "rb");
		if (!fp) {
			perror(argv[i]);
			return 1;
		}
		uint8_t *buf = NULL;
		size_t n = 0, cap = 0, got;
		do {
			if (n == cap && !(buf = realloc(buf, cap = cap * 2 + 65536)))
				abort();
			got = fread(buf + n, 1, cap - n, fp);
			n += got;
		} while (got);
		fclose(fp);
		LLVMFuzzerTestOneInput(buf, n);
		free(buf);
	}
	printf("fuzz_replay: %d inputs, no crash\n", argc - 1);
	return 0;
}
