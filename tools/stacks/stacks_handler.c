/* SPDX-License-Identifier: MIT */
/* The stack tool's signal handler, its records and the snapshot (stacks_handler.h). */
#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include <errno.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "stacks_format.h"
#include "stacks_handler.h"
#include "stacks_proc.h"
#include "stacks_python.h"
#include "stacks_threads.h"

_Static_assert(sizeof(unw_context_t) >= sizeof(ucontext_t), "libunwind's context is the ucontext");

/*
 * Unwind from uc, the interrupted context the kernel handed the handler
 * (libunwind's context is the ucontext on Linux), or from here when uc is
 * NULL. Frames are instruction pointers: the first one exact, the others
 * return addresses.
 */
static void unwind_into(struct record *r, void *uc)
{
	unw_context_t here;
	unw_cursor_t cur;
	unw_word_t ip;
	int rc;

	r->nframes = 0;
	r->truncated = 0;
	if (uc)
		rc = unw_init_local2(&cur, (unw_context_t *)uc, UNW_INIT_SIGNAL_FRAME);
	else
		rc = unw_getcontext(&here) || unw_init_local(&cur, &here);
	if (rc)
		return;
	do {
		if (unw_get_reg(&cur, UNW_REG_IP, &ip) || !ip)
			break;
		if (r->nframes == st.max_frames) {
			r->truncated = 1;
			break;
		}
		r->frames[r->nframes++] = (uint64_t)ip;
	} while (unw_step(&cur) > 0);
}

static long claim_record(void)
{
	size_t i = atomic_fetch_add(&st.next_record, 1);

	if (i >= st.n_records) {
		atomic_fetch_add(&st.dropped, 1);
		return -1;
	}
	return (long)i;
}

static void take_sample(pid_t tid, siginfo_t *si, void *uc, unsigned long long entry)
{
	struct thread *t;
	struct record *r;
	long i;

	if (!atomic_load(&st.sampling) || st.sample_part == SAMPLE_SIGNAL)
		return;
	if (si->si_overrun > 0)
		atomic_fetch_add(&st.overruns, (unsigned long)si->si_overrun);
	i = claim_record();
	if (i < 0)
		return;
	r = record_at((size_t)i);
	r->tid = tid;
	r->kind = RS_KIND_SAMPLE;
	r->ns = now_ns();
	if (st.sample_part == SAMPLE_RECORD) {
		r->nframes = r->truncated = 0;
		r->npy = r->py_truncated = 0;
	} else {
		unwind_into(r, uc);
		t = thread_of(tid);
		if (t)
			py_copy(r, tid, &t->py_tstate);
		else
			r->npy = r->py_truncated = 0;
	}
	r->handler_ns = mono_ns() - entry;
}

/* A snapshot request (tgkill): answer only if asked, once. */
static void answer_snapshot(pid_t tid, void *uc, unsigned long long entry)
{
	struct thread *t = thread_of(tid);
	int expected = SLOT_ASKED;
	struct record *r;
	long i;

	if (!t || !atomic_compare_exchange_strong(&t->snap, &expected, SLOT_BUSY))
		return;
	i = claim_record();
	if (i >= 0) {
		r = record_at((size_t)i);
		r->tid = tid;
		r->kind = RS_KIND_SNAPSHOT;
		r->ns = now_ns();
		r->entry_mono = entry;
		r->npy = r->py_truncated = 0;
		if (st.unwind) {
			unwind_into(r, uc);
			py_copy(r, tid, &t->py_tstate);
		} else {
			r->nframes = r->truncated = 0;
		}
		r->handler_ns = mono_ns() - entry;
	}
	atomic_store(&t->snap_record, i);
	/* The last read: the snapshot's hold ends with this handler's return. */
	atomic_store(&t->ret_mono, mono_ns());
	atomic_store(&t->snap, SLOT_DONE);
}

void stacks_handler(int sig, siginfo_t *si, void *uc)
{
	unsigned long long entry = mono_ns();
	int saved = errno;
	pid_t tid = (pid_t)syscall(SYS_gettid);

	(void)sig;
	atomic_fetch_add(&st.in_handler, 1);
	if (si->si_code == SI_TIMER)
		take_sample(tid, si, uc, entry);
	else
		answer_snapshot(tid, uc, entry);
	atomic_fetch_sub(&st.in_handler, 1);
	errno = saved;
}

