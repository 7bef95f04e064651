/* SPDX-License-Identifier: MIT */
#include <elf.h>
#include <stdlib.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/procfs.h"
#include "ptrace_util.h"

#define CAP_SYS_PTRACE_BIT 19

/* The requests we issue (every one goes through ra_ptrace). */
static const char *ptrace_name(int req)
{
	switch (req) {
	case PTRACE_SEIZE:
		return "PTRACE_SEIZE";
	case PTRACE_INTERRUPT:
		return "PTRACE_INTERRUPT";
	case PTRACE_DETACH:
		return "PTRACE_DETACH";
	case PTRACE_CONT:
		return "PTRACE_CONT";
	case PTRACE_SETOPTIONS:
		return "PTRACE_SETOPTIONS";
	case PTRACE_GETEVENTMSG:
		return "PTRACE_GETEVENTMSG";
	case PTRACE_GETREGSET:
		return "PTRACE_GETREGSET";
	case PTRACE_SETREGSET:
		return "PTRACE_SETREGSET";
	default:
		return "ptrace";
	}
}

long ra_ptrace(int req, pid_t tid, void *addr, void *data, struct ra_err *e)
{
	long ret;
	int err;

	errno = 0;
	ret = ptrace((enum __ptrace_request)req, tid, addr, data);
	if (ret == -1 && errno) {
		err = errno;
		ra_err_set(e, ra_status_from_ptrace_errno(err), "%s(%d): %s", ptrace_name(req), tid,
			   strerror(err));
		return -err;
	}
	return ret;
}

int ra_ptrace_seize(pid_t pid, pid_t tid, unsigned long options, struct ra_err *e)
{
	struct ra_err failed = {0};
	char why[256];
	long ret;

	ret = ra_ptrace(PTRACE_SEIZE, tid, NULL, (void *)options, &failed);
	if (ret >= 0)
		return 0;
	if (ret == -EPERM)
		ra_explain_eperm(pid, tid, why, sizeof(why));
	ra_err_set(e, failed.status, "PTRACE_SEIZE(%d) of pid %d: %s%s%s", tid, pid,
		   strerror((int)-ret), ret == -EPERM ? ": " : "", ret == -EPERM ? why : "");
	return (int)ret;
}

static int have_cap_sys_ptrace(void)
{
	unsigned long long eff = 0;
	char *text = NULL, *p;
	size_t len;

	if (ra_read_file("/proc/self/status", &text, &len))
		return 0;
	p = strstr(text, "\nCapEff:");
	if (p)
		sscanf(p + 8, "%llx", &eff);
	free(text);
	return (eff >> CAP_SYS_PTRACE_BIT) & 1;
}

static int yama_scope(void)
{
	char *text = NULL;
	size_t len;
	int v = 0;

	if (ra_read_file("/proc/sys/kernel/yama/ptrace_scope", &text, &len))
		return 0;
	v = atoi(text);
	free(text);
	return v;
}

static void tracer_comm(pid_t tracer, char *buf, size_t len)
{
	char path[64], *text = NULL;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/comm", tracer);
	if (ra_read_file(path, &text, &n)) {
		snprintf(buf, len, "?");
		return;
	}
	text[strcspn(text, "\n")] = '\0';
	snprintf(buf, len, "%s", text);
	free(text);
}

static bool explain_tracer(pid_t pid, pid_t tid, char *buf, size_t len)
{
	struct ra_status st, tst;
	char tpath[64], comm[64];

	if (ra_status_read(RA_PROCFS, pid, &st))
		return false;
	/* The tracer is per thread: ask the thread, fall back to the process. */
	snprintf(tpath, sizeof(tpath), "%s/%d/task", RA_PROCFS, pid);
	if (ra_status_read(tpath, tid, &tst) == 0 && tst.tracer_pid)
		st.tracer_pid = tst.tracer_pid;
	if (!st.tracer_pid)
		return false;
	tracer_comm(st.tracer_pid, comm, sizeof(comm));
	snprintf(buf, len, "already traced by %d (%s): detach that tracer first", st.tracer_pid,
		 comm);
	return true;
}

