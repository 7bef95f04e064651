/* SPDX-License-Identifier: MIT */
/* A target's memory, read and written (target_memory.h). */
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
#include "ptrace_calls.h"
#include "target_memory.h"

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
