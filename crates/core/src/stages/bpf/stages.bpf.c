// SPDX-License-Identifier: MIT OR GPL-2.0
//
// `--stages` on the raw tracepoints, BTF-typed (`tp_btf/`: a tracing
// program attached as a raw tracepoint): the same program as the io_uring
// one of ../script.rs, probe for probe and map for map, without the
// classic tracepoints' cost (a classic tracepoint fills its perf-event
// record before the program runs: about 200 ns per event here; a raw
// tracepoint hands the program the tracepoint's arguments). BTF-typed, the
// arguments' fields are plain loads (a `raw_tp/` program reads each with a
// probe-read helper call: measured with kernel.bpf_stats_enabled on a loop
// device, block_rq_issue's program took 227 ns that way and 78 ns this).
//
// What an I/O not followed costs is kept to array lookups, which the
// verifier inlines: the thread's open I/O is a per-CPU slot (not a hash by
// thread), and the in-flight hashes `b` and `q` are only looked up where
// their hint slot says an entry may be.
//
// Built by crates/core/build.rs with `clang -O2 -g -target bpf` into
// OUT_DIR and embedded in dioscope; loaded by ../raw.rs through the
// system's libbpf (dioscope_sys::bpf), which relocates the field reads
// below (CO-RE) against the running kernel's BTF. The kernel structs
// declare only the fields read, with preserve_access_index: their offsets
// come from /sys/kernel/btf/vmlinux at load time, not from these
// declarations.
//
// Maps (read by ../raw.rs into the same parse::Maps the bpftrace output
// fills):
// - hist: per-CPU array of (count, sum) per (dir, stage, bucket), the
//   buckets of script.rs's bucket_of (16 per power of two);
// - cnt: per-CPU array of counters: the run's requests per direction (n),
//   punts to io-wq (punt), other processes' bios (other), merges, splits;
// - on: the measured window, written by user space (no prctl);
// - q, cur, b, dd: the I/Os in flight, as @q, @cur, @b and @dd;
// - post: when each CQE was posted, mapped into dioscope (not through
//   parse::Maps: the workers read it as they reap).

#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

typedef __u8 u8;
typedef __u32 u32;
typedef __u64 u64;

// The kernel's structs, only the fields read (CO-RE relocated).
struct block_device {
	u32 bd_dev;
} __attribute__((preserve_access_index));

struct bvec_iter {
	u64 bi_sector;
	unsigned int bi_size;
} __attribute__((preserve_access_index));

struct bio {
	struct block_device *bi_bdev;
	unsigned int bi_opf;
	struct bvec_iter bi_iter;
} __attribute__((preserve_access_index));

struct gendisk {
	int major;
	int first_minor;
} __attribute__((preserve_access_index));

struct request_queue {
	struct gendisk *disk;
} __attribute__((preserve_access_index));

struct request {
	struct request_queue *q;
	unsigned int cmd_flags;
	u64 __sector;
} __attribute__((preserve_access_index));

struct io_cqe {
	u64 user_data;
} __attribute__((preserve_access_index));

struct io_cmd_data {
	void *file;
} __attribute__((preserve_access_index));

struct io_kiocb {
	struct io_cmd_data cmd;
	u8 opcode;
	struct io_cqe cqe;
} __attribute__((preserve_access_index));

// A read or write request's command (io_kiocb_to_cmd: it sits in `cmd`):
// only the file position read.
struct kiocb {
	long long ki_pos;
} __attribute__((preserve_access_index));

struct io_rw {
	struct kiocb kiocb;
} __attribute__((preserve_access_index));

struct io_uring_cqe {
	u64 user_data;
} __attribute__((preserve_access_index));

struct io_ring_ctx;

enum req_flag_bits {
	__REQ_PREFLUSH = 18,
};

#define MAX_DEVS 8
// Buckets per (dir, stage): bucket_of(u64::MAX) = 60 * 16 + 15.
#define NB 976
#define NSTAGES 6
#define MAP_KEYS 16384

enum stage { TOTAL = 0, SUBMISSION = 1, BLOCK = 2, DEVICE = 3, POSTING = 4, HANDOFF = 5 };
// Counters: n[dir], punt[dir], other[dir], merge, split, bytes[dir] (the
// run's bios), obytes[dir] (other processes' bios).
enum {
	C_N = 0, C_PUNT = 2, C_OTHER = 4, C_MERGE = 6, C_SPLIT = 7,
	C_BYTES = 8, C_OBYTES = 10, NCNT = 12
};