static bool explain_owner(pid_t pid, char *buf, size_t len)
{
	struct ra_status st;

	if (ra_status_read(RA_PROCFS, pid, &st) || st.uid_real == geteuid() ||
	    have_cap_sys_ptrace())
		return false;
	snprintf(buf, len,
		 "owned by uid %u and this process (uid %u) lacks CAP_SYS_PTRACE: "
		 "run as that user or as root",
		 (unsigned int)st.uid_real, (unsigned int)geteuid());
	return true;
}

static bool explain_yama(char *buf, size_t len)
{
	int scope = yama_scope();

	if (scope < 1 || (scope == 1 && have_cap_sys_ptrace()))
		return false;
	snprintf(buf, len, "Yama ptrace_scope is %d%s", scope,
		 scope == 3 ? " (attaching is disabled until reboot)"
			    : ": run as root or set kernel.yama.ptrace_scope=0");
	return true;
}

static void explain_rest(pid_t pid, char *buf, size_t len)
{
	char path[64];
	struct stat sb;

	snprintf(path, sizeof(path), "/proc/%d", pid);
	if (stat(path, &sb) == 0 && sb.st_uid == 0 && geteuid() != 0)
		snprintf(buf, len,
			 "not dumpable (setuid, file capabilities or prctl): run as root");
	else
		snprintf(buf, len, "denied by a security policy (LSM or seccomp)");
}

void ra_explain_eperm(pid_t pid, pid_t tid, char *buf, size_t len)
{
	if (!explain_tracer(pid, tid, buf, len) && !explain_owner(pid, buf, len) &&
	    !explain_yama(buf, len))
		explain_rest(pid, buf, len);
}

/* Read access (PTRACE_MODE_READ): another tracer and Yama do not matter. */
void ra_explain_eacces(pid_t pid, char *buf, size_t len)
{
	if (!explain_owner(pid, buf, len))
		explain_rest(pid, buf, len);
}

int ra_getregs(pid_t tid, struct ra_regs *r, struct ra_err *e)
{
	struct iovec iov = {ra_arch_regs_data(r), ra_arch_regs_size()};
	long ret = ra_ptrace(PTRACE_GETREGSET, tid, (void *)(uintptr_t)NT_PRSTATUS, &iov, e);

	return ret < 0 ? (int)ret : 0;
}

int ra_setregs(pid_t tid, struct ra_regs *r, struct ra_err *e)
{
	struct iovec iov = {ra_arch_regs_data(r), ra_arch_regs_size()};
	long ret = ra_ptrace(PTRACE_SETREGSET, tid, (void *)(uintptr_t)NT_PRSTATUS, &iov, e);

	return ret < 0 ? (int)ret : 0;
}

/* One transfer of target memory, and how each way of doing it went. */
struct mem_io {
	pid_t pid;
	uint64_t addr;
	void *buf;
	size_t len;
	bool write;
};

/* What an errno means for a transfer. */
static const char *io_errno_meaning(int err)
{
	switch (err) {
	case ESRCH:
		return " (the process is gone)";
	case EFAULT:
	case EIO:
		return " (not mapped or not accessible there)";
	default:
		return "";
	}
}

/* "how: cause" of one way: its errno (err), else the bytes it moved of len. */
static void io_attempt(char *buf, size_t size, const struct mem_io *io, const char *how, int err,
		       ssize_t done)
{
	if (err)
		snprintf(buf, size, "%s: %s%s", how, strerror(err), io_errno_meaning(err));
	else
		snprintf(buf, size, "%s: short %s, %zd of %zu bytes", how,
			 io->write ? "write" : "read", done, io->len);
}

