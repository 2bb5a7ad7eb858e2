/*
 * profile-codec.h — pprof's profile.proto, encoded and decoded in one place.
 *
 * flamefs renders pprof files (fs/view/render.c) and flamefs-collect imports
 * them (collector/import/pprof.c, and renders them for export): both link this
 * module, the protobuf-c code generated from fs/profile/profile.proto
 * and these three functions over it.  The message types are protobuf-c's
 * (Perftools__Profiles__*), from the generated profile.pb-c.h.
 */
#ifndef FLAMEFS_PROFILE_CODEC_H
#define FLAMEFS_PROFILE_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "profile.pb-c.h"

/* Encodes p as protobuf bytes (not gzipped).  Returns a malloc'd buffer
 * of *len bytes that the caller frees, or NULL on ENOMEM. */
uint8_t *profile_encode(const Perftools__Profiles__Profile *p, size_t *len);

/* Decodes len bytes of protobuf (not gzipped).  Returns the profile, which
 * the caller frees with profile_free(), or NULL when the bytes are not a
 * well-formed profile (or on ENOMEM). */
Perftools__Profiles__Profile *profile_decode(const void *data, size_t len);
void profile_free(Perftools__Profiles__Profile *p); /* accepts NULL */

#endif