// What the loader sets before loading (the only .rodata: raw.rs writes it
// whole and checks its size).
struct config {
	u32 tgid;
	u32 sample;
	u32 nbio;
	u32 nrq;
	u32 bio_devs[MAX_DEVS];
	u32 rq_devs[MAX_DEVS];
	// Every target is a whole block device: an I/O's file position ÷ 512
	// is the sector its bio carries, so an I/O handed to io-wq is joined
	// to the bio the io-wq worker queues by that sector.
	u32 pos_is_sector;
};
const volatile struct config cfg = {};

struct hv {
	u64 count;
	u64 sum;
};
struct qv {
	u64 ts;
	u64 dir;
};
struct cv {
	u64 req;
	u64 ts;
	u64 tid;
};
struct bv {
	u64 ts;
	u64 dir;
	u64 req;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, u32);
} on SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, NCNT);
	__type(key, u32);
	__type(value, u64);
} cnt SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2 * NSTAGES * NB);
	__type(key, u32);
	__type(value, struct hv);
} hist SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAP_KEYS);
	__type(key, u64);
	__type(value, struct qv);
} q SEC(".maps");

// The I/O the thread on this CPU opened last (its tid in the value): a
// request's bio is queued by the thread that submitted it, on the CPU it
// submitted on, unless the thread moved between the two (then the bio is
// taken for a worker's and drawn on its own). Per CPU, so reached without
// a hash.
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct cv);
} cur SEC(".maps");

// Hints that spare the hash lookups of the I/Os not followed: how many
// entries of `b` (first half, by sector) and `q` (second half, by request)
// may sit in each slot. Raised before an entry goes in, lowered after one
// comes out, so a slot is never 0 while an entry of it exists; a slot at 0
// means there is nothing to look up.
// 4,096 slots (16 KiB, in cache) for the few entries in flight (about
// iodepth ÷ sample): a slot shared by chance costs one hash lookup.
#define NHINT 4096
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 3 * NHINT);
	__type(key, u32);
	__type(value, u32);
} hint SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAP_KEYS);
	__type(key, u64);
	__type(value, struct bv);
} b SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAP_KEYS);
	__type(key, u64);
	__type(value, u64);
} dd SEC(".maps");

// Followed I/Os handed to io-wq, by the sector their bio will carry
// (cfg.pos_is_sector): when they were handed over, and the request.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAP_KEYS);
	__type(key, u64);
	__type(value, struct bv);
} pq SEC(".maps");

// Completion delivery, per I/O: when each of the run's CQEs was posted,
// read by the worker that reaps it (mapped into dioscope: BPF_F_MMAPABLE)
// against its own clock (CLOCK_MONOTONIC, as bpf_ktime_get_ns). dioscope
// puts its worker's part (1-based) in the user_data's upper half and the
// slot in the lower, so the entry is the worker's own: part - 1 picks a
// block of NSLOT entries, the slot one of them. Every I/O, not sampled:
// one clock read and one store. The worker clears `ts` after reading, so
// an entry the program did not write for this I/O is never taken for it.
// (runner/worker/delivery.rs reads it: keep NPART, NSLOT and struct post
// as there.)
#define NPART 64
#define NSLOT 4096
struct post {
	u64 ud;
	u64 ts;
};
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, NPART * NSLOT);
	__type(key, u32);
	__type(value, struct post);
} post SEC(".maps");

static __always_inline void add(u32 i, u64 n)
{
	u64 *v = bpf_map_lookup_elem(&cnt, &i);
	if (v)
		*v += n;
}

static __always_inline void count(u32 i)
{
	add(i, 1);
}

static __always_inline u32 *hint_of(u32 half, u64 key)
{
	u32 i = half * NHINT + (u32)((key ^ (key >> 16) ^ (key >> 32)) & (NHINT - 1));
	return bpf_map_lookup_elem(&hint, &i);
}

// Put `v` at `key` of `map`, its hint in slot `hk` of `half` (for `b`
// the sector itself; for `q` the request's user_data, as the request's
// address is a pointer the verifier does no arithmetic on).
static __always_inline void put(void *map, u32 half, u64 hk, u64 key, void *v)
{
	u32 *h = hint_of(half, hk);
	if (h)
		__sync_fetch_and_add(h, 1);
	if (bpf_map_update_elem(map, &key, v, BPF_NOEXIST) == 0)
		return;
	// There already (counted when it went in), or the map is full.
	if (h)
		__sync_fetch_and_add(h, -1);
	bpf_map_update_elem(map, &key, v, BPF_EXIST);
}