/* e: the transfer, the first way's cause, then the fallback's (if any). -err. */
static int io_failed(const struct mem_io *io, int err, const char *first, const char *then,
		     struct ra_err *e)
{
	ra_err_set(e,
		   err == ESRCH ? ROCATTACH_STATUS_ERROR_PTRACE_PROCESS_NOT_FOUND
				: ROCATTACH_STATUS_ERROR_PTRACE_ERROR,
		   "%s %zu bytes at 0x%llx of %d: %s%s%s", io->write ? "write" : "read", io->len,
		   (unsigned long long)io->addr, io->pid, first, then ? ", then " : "",
		   then ? then : "");
	return -err;
}

/*
 * Through /proc/PID/mem (path receives its name): 0 and *done, or -errno.
 * Its open fails with ENOENT once the process is gone: ESRCH.
 */
static int procmem(const struct mem_io *io, char *path, size_t size, ssize_t *done)
{
	int fd, err = 0;

	snprintf(path, size, "/proc/%d/mem", io->pid);
	fd = open(path, (io->write ? O_WRONLY : O_RDONLY) | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	*done = io->write ? pwrite(fd, io->buf, io->len, (off_t)io->addr)
			  : pread(fd, io->buf, io->len, (off_t)io->addr);
	if (*done < 0)
		err = errno;
	close(fd);
	return -err;
}

/* /proc/PID/mem alone (it writes read-only text too); first: how an earlier way failed. */
static int procmem_io(const struct mem_io *io, const char *first, struct ra_err *e)
{
	char path[64], cause[160];
	ssize_t done = 0;
	int err;

	err = -procmem(io, path, sizeof(path), &done);
	if (!err && done == (ssize_t)io->len)
		return 0;
	io_attempt(cause, sizeof(cause), io, path, err, done);
	if (!first)
		return io_failed(io, err ? err : EIO, cause, NULL, e);
	return io_failed(io, err ? err : EIO, first, cause, e);
}

/*
 * process_vm_readv/writev, errno sorted as strace's umoven does. ENOSYS (a
 * kernel without CONFIG_CROSS_MEMORY_ATTACH) and EPERM (refused by a policy
 * that may still allow /proc/PID/mem) fall back to /proc/PID/mem. Anything
 * else is the answer: ESRCH the process is gone, EFAULT or EIO the range is
 * not mapped or not accessible, a short transfer stopped at such a page.
 */
static int vm_io(const struct mem_io *io, struct ra_err *e)
{
	struct iovec local = {io->buf, io->len};
	struct iovec remote = {(void *)(uintptr_t)io->addr, io->len};
	const char *how = io->write ? "process_vm_writev" : "process_vm_readv";
	char first[160];
	ssize_t n;
	int err;

	n = io->write ? process_vm_writev(io->pid, &local, 1, &remote, 1, 0)
		      : process_vm_readv(io->pid, &local, 1, &remote, 1, 0);
	if (n == (ssize_t)io->len)
		return 0;
	err = n < 0 ? errno : 0;
	io_attempt(first, sizeof(first), io, how, err, n);
	if (err == ENOSYS || err == EPERM)
		return procmem_io(io, first, e);
	return io_failed(io, err ? err : EIO, first, NULL, e);
}

int ra_mem_write(pid_t pid, uint64_t addr, const void *buf, size_t len, struct ra_err *e)
{
	const struct mem_io io = {pid, addr, (void *)buf, len, true};

	return vm_io(&io, e);
}

int ra_mem_read(pid_t pid, uint64_t addr, void *buf, size_t len, struct ra_err *e)
{
	const struct mem_io io = {pid, addr, buf, len, false};

	return vm_io(&io, e);
}

int ra_mem_write_code(pid_t pid, uint64_t addr, const void *buf, size_t len, struct ra_err *e)
{
	const struct mem_io io = {pid, addr, (void *)buf, len, true};

	return procmem_io(&io, NULL, e);
}
