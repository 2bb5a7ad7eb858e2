/*
 * profile-events.bpf.h — profile.bpf.c's events other than the cpu-clock
 * sample: off-CPU time (sched_switch), RSS gained (kmem/rss_stat), block
 * I/O (submission to completion), network bytes (sock send and
 * receive) and bytes read and written through the VFS (the exit of the
 * system calls that move file data).  Included once, last, by
 * profile.bpf.c, whose record() each one ends in (see
 * profile-walk.bpf.h).
 */

/* ---- events with a beginning and an end ---------------------------------
 * Off-CPU time and block-I/O time are charged to the stack taken at the
 * beginning (switch-out, submission) by a count added at the end.  The
 * stacks live in the map set active at the beginning, so the count goes
 * to that set too, whichever is active at the end: a count added after
 * that set's drain waits there for its next drain, and its stacks, which
 * no count referred to at the drain, are still there.  The same holds
 * for the sample's record in that set's ring, whose moment is the
 * beginning (the stack's), its weight the time until the end. */
struct pending {
	__u64 ts;
	struct profile_key key;
	__u32 set;
	__u32 left; /* block-time: sectors of the bio not completed yet */
	__u32 tid;  /* the thread that began it */
	__u32 pad;
	__u64 span; /* the id of its innermost span then (record --span) */
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, __u32); /* thread id */
	__type(value, struct pending);
	__uint(max_entries, 16384);
} offcpu_start SEC(".maps");

struct bio_key {
	__u64 sector;
	__u64 disk; /* the struct gendisk's address */
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, struct bio_key);
	__type(value, struct pending);
	__uint(max_entries, 16384);
} bio_start SEC(".maps");

static __always_inline void begin(void *ctx, __u32 ev, __u32 tgid, struct pending *p)
{
	p->ts = bpf_ktime_get_ns();
	p->set = *(volatile __u32 *)&active;
	p->left = 0;
	p->tid = (__u32)bpf_get_current_pid_tgid();
	p->pad = 0;
	if (p->set)
		p->span = take_key(ctx, false, &kstacks1, &ustacks1, &pystacks1, ev, tgid, &p->key);
	else
		p->span = take_key(ctx, false, &kstacks0, &ustacks0, &pystacks0, ev, tgid, &p->key);
}

static __always_inline void end(const struct pending *p, __u32 ev, __u64 weight)
{
	count(PROFILE_STAT_SEEN);
	__sync_fetch_and_add(&ev_seen[ev], 1);
	if (p->set)
		add_sample(&samples1, &counts1, &p->key, weight, p->ts, p->tid, p->span);
	else
		add_sample(&samples0, &counts0, &p->key, weight, p->ts, p->tid, p->span);
}

/* (bool preempt, struct task_struct *prev, struct task_struct *next,
 * unsigned int prev_state); prev is the current task. */
SEC("raw_tp/sched_switch")
int on_switch(void *ctx)
{
	const __u64 *args = ctx;
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id, next_tid = 0;
	bool blocked = !args[0] && (__u32)args[3] != 0; /* not preempted, not runnable */
	struct pending st, *p;

	if (tid && (blocked || offcpu_preempt) && followed(tgid) && take_nth(PROFILE_EV_OFFCPU)) {
		begin(ctx, PROFILE_EV_OFFCPU, tgid, &st);
		if (bpf_map_update_elem(&offcpu_start, &tid, &st, BPF_ANY))
			count(PROFILE_STAT_COUNTS_FULL);
	}
	if (bpf_probe_read_kernel(&next_tid, sizeof(next_tid),
	                          (const char *)args[2] + pid_offset) ||
	    !next_tid)
		return 0;
	p = bpf_map_lookup_elem(&offcpu_start, &next_tid);
	if (p) {
		__u64 d = bpf_ktime_get_ns() - p->ts;
		if (d >= offcpu_min_ns)
			end(p, PROFILE_EV_OFFCPU, scaled(PROFILE_EV_OFFCPU, d));
		bpf_map_delete_elem(&offcpu_start, &next_tid);
	}
	return 0;
}

