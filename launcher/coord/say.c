/* SPDX-License-Identifier: MIT */
/*
 * This rank's words, signals and waits (say.h). Rank 0's progress goes to
 * standard output, the summary's stream, flushed line by line: mpirun
 * forwards a rank's stdout and stderr separately, so only one stream keeps
 * them in order (and the summary last). Errors of the command line, before
 * anything runs, go to stderr (rm_say_to).
 */
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <mpi.h>

#include "common/clock.h"
#include "mpi_opts.h"
#include "say.h"

/* The window loop looks around every POLL_MS (signals wake it at once): near zero CPU. */
#define POLL_MS 25

static void vsay(const struct rm_self *s, FILE *f, const char *fmt, va_list ap)
{
	if (s->rank != 0)
		return;
	fputs("rocattach-mpi: ", f);
	vfprintf(f, fmt, ap);
	fputc('\n', f);
	fflush(f);
}

void rm_say(const struct rm_self *s, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsay(s, stdout, fmt, ap);
	va_end(ap);
}

void rm_say_to(const struct rm_self *s, FILE *f, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsay(s, f, fmt, ap);
	va_end(ap);
}

static void vrank_error(const struct rm_self *s, const char *fmt, va_list ap)
{
	fprintf(stderr, "rocattach-mpi[%s:%d] error: ", s->host, s->rank);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void rm_rank_error(const struct rm_self *s, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vrank_error(s, fmt, ap);
	va_end(ap);
}

void rm_out_of_memory(void)
{
	fputs("rocattach-mpi: error: out of memory\n", stderr);
	MPI_Abort(MPI_COMM_WORLD, RM_EXIT_ERROR);
	_exit(RM_EXIT_ERROR);
}

/* Detach everything now: the window's calls too, each by its deadline. */
static void detach_now(struct rm_self *s)
{
	struct rn_pool_opts p = {.call_timeout_ms = s->call_timeout_ms};

	if (!s->win)
		return rn_detach_all(s->t, s->n, NULL);
	rn_window_stop(s->win, &p);
	rn_window_close(s->win);
	s->win = NULL;
}

void rm_leave(struct rm_self *s, const char *fmt, ...)
{
	va_list ap;

	detach_now(s);
	va_start(ap, fmt);
	vrank_error(s, fmt, ap);
	va_end(ap);
	fflush(NULL);
	_exit(RM_EXIT_LOST);
}

/* ------------------------------------------------------------------------ */
/*
 * Signals: blocked from the start (so MPI's own threads never take them)
 * and read from a signalfd.
 *
 * Every signal whose default action would end the launcher and that it can
 * catch ends the window instead, so targets are always detached: on ROCm's
 * side no watchdog would detach them after us. SIGUSR1 is the quiet stop;
 * SIGPIPE is ignored (a closed output must not kill us mid-window).
 *
 * SIGCONT is none of them: it is not blocked, and never ends or names a
 * window. Open MPI ends a job (a Ctrl-C at mpirun, a rank that died) by
 * sending each rank SIGCONT, SIGTERM 1 s later and SIGKILL about 1 s after
 * that (measured with 4.1.4); Slurm sends SIGCONT and SIGTERM together, and
 * SIGKILL after KillWait; mpirun also forwards the SIGCONT of a job resumed
 * after Ctrl-Z. The SIGTERM is the one that ends the window and is named;
 * it leaves time enough to detach and write the report.
 */
void rm_block_signals(sigset_t *set)
{
	static const int sigs[] = {SIGINT,  SIGTERM, SIGHUP,  SIGUSR1,	 SIGUSR2, SIGQUIT,
				   SIGALRM, SIGXCPU, SIGXFSZ, SIGVTALRM, SIGPROF, SIGPWR};

	sigemptyset(set);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaddset(set, sigs[i]);
	sigprocmask(SIG_BLOCK, set, NULL);
	signal(SIGPIPE, SIG_IGN);
}

int rm_take_signal(struct rm_self *s)
{
	struct signalfd_siginfo si;
	int held = s->held_sig;

	s->held_sig = 0;
	if (held)
		return held;
	if (read(s->sfd, &si, sizeof(si)) != sizeof(si))
		return 0;
	s->signalled = true;
	if (s->on_signal)
		s->on_signal(s, (int)si.ssi_signo);
	return (int)si.ssi_signo;
}

/*
 * The end of rank 0's input is said only if no signal follows within
 * STDIN_EOF_QUIET_NS: Open MPI ends a job (a Ctrl-C at mpirun) by closing
 * the input forwarding and sending SIGCONT, then SIGTERM 1 s later, and
 * the line would then be advice for a run already being ended.
 */
#define STDIN_EOF_QUIET_NS 2000000000ull
static void say_stdin_eof(struct rm_self *s)
{
	if (!s->stdin_eof_ns || s->signalled) {
		s->stdin_eof_ns = s->signalled ? 0 : s->stdin_eof_ns;
		return;
	}
	if (ra_monotonic_ns() - s->stdin_eof_ns < STDIN_EOF_QUIET_NS)
		return;
	s->stdin_eof_ns = 0;
	rm_say(s, "standard input closed: Enter cannot end the window; send "
		  "SIGUSR1 to mpirun instead");
}

/* Enter on rank 0's standard input (mpirun forwards it); end of input stops only that. */
bool rm_took_enter(struct rm_self *s)
{
	struct pollfd p = {STDIN_FILENO, POLLIN, 0};
	char buf[256];
	ssize_t n;

	say_stdin_eof(s);
	if (!s->stdin_open || poll(&p, 1, 0) <= 0)
		return false;
	n = read(STDIN_FILENO, buf, sizeof(buf));
	if (n <= 0) {
		s->stdin_open = false;
		if (s->enter_ends && !s->signalled)
			s->stdin_eof_ns = ra_monotonic_ns();
		return false;
	}
	return memchr(buf, '\n', (size_t)n) != NULL;
}

void rm_wait_until(const struct rm_self *s, uint64_t until_ns)
{
	struct pollfd p = {s->sfd, POLLIN, 0};
	uint64_t now = ra_monotonic_ns();
	int ms = POLL_MS;

	if (until_ns > now && until_ns - now < (uint64_t)POLL_MS * RA_NS_PER_MS)
		ms = (int)((until_ns - now + RA_NS_PER_MS - 1) / RA_NS_PER_MS);
	else if (until_ns && until_ns <= now)
		ms = 0;
	poll(&p, 1, ms);
}
