/* SPDX-License-Identifier: MIT */
/* CPython found at attach, its frames copied in the handler (stacks_python.h). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "stacks_python.h"

/* Threads walked at most to find this one's state, interpreters at most. */
#define PY_MAX_TSTATES 4096
#define PY_MAX_INTERPS 16

/* n bytes at addr of this process, or false: never a fault (EFAULT instead). */
static bool read_mem(uint64_t addr, void *buf, size_t n)
{
	struct iovec local = {buf, n}, remote = {(void *)(uintptr_t)addr, n};

	return addr &&
	       syscall(SYS_process_vm_readv, st.pid, &local, 1UL, &remote, 1UL, 0UL) == (long)n;
}

static uint64_t read_word(uint64_t addr)
{
	uint64_t v = 0;

	return read_mem(addr, &v, sizeof(v)) ? v : 0;
}

static uint64_t word_at(const unsigned char *buf, unsigned off)
{
	uint64_t v;

	memcpy(&v, buf + off, sizeof(v));
	return v;
}

/* The PyThreadState of the thread tid: the cached one if it still is, else a walk. */
static uint64_t find_tstate(const struct py_layout *l, pid_t tid, uint64_t *cache)
{
	unsigned char ts[256];
	size_t need =
	    (size_t)(l->tstate_native_id > l->tstate_next ? l->tstate_native_id : l->tstate_next) +
	    8;
	uint64_t interp, t;

	if (*cache && read_mem(*cache, ts, need) &&
	    word_at(ts, l->tstate_native_id) == (uint64_t)tid)
		return *cache;
	interp = read_word(st.py.runtime + l->runtime_interp_head);
	for (int i = 0; interp && i < PY_MAX_INTERPS; i++) {
		t = read_word(interp + l->interp_threads_head);
		for (int k = 0; t && k < PY_MAX_TSTATES; k++) {
			if (!read_mem(t, ts, need))
				break;
			if (word_at(ts, l->tstate_native_id) == (uint64_t)tid)
				return *cache = t;
			t = word_at(ts, l->tstate_next);
		}
		interp = read_word(interp + l->interp_next);
	}
	return 0;
}

/* The first native frame at or after from that is in the eval loop, or PY_NO_NATIVE. */
static uint32_t next_eval(const struct record *r, uint32_t from)
{
	for (uint32_t k = from; k < r->nframes; k++) {
		uint64_t ip = r->frames[k] - (k > 0); /* a return address: its call */

		if (ip >= st.py.eval_lo && ip < st.py.eval_hi)
			return k;
	}
	return PY_NO_NATIVE;
}

/*
 * The chain from the thread's current frame outwards. In 3.11 each run of
 * the eval loop starts its chain with an entry frame (is_entry): the frames
 * up to and with it belong to that run's native frame, the next ones to the
 * next. In 3.12 each run pushes a frame of its own first (owned by the C
 * stack): the frames before it are the run's. Bounded: st.py.max frames kept,
 * twice that many looked at.
 */
void py_copy(struct record *r, pid_t tid, uint64_t *cache)
{
	const struct py_layout *l = st.py.lay;
	struct py_raw *py = record_py(r);
	unsigned char fr[128];
	uint32_t native, steps = 0;
	uint64_t ts, frame;

	r->npy = r->py_truncated = 0;
	if (!st.py.on || (native = next_eval(r, 0)) == PY_NO_NATIVE)
		return;
	ts = find_tstate(l, tid, cache);
	/* 3.11, 3.12: tstate->cframe->current_frame; 3.13: tstate->current_frame. */
	frame = ts && l->tstate_cframe ? read_word(ts + l->tstate_cframe) : ts;
	frame = frame ? read_word(frame + l->cframe_current) : 0;
	while (frame && read_mem(frame, fr, l->frame_size)) {
		if (++steps > 2 * st.py.max) { /* a loop of C-stack frames: not a real chain */
			r->py_truncated = 1;
			break;
		}
		/* 3.12: the run's own entry frame ends its frames, and is not one to show. */
		if (l->owner_cstack && fr[l->frame_owner] == l->owner_cstack) {
			if (native != PY_NO_NATIVE)
				native = next_eval(r, native + 1);
			frame = word_at(fr, l->frame_previous);
			continue;
		}
		if (r->npy == st.py.max) {
			r->py_truncated = 1;
			break;
		}
		py[r->npy].code = word_at(fr, l->frame_code);
		py[r->npy].instr = word_at(fr, l->frame_instr);
		py[r->npy].native = native;
		py[r->npy].pad = 0;
		r->npy++;
		if (!l->owner_cstack && fr[l->frame_is_entry] && native != PY_NO_NATIVE)
			native = next_eval(r, native + 1);
		frame = word_at(fr, l->frame_previous);
	}
}

