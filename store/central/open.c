/*
 * central/open.c — opening a PostgreSQL store (being written; see
 * issue 22).
 */
#include "backend.h"

#include <errno.h>
#include <stdio.h>

int central_open(const char *conn, int flags, struct store **out, char *err, size_t errlen)
{
	(void)conn;
	(void)flags;
	*out = NULL;
	if (errlen)
		snprintf(err, errlen, "database stores are not built into this flamefs yet");
	return -EPROTONOSUPPORT;
}