// Whether an entry of `half` may sit at hint key `hk` (its slot is not 0).
static __always_inline int may_hold(u32 half, u64 hk)
{
	u32 *h = hint_of(half, hk);
	return !h || *h;
}

static __always_inline void *get(void *map, u32 half, u64 hk, u64 key)
{
	if (!may_hold(half, hk))
		return 0;
	return bpf_map_lookup_elem(map, &key);
}

static __always_inline void del(void *map, u32 half, u64 hk, u64 key)
{
	u32 *h = hint_of(half, hk);
	if (h && !*h)
		return;
	// The hint's slot was read once above: the count it keeps goes down
	// only when an entry really left.
	if (bpf_map_delete_elem(map, &key) == 0 && h)
		__sync_fetch_and_add(h, -1);
}

#define HB 0
#define HP 2
#define HQ 1

static __always_inline int window(void)
{
	u32 k = 0;
	u32 *v = bpf_map_lookup_elem(&on, &k);
	return v && *v;
}

static __always_inline int ours(void)
{
	return (bpf_get_current_pid_tgid() >> 32) == cfg.tgid;
}

// script.rs's sampled(): a hash of the clock picks one I/O in `sample`.
// One I/O in `sample`, drawn from the kernel's per-CPU pseudo-random
// numbers (the bpftrace program hashes the clock; this spares a clock read
// for the I/Os not followed): nothing about the I/O decides.
static __always_inline int followed(void)
{
	u32 n = cfg.sample;
	return n <= 1 || bpf_get_prandom_u32() % n == 0;
}

// script.rs's record(): one per-CPU update of the bucket's count and sum.
static __always_inline void record(u64 dir, u32 stage, u64 v)
{
	u64 x = v, l = 0, k = v;
	if (x >= 4294967296ULL) { x >>= 32; l += 32; }
	if (x >= 65536) { x >>= 16; l += 16; }
	if (x >= 256) { x >>= 8; l += 8; }
	if (x >= 16) { x >>= 4; l += 4; }
	if (x >= 4) { x >>= 2; l += 2; }
	if (x >= 2) { l += 1; }
	if (l >= 4)
		k = (l - 3) * 16 + ((v >> (l - 4)) & 15);
	if (dir > 1 || k >= NB)
		return;
	u32 i = (dir * NSTAGES + stage) * NB + k;
	struct hv *h = bpf_map_lookup_elem(&hist, &i);
	if (h) {
		h->count += 1;
		h->sum += v;
	}
}

static __always_inline int in(const volatile u32 *devs, u32 n, u32 dev)
{
#pragma unroll
	for (int i = 0; i < MAX_DEVS; i++)
		if (i < n && devs[i] == dev)
			return 1;
	return 0;
}

// The direction of an io_uring opcode (0 read, 1 write, 2 other): READV,
// READ_FIXED, READ; WRITEV, WRITE_FIXED, WRITE.
static __always_inline u64 opdir(u8 op)
{
	if (op == 22 || op == 1 || op == 4)
		return 0;
	if (op == 23 || op == 2 || op == 5)
		return 1;
	return 2;
}

// The tracepoint's rwbs starts with 'W': a write without a preflush.
static __always_inline u64 bio_dir(struct bio *bio)
{
	unsigned int opf = bio->bi_opf;
	unsigned int preflush = 1u << bpf_core_enum_value(enum req_flag_bits, __REQ_PREFLUSH);
	return (opf & 0xff) == 1 && !(opf & preflush);
}

static __always_inline u32 bio_dev(struct bio *bio)
{
	return bio->bi_bdev->bd_dev;
}

// The tracepoint's dev of a request: its disk's (major, first minor).
static __always_inline u32 rq_dev(struct request *rq)
{
	struct gendisk *d = rq->q->disk;
	if (!d)
		return 0;
	return ((u32)d->major << 20) | (u32)d->first_minor;
}

// The tracepoint's sector of a request: 0 for a passthrough one.
static __always_inline u64 rq_sector(struct request *rq)
{
	unsigned int op = rq->cmd_flags & 0xff;
	if (op == 34 || op == 35)
		return 0;
	return rq->__sector;
}