int pool_alloc(void)
{
	size_t mb = (size_t)env_long("ROCPROF_STACKS_BUFFER_MB", DEFAULT_BUFFER_MB, 1, 4096);

	st.max_frames =
	    (unsigned)env_long("ROCPROF_STACKS_MAX_FRAMES", DEFAULT_FRAMES, 1, MAX_FRAMES);
	st.record_size =
	    sizeof(struct record) + st.max_frames * sizeof(uint64_t) + py_record_bytes();
	st.n_records = mb * 1024 * 1024 / st.record_size;
	/* Touched now: the handler must never fault in fresh pages of a lazy mapping. */
	st.pool = mmap(NULL, st.n_records * st.record_size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (st.pool == MAP_FAILED) {
		st.pool = NULL;
		return -1;
	}
	atomic_store(&st.next_record, 0);
	atomic_store(&st.dropped, 0);
	atomic_store(&st.overruns, 0);
	return 0;
}

void pool_free(void)
{
	if (st.pool && !atomic_load(&st.in_handler))
		munmap(st.pool, st.n_records * st.record_size);
	st.pool = NULL;
}

void snapshot_self(void)
{
	struct thread *t = threads_add(st.self_tid);
	long i;

	if (!t)
		return;
	i = claim_record();
	if (i >= 0) {
		struct record *r = record_at((size_t)i);

		r->tid = st.self_tid;
		r->kind = RS_KIND_SNAPSHOT;
		r->ns = now_ns();
		unwind_into(r, NULL);
		py_copy(r, st.self_tid, &t->py_tstate);
	}
	atomic_store(&t->snap_record, i);
	t->snap_status = i < 0 ? RS_SNAP_NOROOM : RS_SNAP_SELF;
}

/* Send the signal to every known thread but this one, or say why not. */
static void ask_all(int n)
{
	pid_t pid = getpid();

	for (int i = 0; i < n; i++) {
		struct thread *t = &st.threads[i];

		if (t->tid == st.self_tid)
			continue;
		if (sig_in_mask(status_mask(t->tid, "SigBlk:"), st.sig)) {
			t->snap_status = RS_SNAP_BLOCKED;
			continue;
		}
		atomic_store(&t->snap, SLOT_ASKED);
		t->sent_mono = mono_ns();
		if (syscall(SYS_tgkill, pid, t->tid, st.sig)) {
			atomic_store(&t->snap, SLOT_FREE);
			t->snap_status = errno == ESRCH ? RS_SNAP_GONE : RS_SNAP_NOANSWER;
		}
	}
}

/* After the deadline: what each asked thread gave. */
static void collect(int n)
{
	for (int i = 0; i < n; i++) {
		struct thread *t = &st.threads[i];
		int expected = SLOT_ASKED;

		if (t->tid == st.self_tid)
			continue;
		/* Too late: the handler will not answer an unasked slot. */
		if (atomic_compare_exchange_strong(&t->snap, &expected, SLOT_FREE)) {
			t->snap_status = RS_SNAP_NOANSWER;
			continue;
		}
		/* Answering now: an unwind is short, give it a last 100 ms. */
		for (int k = 0; k < 100 && atomic_load(&t->snap) == SLOT_BUSY; k++)
			sleep_ms(1);
		if (atomic_load(&t->snap) == SLOT_DONE)
			t->snap_status =
			    atomic_load(&t->snap_record) < 0 ? RS_SNAP_NOROOM : RS_SNAP_OK;
		else if (atomic_load(&t->snap) == SLOT_BUSY)
			t->snap_status = RS_SNAP_NOANSWER;
	}
}

/*
 * Is a thread still asked? One that ended after its tgkill never answers:
 * it is "gone", and the snapshot does not wait the deadline for it.
 */
static bool still_asked(struct thread *t, pid_t pid)
{
	int expected = SLOT_ASKED;

	if (atomic_load(&t->snap) != SLOT_ASKED)
		return false;
	if (!syscall(SYS_tgkill, pid, t->tid, 0) || errno != ESRCH)
		return true;
	if (atomic_compare_exchange_strong(&t->snap, &expected, SLOT_FREE))
		t->snap_status = RS_SNAP_GONE;
	return false;
}

void snapshot(long timeout_ms)
{
	unsigned long long deadline = now_ns() + (unsigned long long)timeout_ms * 1000000ULL;
	int n = atomic_load(&st.n_threads);
	pid_t pid = getpid();
	bool waiting;

	ask_all(n);
	do {
		waiting = false;
		for (int i = 0; i < n; i++)
			waiting |= still_asked(&st.threads[i], pid);
		if (waiting)
			sleep_ms(1);
	} while (waiting && now_ns() < deadline);
	collect(n);
}
