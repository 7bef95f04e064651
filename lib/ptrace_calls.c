/* SPDX-License-Identifier: MIT */
/* ptrace requests, why a seize was refused, registers (ptrace_calls.h). */
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