/* on_rss, a classic tracepoint program, returns 1: 0 would make the
 * kernel drop the event for every other perf user of the tracepoint (perf
 * record -e kmem:rss_stat saw nothing while flamefs recorded rss).  Raw
 * tracepoint programs' return values are ignored. */

/* A tracepoint record's field at a byte offset user space found. */
static __always_inline __u64 field(void *ctx, __u32 off, __u32 size)
{
	__u64 v = 0;
	bpf_probe_read_kernel(&v, size & 15, (const char *)ctx + off);
	return v;
}

/* A kernel struct's member at a byte offset user space found. */
static __always_inline __u64 kmember(__u64 base, __u32 off, __u32 size)
{
	__u64 v = 0;
	bpf_probe_read_kernel(&v, size & 15, (const char *)base + off);
	return v;
}

/* The last total of each (mm, counter), to turn rss_stat's totals into
 * gains. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, __u64);
	__type(value, __s64);
	__uint(max_entries, 16384);
} rss_last SEC(".maps");

/* The one classic tracepoint: its record's size is the exact total of
 * the mm's counter, percpu_counter_sum_positive(), summed over every
 * CPU by the kernel as it fills the record.  A raw tracepoint gets only
 * (mm, member), and summing the per-CPU parts here would need each
 * CPU's per-cpu offset, which is neither in kallsyms (without
 * CONFIG_KALLSYMS_ALL) nor reachable without the vmlinux BTF.  User
 * space attaches it by its id, reading that from tracefs, mounted in a
 * private mount namespace when it is not mounted (events.c). */
SEC("tracepoint/kmem/rss_stat")
int on_rss(void *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	__u32 member = (__u32)field(ctx, rss_member, 4);
	__s64 size = (__s64)field(ctx, rss_size, 8), *last, gain;
	__u64 key;

	/* MM_FILEPAGES 0, MM_ANONPAGES 1, MM_SHMEMPAGES 3; not MM_SWAPENTS */
	if (!field(ctx, rss_curr, 4) || member > 3 || member == 2 || !followed(tgid))
		return 1;
	key = field(ctx, rss_mm, 4) << 2 | member;
	last = bpf_map_lookup_elem(&rss_last, &key);
	if (!last) {
		bpf_map_update_elem(&rss_last, &key, &size, BPF_ANY);
		return 1; /* the first sight gives the level, not a gain */
	}
	gain = size - *last;
	*last = size;
	if (gain > 0 && take_nth(PROFILE_EV_RSS))
		record(ctx, false, PROFILE_EV_RSS, tgid, scaled(PROFILE_EV_RSS, (__u64)gain));
	return 1;
}

/* The block programs read what the block tracepoints' records hold, from
 * their arguments, as the kernel fills the records: a bio's sector
 * (bi_iter.bi_sector), sectors (bi_iter.bi_size >> 9) and op
 * (bi_opf & REQ_OP_MASK); a request's sector (blk_rq_pos(), __sector)
 * and the sectors completed (nr_bytes >> 9).  The record's dev,
 * disk_devt() of the bio's bi_bdev->bd_disk and of the request's
 * q->disk, only matches a bio to its request: the gendisk itself does
 * that. */
#define REQ_OP_MASK 0xffu /* (1 << REQ_OP_BITS) - 1 */