size_t py_record_bytes(void)
{
	return st.py.on ? st.py.max * sizeof(struct py_raw) : 0;
}

/* "3.11.2" of a PY_VERSION_HEX. */
static void version_text(uint32_t v, char *buf, size_t len)
{
	snprintf(buf, len, "%u.%u.%u", v >> 24, (v >> 16) & 0xff, (v >> 8) & 0xff);
}

/* _PyEval_EvalFrameDefault's extent from its symbol; false if not found. */
static bool find_eval(void)
{
	void *fn = dlsym(RTLD_DEFAULT, "_PyEval_EvalFrameDefault");
	const ElfW(Sym) *sym = NULL;
	Dl_info info;

	if (!fn || !dladdr1(fn, &info, (void **)&sym, RTLD_DL_SYMENT) || !sym || !sym->st_size)
		return false;
	st.py.eval_lo = (uint64_t)(uintptr_t)fn;
	st.py.eval_hi = st.py.eval_lo + sym->st_size;
	return true;
}

/* An interpreter older than 3.11 has no Py_Version: its Py_GetVersion says which. */
static bool old_version(char *buf, size_t len)
{
	const char *(*get)(void) = (const char *(*)(void))dlsym(RTLD_DEFAULT, "Py_GetVersion");
	const char *v = get ? get() : NULL;

	if (!v)
		return false;
	snprintf(buf, len, "%.*s", (int)strcspn(v, " "), v);
	return true;
}

/* 3.13: the layout from the interpreter's own _Py_DebugOffsets; NULL (why set) if not. */
static const struct py_layout *debug_layout(const char *v)
{
	uint64_t w[PY_DO_WORDS];
	int rc = -1;

	if (read_mem(st.py.runtime, w, sizeof(w)))
		rc = py_layout_from_debug(w, &st.py.debug);
	if (!rc)
		return &st.py.debug;
	snprintf(st.py.why, sizeof(st.py.why), "python %s: %s", v,
		 rc == -2   ? "a free-threaded build: layout not known"
		 : rc == -3 ? "_Py_DebugOffsets out of range"
			    : "no _Py_DebugOffsets as 3.13.0's");
	return NULL;
}

void py_attach(void)
{
	const uint32_t *ver = dlsym(RTLD_DEFAULT, "Py_Version");
	char v[32];

	memset(&st.py, 0, sizeof(st.py));
	st.py.max =
	    (unsigned)env_long("ROCPROF_STACKS_PY_FRAMES", DEFAULT_PY_FRAMES, 0, MAX_PY_FRAMES);
	if (!ver) {
		if (old_version(v, sizeof(v)))
			snprintf(st.py.why, sizeof(st.py.why), "python %s: layout not known", v);
		return;
	}
	st.py.version = *ver;
	version_text(st.py.version, v, sizeof(v));
	st.py.runtime = (uint64_t)(uintptr_t)dlsym(RTLD_DEFAULT, "_PyRuntime");
	st.py.code_type = (uint64_t)(uintptr_t)dlsym(RTLD_DEFAULT, "PyCode_Type");
	st.py.lay = py_layout_of(st.py.version);
	if (!st.py.lay && (st.py.version >> 16) == 0x030d && st.py.runtime)
		st.py.lay = debug_layout(v);
	if (!st.py.lay && !st.py.why[0])
		snprintf(st.py.why, sizeof(st.py.why), "python %s: layout not known", v);
	if (!st.py.lay)
		return;
	if (!find_eval() || !st.py.runtime || !st.py.code_type)
		snprintf(st.py.why, sizeof(st.py.why),
			 "python %s: _PyEval_EvalFrameDefault, _PyRuntime or PyCode_Type not found",
			 v);
	else if (!st.py.max)
		snprintf(st.py.why, sizeof(st.py.why), "python %s: ROCPROF_STACKS_PY_FRAMES=0", v);
	else if (!read_word(st.py.runtime + st.py.lay->runtime_interp_head))
		snprintf(st.py.why, sizeof(st.py.why),
			 "python %s: process_vm_readv on itself failed, or no interpreter", v);
	else
		st.py.on = true;
}