SEC("tp_btf/io_uring_submit_req")
int BPF_PROG(submit_req, struct io_kiocb *req)
{
	u64 id = bpf_get_current_pid_tgid();
	if ((id >> 32) != cfg.tgid || !window())
		return 0;
	u64 d = opdir(req->opcode);
	if (d > 1)
		return 0;
	count(C_N + d);
	// A thread's I/O not followed needs no time: ts 1 says it is open.
	u64 now = 1;
	u64 req_key = 0;
	if (followed()) {
		now = bpf_ktime_get_ns();
		struct qv v = { .ts = now, .dir = d };
		req_key = (u64)req;
		put(&q, HQ, req->cqe.user_data, req_key, &v);
	}
	u32 z = 0;
	struct cv *cp = bpf_map_lookup_elem(&cur, &z);
	if (cp) {
		cp->req = req_key;
		cp->ts = now;
		cp->tid = (u32)id;
	}
	return 0;
}

// The sector a read or write request's bio will carry on a whole block
// device: its file position ÷ 512 (set when the request was prepared).
static __always_inline u64 req_sector(struct io_kiocb *req)
{
	struct io_rw *rw = (struct io_rw *)&req->cmd;
	long long pos = 0;
	bpf_probe_read_kernel(&pos, sizeof(pos), &rw->kiocb.ki_pos);
	return (u64)pos >> 9;
}

SEC("tp_btf/io_uring_queue_async_work")
int BPF_PROG(queue_async_work, struct io_kiocb *req, int rw)
{
	u64 id = bpf_get_current_pid_tgid();
	if ((id >> 32) != cfg.tgid || !window())
		return 0;
	u64 d = opdir(req->opcode);
	if (d > 1)
		return 0;
	count(C_PUNT + d);
	// The submitting thread's open I/O goes to io-wq: its next bio is
	// not this I/O's.
	u64 key = (u64)req;
	u32 z = 0;
	struct cv *cp = bpf_map_lookup_elem(&cur, &z);
	if (cp && cp->tid == (u32)id && cp->req == key) {
		cp->req = 0;
		cp->ts = 1;
	}
	if (!cfg.pos_is_sector)
		return 0;
	struct qv *v = get(&q, HQ, req->cqe.user_data, key);
	if (!v || !v->ts)
		return 0;
	// Followed: its submission ends here, its hand-off begins.
	u64 now = bpf_ktime_get_ns();
	record(d, SUBMISSION, now - v->ts);
	u64 sector = req_sector(req);
	struct bv e = { .ts = now, .dir = d, .req = key };
	put(&pq, HP, sector, sector, &e);
	return 0;
}

SEC("tp_btf/block_bio_queue")
int BPF_PROG(bio_queue, struct bio *bio)
{
	if (!in(cfg.bio_devs, cfg.nbio, bio_dev(bio)))
		return 0;
	u64 d = bio_dir(bio);
	u64 size = bio->bi_iter.bi_size;
	u64 id = bpf_get_current_pid_tgid();
	if ((id >> 32) != cfg.tgid) {
		count(C_OTHER + d);
		add(C_OBYTES + d, size);
		return 0;
	}
	if (!window())
		return 0;
	add(C_BYTES + d, size);
	u64 sector = bio->bi_iter.bi_sector;
	u32 tid = (u32)id;
	u32 z = 0;
	struct cv *cp = bpf_map_lookup_elem(&cur, &z);
	struct cv c = { 0, 0, 0 };
	if (cp && cp->tid == tid)
		c = *cp;
	if (c.req) {
		u64 now = bpf_ktime_get_ns();
		record(d, SUBMISSION, now - c.ts);
		if (cp) {
			cp->req = 0;
			cp->ts = 1;
		}
		struct bv e = { .ts = now, .dir = d, .req = c.req };
		put(&b, HB, sector, sector, &e);
		return 0;
	}
	if (cfg.pos_is_sector && !c.ts) {
		// A bio an io-wq worker queued: the hand-off of the followed I/O
		// at this sector ends; the others are not followed (their I/O
		// was drawn at submission).
		struct bv *p = get(&pq, HP, sector, sector);
		if (p && p->ts) {
			u64 now = bpf_ktime_get_ns();
			record(d, HANDOFF, now - p->ts);
			struct bv e = { .ts = now, .dir = d, .req = p->req };
			del(&pq, HP, sector, sector);
			put(&b, HB, sector, sector, &e);
			return 0;
		}
		del(&b, HB, sector, sector);
		return 0;
	}
	if (!c.ts && followed()) {
		struct bv e = { .ts = bpf_ktime_get_ns(), .dir = d, .req = 0 };
		put(&b, HB, sector, sector, &e);
	} else {
		// A bio of the run that is not followed: an entry a followed bio
		// left at this sector and never turned into a request (merged at
		// the front, failed with EAGAIN) would otherwise be found by the
		// next request here and its age taken for that request's
		// block-layer time (script.rs's joined_bio_queue). The hint
		// spares the delete when there is nothing to delete.
		del(&b, HB, sector, sector);
	}
	return 0;
}

