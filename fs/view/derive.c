/*
 * derive.c — trees made from other trees (struct view_builder, view.h):
 * the diff (diff.c) and the function view's callers and callees
 * (functions.c).  Frames are mapped from up to two source trees by name;
 * nodes are found or appended through the child table build.c keeps.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "build-internal.h"

struct view_builder {
	struct builder b;
	struct {
		const struct view_tree *t;
		uint32_t *map; /* source frame -> local frame, or VIEW_NONE */
	} src[2];
	uint32_t *frame_of_name; /* local name string -> local frame + 1 */
	uint32_t frame_of_name_cap;
	uint32_t base_cap;
	bool seeded; /* nodes exist that appends must find, not duplicate */
};

int view_builder_seed(struct view_builder *vb, const struct view_tree *seed)
{
	if (!seed)
		return 0;
	vb->seeded = true;
	return builder_seed_nodes(&vb->b, seed);
}

int view_builder_new(const char *event, const char *unit, uint32_t nodes_hint,
                     struct view_builder **out)
{
	struct view_builder *vb = calloc(1, sizeof(*vb));
	struct view_tree *t;
	struct store_frame empty = {0};
	uint32_t sid, root_frame, csize = 1024;
	int r;

	*out = NULL;
	if (!vb)
		return -ENOMEM;
	while (csize < (uint64_t)nodes_hint * 2 && csize < (1u << 24))
		csize *= 2;
	vb->b.t = t = calloc(1, sizeof(*t));
	vb->b.stab = calloc(1024, sizeof(*vb->b.stab));
	vb->b.ctab = calloc(csize, sizeof(*vb->b.ctab));
	if (!t || !vb->b.stab || !vb->b.ctab)
		goto nomem;
	vb->b.stab_mask = 1023;
	vb->b.ctab_mask = csize - 1;
	t->event = strdup(event ? event : "");
	t->unit = strdup(unit ? unit : "");
	if (!t->event || !t->unit)
		goto nomem;
	if ((r = builder_intern(&vb->b, "", 0, &sid)) < 0 ||
	    (r = builder_add_frame(&vb->b, &empty, &root_frame)) < 0 ||
	    (r = builder_grow((void **)&t->nodes, &t->nodes_cap, 1, sizeof(*t->nodes))) < 0)
		goto fail;
	memset(&t->nodes[0], 0, sizeof(t->nodes[0]));
	t->nodes[0].frame = root_frame;
	t->nnodes = 1;
	*out = vb;
	return 0;
nomem:
	r = -ENOMEM;
fail:
	view_builder_free(vb);
	return r;
}

void view_builder_free(struct view_builder *vb)
{
	if (!vb)
		return;
	view_tree_free(vb->b.t);
	free(vb->b.stab);
	free(vb->b.ctab);
	for (int i = 0; i < 2; i++)
		free(vb->src[i].map);
	free(vb->frame_of_name);
	free(vb);
}

/* frame_of_name, zeroed, for every string the tree has. */
static int frame_of_name_grow(struct view_builder *vb)
{
	return builder_grow_zeroed((void **)&vb->frame_of_name, &vb->frame_of_name_cap,
	                           vb->b.t->nstrs, sizeof(*vb->frame_of_name));
}

int view_builder_frame(struct view_builder *vb, const struct view_tree *src, uint32_t src_frame,
                       uint32_t *out)
{
	struct view_tree *t = vb->b.t;
	int i, r;

	for (i = 0; i < 2 && vb->src[i].t != src; i++)
		if (!vb->src[i].t) {
			vb->src[i].map = malloc((size_t)(src->nframes ? src->nframes : 1) *
			                        sizeof(*vb->src[i].map));
			if (!vb->src[i].map)
				return -ENOMEM;
			memset(vb->src[i].map, 0xff,
			       (size_t)src->nframes * sizeof(*vb->src[i].map));
			vb->src[i].t = src;
			break;
		}
	if (i == 2 || src_frame >= src->nframes)
		return -EINVAL;
	if (vb->src[i].map[src_frame] != VIEW_NONE) {
		*out = vb->src[i].map[src_frame];
		return 0;
	}
	const struct vframe *f = &src->frames[src_frame];
	uint32_t name;
	r = builder_intern(&vb->b, vstr_ptr(src, f->name), src->strs[f->name].len, &name);
	if (r < 0 || (r = frame_of_name_grow(vb)) < 0)
		return r;
	if (vb->frame_of_name[name] != 0) {
		*out = vb->src[i].map[src_frame] = vb->frame_of_name[name] - 1;
		return 0;
	}
	uint32_t frame;
	r = builder_add_tree_frame(&vb->b, src, src_frame, &frame);
	if (r < 0)
		return r;
	/* add_frame may have interned more strings: grow the map again. */
	if ((r = frame_of_name_grow(vb)) < 0)
		return r;
	vb->frame_of_name[t->frames[frame].name] = frame + 1;
	*out = vb->src[i].map[src_frame] = frame;
	return 0;
}

int view_builder_child(struct view_builder *vb, uint32_t parent, uint32_t frame, uint32_t *out)
{
	int r = builder_get_child(&vb->b, parent, frame, out);

	if (r == 0)
		vb->b.t->nodes[*out].flags |= VNODE_LIVE; /* reached: shown even if seeded */
	return r;
}

int view_builder_append(struct view_builder *vb, uint32_t parent, uint32_t frame, uint32_t *out)
{
	struct view_tree *t = vb->b.t;
	int r;

	if (vb->seeded)
		return view_builder_child(vb, parent, frame, out);
	if (t->nnodes >= UINT32_MAX - 1)
		return -EOVERFLOW;
	r = builder_grow((void **)&t->nodes, &t->nodes_cap, t->nnodes + 1, sizeof(*t->nodes));
	if (r < 0)
		return r;
	memset(&t->nodes[t->nnodes], 0, sizeof(t->nodes[0]));
	t->nodes[t->nnodes].parent = parent;
	t->nodes[t->nnodes].frame = frame;
	t->nodes[t->nnodes].flags = VNODE_LIVE;
	*out = t->nnodes++;
	return 0;
}

void view_builder_add(struct view_builder *vb, uint32_t node, uint64_t samples, uint64_t weight)
{
	vb->b.t->nodes[node].self_samples += samples;
	vb->b.t->nodes[node].self_weight += weight;
}

/* Grows the base counts to at least `need` nodes, zeroed. */
static int base_grow(struct view_builder *vb, uint32_t need)
{
	return builder_grow_zeroed((void **)&vb->b.t->base, &vb->base_cap, need,
	                           sizeof(*vb->b.t->base));
}

int view_builder_add_base(struct view_builder *vb, uint32_t node, uint64_t samples, uint64_t weight)
{
	int r = base_grow(vb, vb->b.t->nnodes);

	if (r < 0)
		return r;
	vb->b.t->base[node].self_samples += samples;
	vb->b.t->base[node].self_weight += weight;
	return 0;
}

int view_builder_finish(struct view_builder *vb, struct view_tree **out)
{
	struct view_tree *t = vb->b.t;
	int r = 0;

	*out = NULL;
	if (t->base)
		r = base_grow(vb, t->nnodes);
	if (r == 0)
		r = view_tree_finish(t, NULL, false);
	if (r == 0) {
		*out = t;
		vb->b.t = NULL;
	}
	view_builder_free(vb);
	return r;
}