/* (struct bio *bio) */
SEC("raw_tp/block_bio_queue")
int on_bio(void *ctx)
{
	__u64 bio = ((const __u64 *)ctx)[0];
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	__u32 nr = (__u32)kmember(bio, bio_size, 4) >> 9;
	__u64 bytes = (__u64)nr << 9;
	__u32 op = (__u32)kmember(bio, bio_opf, 4) & REQ_OP_MASK;
	struct pending st;

	if (!followed(tgid) || !bytes)
		return 0;
	/* Discards and secure erases (the record's rwbs "D", "DE") move no
	 * data. */
	if (op == REQ_OP_DISCARD || op == REQ_OP_SECURE_ERASE)
		return 0;
	if ((ev_flags[PROFILE_EV_BLOCK] & PROFILE_EV_ON) && take_nth(PROFILE_EV_BLOCK))
		record(ctx, false, PROFILE_EV_BLOCK, tgid, scaled(PROFILE_EV_BLOCK, bytes));
	if ((ev_flags[PROFILE_EV_BLOCK_TIME] & PROFILE_EV_ON) && take_nth(PROFILE_EV_BLOCK_TIME)) {
		struct bio_key k = {.sector = kmember(bio, bio_sector, 8),
		                    .disk = kmember(kmember(bio, bio_bdev, 8), bdev_disk, 8)};
		begin(ctx, PROFILE_EV_BLOCK_TIME, tgid, &st);
		st.left = nr;
		if (bpf_map_update_elem(&bio_start, &k, &st, BPF_ANY))
			count(PROFILE_STAT_COUNTS_FULL);
	}
	return 0;
}

/* (struct request *rq, blk_status_t error, unsigned int nr_bytes).  A bio
 * the block layer split completes piece by piece, in order: the time is
 * charged when the piece holding its last sector completes (the entry
 * moves along to the next piece's first sector meanwhile). */
SEC("raw_tp/block_rq_complete")
int on_rq_complete(void *ctx)
{
	const __u64 *args = ctx;
	__u64 rq = args[0];
	struct bio_key k = {.sector = kmember(rq, rq_sector, 8),
	                    .disk = kmember(kmember(rq, rq_q, 8), q_disk, 8)};
	__u32 done = (__u32)args[2] >> 9;
	struct pending *p = bpf_map_lookup_elem(&bio_start, &k), rest;

	if (!p)
		return 0;
	if (done && p->left > done) {
		rest = *p;
		rest.left -= done;
		bpf_map_delete_elem(&bio_start, &k);
		k.sector += done;
		bpf_map_update_elem(&bio_start, &k, &rest, BPF_ANY);
		return 0;
	}
	end(p, PROFILE_EV_BLOCK_TIME, scaled(PROFILE_EV_BLOCK_TIME, bpf_ktime_get_ns() - p->ts));
	bpf_map_delete_elem(&bio_start, &k);
	return 0;
}

#define AF_INET     2
#define AF_INET6    10
#define IPPROTO_TCP 6
#define IPPROTO_UDP 17
#define MSG_PEEK    2

/* (struct sock *sk, int ret, int flags): the record's family and
 * protocol are sk->sk_family and sk->sk_protocol. */
static __always_inline int on_sock(void *ctx, bool recv)
{
	const __u64 *args = ctx;
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	__u16 family = (__u16)kmember(args[0], sk_family, 2);
	__u16 proto = (__u16)kmember(args[0], sk_protocol, 2);
	__s32 ret = (__s32)args[1];

	if (ret <= 0 || (family != AF_INET && family != AF_INET6) ||
	    (proto != IPPROTO_TCP && proto != IPPROTO_UDP))
		return 0;
	if (recv && ((__u32)args[2] & MSG_PEEK))
		return 0;
	if (followed(tgid) && take_nth(PROFILE_EV_NET))
		record(ctx, false, PROFILE_EV_NET, tgid, scaled(PROFILE_EV_NET, (__u64)ret));
	return 0;
}

SEC("raw_tp/sock_send_length")
int on_send(void *ctx)
{
	return on_sock(ctx, false);
}

SEC("raw_tp/sock_recv_length")
int on_recv(void *ctx)
{
	return on_sock(ctx, true);
}