static __always_inline int merged(struct bio *bio, u32 what)
{
	if (in(cfg.bio_devs, cfg.nbio, bio_dev(bio)) && ours() && window()) {
		count(what);
		return 1;
	}
	return 0;
}

// A bio merged into another's request is never issued at its own sector:
// its entry goes, and so, on a front merge, does the entry of the request
// it now starts (issued at the merged bio's sector).
SEC("tp_btf/block_bio_backmerge")
int BPF_PROG(bio_backmerge, struct bio *bio)
{
	if (merged(bio, C_MERGE)) {
		u64 sector = bio->bi_iter.bi_sector;
		del(&b, HB, sector, sector);
	}
	return 0;
}

SEC("tp_btf/block_bio_frontmerge")
int BPF_PROG(bio_frontmerge, struct bio *bio)
{
	if (merged(bio, C_MERGE)) {
		u64 sector = bio->bi_iter.bi_sector;
		del(&b, HB, sector, sector);
		sector += bio->bi_iter.bi_size >> 9;
		del(&b, HB, sector, sector);
	}
	return 0;
}

SEC("tp_btf/block_split")
int BPF_PROG(split, struct bio *bio, unsigned int new_sector)
{
	merged(bio, C_SPLIT);
	return 0;
}

SEC("tp_btf/block_rq_issue")
int BPF_PROG(rq_issue, struct request *rq)
{
	// Most requests are not followed: the hint (one load from the
	// request, one array slot) says so before the device check's three
	// dependent loads (request → queue → disk).
	u64 sector = rq_sector(rq);
	if (!may_hold(HB, sector) || !in(cfg.rq_devs, cfg.nrq, rq_dev(rq)))
		return 0;
	// The hint is checked: look up at once.
	struct bv *e = bpf_map_lookup_elem(&b, &sector);
	if (!e || !e->ts)
		return 0;
	u64 now = bpf_ktime_get_ns();
	record(e->dir, BLOCK, now - e->ts);
	e->ts = now;
	return 0;
}

// The device stage ends: the bio (or its request) at `sector` completed.
static __always_inline void done(u64 sector)
{
	struct bv *e = get(&b, HB, sector, sector);
	if (!e || !e->ts)
		return;
	u64 now = bpf_ktime_get_ns();
	record(e->dir, DEVICE, now - e->ts);
	if (e->req) {
		u64 req = e->req;
		bpf_map_update_elem(&dd, &req, &now, BPF_ANY);
	}
	del(&b, HB, sector, sector);
}

SEC("tp_btf/block_rq_complete")
int BPF_PROG(rq_complete, struct request *rq, int error, unsigned int nr_bytes)
{
	// As rq_issue: the hint first, then the device.
	u64 sector = rq_sector(rq);
	if (may_hold(HB, sector) && in(cfg.rq_devs, cfg.nrq, rq_dev(rq)))
		done(sector);
	return 0;
}

SEC("tp_btf/block_bio_complete")
int BPF_PROG(bio_complete, struct request_queue *rq_q, struct bio *bio)
{
	if (in(cfg.bio_devs, cfg.nbio, bio_dev(bio)))
		done(bio->bi_iter.bi_sector);
	return 0;
}

SEC("tp_btf/io_uring_complete")
int BPF_PROG(uring_complete, struct io_ring_ctx *ring, void *req, struct io_uring_cqe *cqe)
{
	if (!ours())
		return 0;
	u64 key = (u64)req;
	u64 ud = cqe->user_data;
	u64 now = 0;
	u32 part = ud >> 32;
	u32 slot = (u32)ud;
	if (part && part <= NPART && slot < NSLOT) {
		u32 i = (part - 1) * NSLOT + slot;
		struct post *p = bpf_map_lookup_elem(&post, &i);
		if (p) {
			now = bpf_ktime_get_ns();
			p->ud = ud;
			p->ts = now;
		}
	}
	struct qv *v = get(&q, HQ, ud, key);
	if (!v || !v->ts)
		return 0;
	if (!now)
		now = bpf_ktime_get_ns();
	u64 d = v->dir;
	record(d, TOTAL, now - v->ts);
	u64 *t = bpf_map_lookup_elem(&dd, &key);
	if (t && *t) {
		record(d, POSTING, now - *t);
		bpf_map_delete_elem(&dd, &key);
	}
	del(&q, HQ, ud, key);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
