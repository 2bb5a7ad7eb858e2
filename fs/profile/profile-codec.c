/*
 * profile-codec.c — pprof profile encode and decode over protobuf-c's
 * generated code (see profile-codec.h).
 */
#include "profile-codec.h"

#include <stdlib.h>

uint8_t *profile_encode(const Perftools__Profiles__Profile *p, size_t *len)
{
	size_t n = perftools__profiles__profile__get_packed_size(p);
	uint8_t *out = malloc(n ? n : 1);

	if (!out)
		return NULL;
	*len = perftools__profiles__profile__pack(p, out);
	return out;
}

Perftools__Profiles__Profile *profile_decode(const void *data, size_t len)
{
	return perftools__profiles__profile__unpack(NULL, len, data);
}

void profile_free(Perftools__Profiles__Profile *p)
{
	if (p)
		perftools__profiles__profile__free_unpacked(p, NULL);
}