/* ---- vfs-read and vfs-write ---------------------------------------------
 * Bytes moved through the VFS by the system calls that move file data,
 * taken at their return (raw_tp/sys_exit: the return value is what moved,
 * page cache or not): read, pread64, readv, preadv, preadv2 read their fd;
 * write, pwrite64, writev, pwritev, pwritev2 write theirs; sendfile,
 * splice and copy_file_range read their in fd and write their out fd (two
 * events).  x86-64 system call numbers; a 32-bit process's calls
 * (TS_COMPAT) are not counted.  The file system is that of the file the fd names at the return.
 *
 * Sampled by bytes, per thread and direction: each thread adds what its
 * calls move, and the call that brings the sum to the thread's threshold
 * takes a stack weighing the whole sum, which then starts again from 0.
 * So the weight stored is every byte moved but what each thread moved
 * since its last stack (less than its threshold), and a thread's weight
 * goes to its calls' stacks.  Thresholds are drawn at random, the first
 * of a thread in [1, N], the next ones in [N/2, 3N/2) (N of vfs:N, mean
 * N): a fixed threshold would charge a loop of a large and a small call
 * wholly to whichever call crosses it, while a random one makes the
 * chance that a call takes the stack its share of the bytes.  N = 1
 * takes a stack at every call. */
struct vfs_thread {
	__u64 bytes[2]; /* moved since the last stack: read, write */
	__u64 next[2];  /* the threshold; 0 until the first call */
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct vfs_thread);
} vfs_threads SEC(".maps");

/* Every byte the followed processes moved, per CPU: read, write. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, 2);
} vfs_bytes SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, struct profile_fs_name);
	__uint(max_entries, PROFILE_FS_MAX);
} fs_names SEC(".maps");

/* The fs of the key of a vfs event on file (profile.h: fs_names), its
 * name stored at its first sight; 0 when the type cannot be read, its
 * digest is another type's or fs_names is full. */
static __always_inline __u32 fs_index(__u64 file)
{
	__u64 type = kmember(kmember(kmember(file, vfs_f_inode, 8), vfs_i_sb, 8), sb_type, 8);
	struct profile_fs_name *got, fs = {};
	__u32 id = (__u32)(type ^ (type >> 32)) | 1;

	if (!type)
		return 0;
	got = bpf_map_lookup_elem(&fs_names, &id);
	if (got)
		return got->type == type ? id : 0;
	fs.type = type;
	if (bpf_probe_read_kernel_str(fs.name, sizeof(fs.name),
	                              (const void *)kmember(type, fstype_name, 8)) <= 0)
		return 0;
	if (bpf_map_update_elem(&fs_names, &id, &fs, BPF_NOEXIST) == 0)
		return id;
	got = bpf_map_lookup_elem(&fs_names, &id); /* another CPU was first */
	return got && got->type == type ? id : 0;
}

/* The struct file an fd of the current task names, or 0. */
static __always_inline __u64 fd_file(__u64 fd)
{
	__u64 files = kmember((__u64)bpf_get_current_task(), task_files, 8);
	__u64 fdt = kmember(files, files_fdt, 8);

	if (!fdt || fd >= kmember(fdt, fdt_max_fds, 4))
		return 0;
	return kmember(kmember(fdt, fdt_fd, 8) + fd * 8, 0, 8);
}

/* One call of the current thread (task) moved ret > 0 bytes through the fd
 * in its system call's argument at pt_regs offset fd_at, in direction dir
 * (0 read, 1 write).  A call that takes no stack costs one task-storage
 * lookup and no other helper call; the fd is read only when a stack is
 * taken. */
