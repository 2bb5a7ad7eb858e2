/*
 * kbtf-offset.c — prints the byte offset kbtf_member_offset() finds for
 * each STRUCT.MEMBER argument ("STRUCT.MEMBER OFFSET", or "STRUCT.MEMBER
 * -" and the error on stderr), for test-kbtf.sh to compare with bpftool.
 *   usage: kbtf-offset BTF_FILE STRUCT.MEMBER...
 */
#include <stdio.h>
#include <string.h>

#include "kbtf-internal.h"

int main(int argc, char **argv)
{
	int rc = 0;

	if (argc < 3) {
		fprintf(stderr, "usage: kbtf-offset BTF_FILE STRUCT.MEMBER...\n");
		return 2;
	}
	for (int i = 2; i < argc; i++) {
		char strct[128], err[512];
		const char *dot = strchr(argv[i], '.');
		uint32_t off;
		if (!dot || (size_t)(dot - argv[i]) >= sizeof(strct)) {
			fprintf(stderr, "kbtf-offset: %s: expected STRUCT.MEMBER\n", argv[i]);
			return 2;
		}
		memcpy(strct, argv[i], (size_t)(dot - argv[i]));
		strct[dot - argv[i]] = '\0';
		if (kbtf_member_offset(argv[1], strct, dot + 1, &off, err, sizeof(err)) < 0) {
			printf("%s -\n", argv[i]);
			fprintf(stderr, "kbtf-offset: %s\n", err);
			rc = 1;
		} else {
			printf("%s %u\n", argv[i], off);
		}
	}
	return rc;
}