static __always_inline void vfs_done(void *ctx, struct task_struct *task, __u64 regs, __u32 fd_at,
                                     __s64 ret, __u32 dir)
{
	__u32 ev = dir ? PROFILE_EV_VFS_WRITE : PROFILE_EV_VFS_READ;
	__u32 every = ev_every[ev], tgid;
	struct vfs_thread *t;
	struct profile_key key;
	__u64 *all, weight;

	if (!(ev_flags[ev] & PROFILE_EV_ON))
		return;
	/* A thread with storage is followed: it got it that way, and a
	 * process stays followed until it exits. */
	t = bpf_task_storage_get(&vfs_threads, task, 0, 0);
	if (!t) {
		if (!followed(bpf_get_current_pid_tgid() >> 32))
			return;
		t = bpf_task_storage_get(&vfs_threads, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
		if (!t)
			return;
	}
	all = bpf_map_lookup_elem(&vfs_bytes, &dir);
	if (all)
		*all += (__u64)ret;
	if (every < 1)
		every = 1;
	if (!t->next[dir])
		t->next[dir] = 1 + bpf_get_prandom_u32() % every;
	t->bytes[dir] += (__u64)ret;
	if (t->bytes[dir] < t->next[dir])
		return;
	weight = t->bytes[dir];
	t->bytes[dir] = 0;
	t->next[dir] = (every + 1) / 2 + bpf_get_prandom_u32() % every;

	/* record(), with the file system in the key */
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id;
	tgid = id >> 32;
	__u64 ts = bpf_ktime_get_ns();
	count(PROFILE_STAT_SEEN);
	__sync_fetch_and_add(&ev_seen[ev], 1);
	if (*(volatile __u32 *)&active) {
		__u64 sid = take_key(ctx, false, &kstacks1, &ustacks1, &pystacks1, ev, tgid, &key);
		key.fs = fs_index(fd_file(kmember(regs, fd_at, 8)));
		add_sample(&samples1, &counts1, &key, weight, ts, tid, sid);
	} else {
		__u64 sid = take_key(ctx, false, &kstacks0, &ustacks0, &pystacks0, ev, tgid, &key);
		key.fs = fs_index(fd_file(kmember(regs, fd_at, 8)));
		add_sample(&samples0, &counts0, &key, weight, ts, tid, sid);
	}
}

#define NR_read            0
#define NR_write           1
#define NR_pread64         17
#define NR_pwrite64        18
#define NR_readv           19
#define NR_writev          20
#define NR_sendfile        40
#define NR_splice          275
#define NR_preadv          295
#define NR_pwritev         296
#define NR_copy_file_range 326
#define NR_preadv2         327
#define NR_pwritev2        328
#define TS_COMPAT          0x0002 /* thread_info.status: a 32-bit call */

/* A BTF-typed kernel pointer's member at a byte offset from .rodata: the
 * verifier reads a frozen .rodata's value as a constant, so this is a
 * checked direct load (no helper call), as base->member would be. */
static __always_inline __u64 btf_member8(const void *base, __u32 off)
{
	return *(const __u64 *)((const char *)base + off);
}

/* (struct pt_regs *regs, long ret): a BTF tracepoint, so regs and the
 * current task are typed pointers the program reads directly; the call is
 * matched by number before anything else is read. */
SEC("tp_btf/sys_exit")
int on_sys_exit(__u64 *ctx)
{
	const struct pt_regs *regs = (const struct pt_regs *)ctx[0];
	__s64 ret = (__s64)ctx[1];
	__u32 in = 0, out = 0; /* the fds' pt_regs offsets, 0: none */
	struct task_struct *task;

	if (ret <= 0)
		return 0;
	switch (btf_member8(regs, regs_nr)) {
	case NR_read:
	case NR_pread64:
	case NR_readv:
	case NR_preadv:
	case NR_preadv2: in = regs_arg0; break;
	case NR_write:
	case NR_pwrite64:
	case NR_writev:
	case NR_pwritev:
	case NR_pwritev2: out = regs_arg0; break;
	case NR_sendfile: /* (out_fd, in_fd, ...) */
		in = regs_arg1;
		out = regs_arg0;
		break;
	case NR_splice:          /* (fd_in, off_in, fd_out, ...) */
	case NR_copy_file_range: /* the same */
		in = regs_arg0;
		out = regs_arg2;
		break;
	default: return 0;
	}
	/* A 32-bit task's numbers are other calls (its 20 is getpid). */
	task = bpf_get_current_task_btf();
	if (*(const __u32 *)((const char *)task + ti_status) & TS_COMPAT)
		return 0;
	if (in)
		vfs_done(ctx, task, (__u64)regs, in, ret, 0);
	if (out)
		vfs_done(ctx, task, (__u64)regs, out, ret, 1);
	return 0;
}
