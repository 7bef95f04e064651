/* SPDX-License-Identifier: MIT */
/*
 * rocattach: the single-node CLI, equivalent to ROCm's rocprof-attach.
 * Attach, hold the window (a duration, Enter on a terminal, or a signal),
 * detach. Signals are taken through a signalfd so the window can end at any
 * moment without async-signal-safety concerns, and a signal that arrives
 * during the attach itself is acted upon right after it.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include <rocattach/rocattach.h>

#include <jansson.h>

#include "cli_opts.h"
#include "common/clock.h"
#include "common/procfs.h"
#include "late_json.h"
#include "rocattach_children.h"
#include "rp3_state.h"

static void log_to_stderr(int level, const char *msg, void *user)
{
	static const char *const prefix[] = {"error: ", "warning: ", "", "debug: ", "trace: "};

	(void)user;
	if (level < ROCATTACH_LOG_ERROR || level > ROCATTACH_LOG_TRACE)
		level = ROCATTACH_LOG_TRACE;
	fprintf(stderr, "rocattach: %s%s\n", prefix[level], msg);
}

static long long now_ms(void)
{
	return (long long)(ra_monotonic_ns() / RA_NS_PER_MS);
}

/* Block the window-ending signals; they are read from the returned signalfd. */
static int signals_to_fd(void)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigprocmask(SIG_BLOCK, &set, NULL);
	return signalfd(-1, &set, SFD_CLOEXEC);
}

/* Hold the window until deadline (monotonic ms, -1: none). Returns the signal that ended it, or 0.
 */
static int hold_window(int sfd, long long deadline)
{
	struct pollfd pfd[2] = {{sfd, POLLIN, 0}, {STDIN_FILENO, POLLIN, 0}};
	int nfds = deadline < 0 && isatty(STDIN_FILENO) ? 2 : 1;
	struct signalfd_siginfo si;
	char line[256];

	for (;;) {
		long long left = deadline < 0 ? -1 : deadline - now_ms();
		int n;

		if (deadline >= 0 && left <= 0)
			return 0;
		n = poll(pfd, nfds, left > INT32_MAX ? INT32_MAX : (int)left);
		if (n < 0 && errno != EINTR)
			return 0;
		if (n > 0 && (pfd[0].revents & POLLIN) && read(sfd, &si, sizeof(si)) == sizeof(si))
			return (int)si.ssi_signo;
		if (n > 0 && nfds == 2 && pfd[1].revents) {
			/* Enter ends the window; at end of input only a signal or -d can. */
			if (!fgets(line, sizeof(line), stdin))
				nfds = 1;
			else
				return 0;
		}
	}
}

/*
 * With -d the window has a planned stop, which the attach carries: a target
 * that gets no detach by then plus --call-timeout detaches its tools itself
 * (this process stopped, say). The window is -d long from the tools' hand-over,
 * which is not known before the attach: the planned stop counts the attach's
 * own deadline in, and the window never outlasts it (plan_window). 0: no -d.
 */
static uint64_t planned_stop(const struct cli_opts *o)
{
	if (o->duration_ms < 0)
		return 0;
	return ra_realtime_ns() + (uint64_t)(o->duration_ms + o->call_timeout_ms) * RA_NS_PER_MS;
}

/*
 * The root's attach (its descendants follow: rocattach_children.c).
 * --inject is the library's ROCATTACH_F_INJECT. rep: the root's report.
 */
static int attach(const struct cli_opts *o, uint64_t planned, rocattach_report_t *rep)
{
	rocattach_opts_t ro = {.size = sizeof(ro),
			       .tool_libraries = o->tools,
			       .call_timeout_ms = (uint32_t)o->call_timeout_ms,
			       .planned_stop_ns = planned};

	if (o->inject)
		ro.flags |= ROCATTACH_F_INJECT;
	return rocattach_attach_ex(o->pid, &ro, rep);
}

/*
 * What makes a failed call need seeing to (exit 4), beyond a plain failure;
 * a detach that came after the target had detached its tools itself too.
 */
#define HARM                                                                                       \
	(ROCATTACH_REPORT_STOPPED | ROCATTACH_REPORT_TIMED_OUT | ROCATTACH_REPORT_KILLED |         \
	 ROCATTACH_REPORT_SELF_DETACHED)

static bool stopped(pid_t pid)
{
	struct ra_stat st;

	return !ra_stat_read(NULL, pid, &st) && st.state == 'T';
}

/*
 * A stopped root is detached once it resumes: waited for up to the call
 * timeout (a signal ends the wait), then tried anyway, which fails saying
 * its tools are still attached.
 */
static void wait_resumed(const struct cli_opts *o, int sfd)
{
	long long deadline = now_ms() + o->call_timeout_ms;
	struct pollfd p = {sfd, POLLIN, 0};

	if (!stopped(o->pid))
		return;
	fprintf(stderr,
		"rocattach: process %d is stopped: waiting up to %.1f s for it to resume "
		"(kill -CONT %d) to detach\n",
		o->pid, (double)o->call_timeout_ms / 1e3, o->pid);
	while (stopped(o->pid) && now_ms() < deadline)
		if (poll(&p, 1, 20) > 0)
			break;
}

/*
 * The root's detach, its tools handed back at stop_ns (0: at once). The exit
 * code of a detach that failed: the target needs seeing to, or it just failed.
 */
static int detach(const struct cli_opts *o, int sfd, uint64_t stop_ns)
{
	rocattach_opts_t ro = {.size = sizeof(ro),
			       .call_timeout_ms = (uint32_t)o->call_timeout_ms,
			       .stop_ns = stop_ns};
	rocattach_report_t rep = {.size = sizeof(rep)};
	int st;

	wait_resumed(o, sfd);
	st = rocattach_detach_ex(o->pid, &ro, &rep);
	if (st == ROCATTACH_STATUS_SUCCESS)
		return CLI_EXIT_OK;
	/* The library logs a target gone at its detach as news only: say it here. */
	if (st == ROCATTACH_STATUS_ERROR_PTRACE_PROCESS_NOT_FOUND)
		fprintf(stderr, "rocattach: error: %s\n", rep.message);
	return (rep.flags & HARM) || stopped(o->pid) ? CLI_EXIT_PARTIAL : CLI_EXIT_DETACH;
}

/*
 * A call (the root's attach or detach) on a helper thread while this one
 * answers SIGINT/SIGTERM: every call has its deadline (--call-timeout), but
 * a signal is said at once, with the run's account so far (provisional:
 * Open MPI and Slurm follow a SIGTERM with a SIGKILL), and the window it
 * ends is then skipped.
 */
struct call_job {
	const struct cli_opts *o;
	const char *what; /* "attach", "detach" */
	uint64_t when;	  /* attach: the planned stop; detach: the stop time */
	rocattach_report_t *rep;
	int sfd, st;
	int done[2];
};

static int call_run(struct call_job *j)
{
	if (!strcmp(j->what, "attach"))
		return attach(j->o, j->when, j->rep);
	return detach(j->o, j->sfd, j->when);
}

static void *call_job_run(void *arg)
{
	struct call_job *j = arg;

	j->st = call_run(j);
	if (write(j->done[1], "x", 1) < 0) {
		/* The joiner still joins. */
	}
	return NULL;
}

/* The account at a signal, while the call runs: what is known, and what will happen. */
static void say_in_flight(const struct call_job *j, int sig)
{
	const struct cli_opts *o = j->o;
	bool att = !strcmp(j->what, "attach");

	fprintf(stderr,
		"rocattach: %s received during the %s: %s as soon as it returns (within "
		"--call-timeout %lld ms)\n",
		strsignal(sig), j->what, att ? "detaching" : "ending", o->call_timeout_ms);
	fprintf(stderr,
		"rocattach: provisional: process %d: the %s call is in flight (%s); should "
		"this process be killed first, the target detaches its tools by itself (%s)\n",
		o->pid, j->what,
		att ? "its tools not known attached" : "its tools not known detached",
		o->duration_ms >= 0 ? "at the planned stop + --call-timeout at the latest"
				    : "its watchdog sees this process gone");
	fflush(stderr);
}

static int call_answering(struct call_job *j, int *sig)
{
	struct pollfd f[2] = {{-1, POLLIN, 0}, {j->sfd, POLLIN, 0}};
	struct signalfd_siginfo si;
	pthread_t th;
	int nfds = 2;

	*sig = 0;
	if (pipe(j->done))
		return call_run(j);
	if (pthread_create(&th, NULL, call_job_run, j)) {
		close(j->done[0]);
		close(j->done[1]);
		return call_run(j);
	}
	f[0].fd = j->done[0];
	while (poll(f, (nfds_t)nfds, -1) >= 0 && !(f[0].revents & POLLIN)) {
		if (nfds < 2 || !(f[1].revents & POLLIN) ||
		    read(j->sfd, &si, sizeof(si)) != sizeof(si))
			continue;
		*sig = (int)si.ssi_signo;
		nfds = 1;
		say_in_flight(j, *sig);
	}
	pthread_join(th, NULL);
	close(j->done[0]);
	close(j->done[1]);
	return j->st;
}

/*
 * A library of the list that failed while the others attached: said in one
 * line (the others hold the window), and the run exits 4.
 */
static bool tool_failed(const struct cli_opts *o, const rocattach_report_t *rep)
{
	const char *p = o->tools;
	bool failed = false;

	for (uint32_t i = 0; i < rep->tool_count && i < ROCATTACH_TOOLS_MAX; i++)
		failed |= rep->tool_outcome[i] == ROCATTACH_TOOL_FAILED;
	if (!failed)
		return false;
	fprintf(stderr,
		"rocattach: error: process %d: a tool of the list failed, the others attached: ",
		o->pid);
	if (rep->message[0]) {
		fprintf(stderr, "%s\n", rep->message);
		return true;
	}
	/* A reattach says nothing of the tools: the first attach's outcomes stand. */
	fputs("not in this process after the attach (a reattach loads no library):", stderr);
	for (uint32_t i = 0; i < rep->tool_count && i < ROCATTACH_TOOLS_MAX; i++) {
		size_t n = p ? strcspn(p, ":") : 0;

		if (rep->tool_outcome[i] == ROCATTACH_TOOL_FAILED && n)
			fprintf(stderr, " %.*s", (int)n, p);
		else if (rep->tool_outcome[i] == ROCATTACH_TOOL_FAILED)
			fprintf(stderr, " library %u of the tool list", i + 1);
		p = p && p[n] ? p + n + 1 : NULL;
	}
	fputc('\n', stderr);
	return true;
}

/*
 * The descendants' lead: their calls are made at once, and their tools are
 * handed over together this long after (prepared meanwhile), 3 ms more per
 * descendant, as rocattach-mpi's first window does.
 */
#define KIDS_LEAD_MS 250
#define KIDS_LEAD_EACH_MS 3
/* The stops are sent this long ahead of the earlier of them; each call keeps its own. */
#define STOP_AHEAD_MS 50

/* The window's planned times, CLOCK_REALTIME ns (stops 0: none, the user's). */
struct plan {
	uint64_t kids_start, root_stop, kids_stop;
};

/* Each on its own clock: the root's window from its hand-over, its descendants' from theirs. */
static struct plan plan_window(const struct cli_opts *o, const rocattach_report_t *rep)
{
	uint64_t now = ra_realtime_ns(), handed = rep->tool_ns ? rep->tool_ns : rep->end_ns;
	uint64_t d = (uint64_t)o->duration_ms * RA_NS_PER_MS;
	struct plan p = {0, 0, 0};

	p.kids_start = now + KIDS_LEAD_MS * RA_NS_PER_MS;
	if (o->duration_ms >= 0) {
		p.root_stop = (handed && handed < now ? handed : now) + d;
		p.kids_stop = p.kids_start + d;
	}
	return p;
}

/* Monotonic ms at which CLOCK_REALTIME reaches rt less ahead_ms (-1: rt 0, no deadline). */
static long long mono_ms_of(uint64_t rt, long long ahead_ms)
{
	int64_t left = (int64_t)(rt - ra_realtime_ns());

	return rt ? now_ms() + left / (int64_t)RA_NS_PER_MS - ahead_ms : -1;
}

/*
 * The window once the root attached: its descendants attach beside it, each
 * on its own clock, and the root and they are detached together at their
 * planned stops (or at once at the user's), so a descendant whose call is
 * stuck holds no one: its call ends by its deadline, after. Returns the exit
 * code.
 */
static int hold_detach(const struct cli_opts *o, uint64_t planned, const rocattach_report_t *rep,
		       int sfd, int sig, int code)
{
	struct plan p = plan_window(o, rep);
	struct rc_children *kids = NULL;
	struct call_job dj = {.o = o, .what = "detach", .sfd = sfd};
	long long stop = -1;
	int st, kids_code;

	if (o->children)
		kids = rc_children_open(o->pid, o->tools, o->inject, (unsigned)o->call_timeout_ms,
					p.kids_start, p.kids_stop);
	if (!kids)
		p.kids_stop = 0;
	/* The root's tools were handed over within the attach's deadline: never past planned. */
	if (planned && p.root_stop > planned)
		p.root_stop = planned;
	if (p.root_stop)
		stop =
		    mono_ms_of(p.kids_stop && p.kids_stop < p.root_stop ? p.kids_stop : p.root_stop,
			       STOP_AHEAD_MS);
	/* Their word before ours, unless a call is slow: the window runs meanwhile. */
	if (!sig) {
		long long until = mono_ms_of(p.kids_start, -500);

		rc_children_wait(kids, sfd, stop >= 0 && stop < until ? stop : until, &sig);
	}
	fprintf(stderr, "rocattach: attached to process %d%s; %s\n", o->pid,
		o->children ? " and its descendants" : "",
		o->duration_ms >= 0 ? "detaching when the duration ends or on SIGINT/SIGTERM"
				    : "press Enter (on a terminal) or Ctrl-C to detach");
	if (!sig)
		sig = hold_window(sfd, stop);
	if (sig) {
		fprintf(stderr, "rocattach: %s received, detaching\n", strsignal(sig));
		p.root_stop = p.kids_stop = 0;
	}
	rc_children_stop(kids, p.kids_stop);
	dj.when = p.root_stop;
	st = call_answering(&dj, &sig);
	kids_code = rc_children_end(kids);
	if (st != CLI_EXIT_OK)
		return st;
	fprintf(stderr, "rocattach: detached from process %d\n", o->pid);
	if (kids_code == CLI_EXIT_DETACH)
		return kids_code;
	return code != CLI_EXIT_OK ? code : kids_code;
}

static int attach_hold_detach(const struct cli_opts *o)
{
	int sfd = signals_to_fd(), st, sig, code = CLI_EXIT_OK;
	rocattach_report_t rep = {.size = sizeof(rep)};
	uint64_t planned = planned_stop(o);
	struct call_job aj;

	if (sfd < 0) {
		fprintf(stderr, "rocattach: signalfd: %s\n", strerror(errno));
		return CLI_EXIT_ATTACH;
	}
	if (rn_rp3_refused(o->pid, rep.message, sizeof(rep.message))) {
		fprintf(stderr, "rocattach: error: %s\n", rep.message);
		return CLI_EXIT_ATTACH;
	}
	aj = (struct call_job){.o = o, .what = "attach", .when = planned, .rep = &rep, .sfd = sfd};
	st = call_answering(&aj, &sig);
	if (st == ROCATTACH_STATUS_SUCCESS || rocattach_is_attached(o->pid))
		rn_rp3_remember(o->pid);
	if (st == ROCATTACH_STATUS_SUCCESS && tool_failed(o, &rep))
		code = CLI_EXIT_PARTIAL;
	if (st != ROCATTACH_STATUS_SUCCESS) {
		/*
		 * The library has logged one line per failure. A root that
		 * attached makes this a partial success. A root that was killed,
		 * stopped, or stuck in a call needs seeing to: 4. A root that did
		 * not attach: its descendants are not touched.
		 */
		if (!rocattach_is_attached(o->pid))
			return (rep.flags & HARM) ? CLI_EXIT_PARTIAL : CLI_EXIT_ATTACH;
		code = CLI_EXIT_PARTIAL;
	}
	return hold_detach(o, planned, &rep, sfd, sig, code);
}

/*
 * --late-start: the pre-checks, then the start; one JSON line on standard
 * output ({"pid", "late_start": {...}}, node/late_json.c). A process with a
 * listener takes the normal attach instead. 0 started (the SDK says it
 * initialized), 4 refused (nothing touched) or failed.
 */
static int late_start(const struct cli_opts *o)
{
	rocattach_opts_t ro = {.size = sizeof(ro),
			       .tool_libraries = o->tools,
			       .call_timeout_ms = (uint32_t)o->call_timeout_ms};
	rocattach_late_report_t rep = {.size = sizeof(rep)};
	json_t *j;

	if (rocattach_late_start(o->pid, &ro, &rep) && rep.route == ROCATTACH_LATE_ATTACHABLE) {
		fprintf(stderr, "rocattach: %s\n", rep.message);
		return attach_hold_detach(o);
	}
	j = json_pack("{s:i, s:o*}", "pid", o->pid, "late_start", rn_late_json(&rep));
	if (j && json_dumpf(j, stdout, JSON_COMPACT) == 0)
		fputc('\n', stdout);
	fflush(stdout);
	json_decref(j);
	if (!strcmp(rn_late_outcome(&rep), "ok")) {
		fprintf(stderr,
			"rocattach: late-started process %d with %s (SDK %s, %u copies of "
			"rocprofiler-register): the tool stays until the process exits\n",
			o->pid, o->tools ? o->tools : "the default tool", rep.sdk,
			rep.register_started);
		return CLI_EXIT_OK;
	}
	return CLI_EXIT_PARTIAL;
}

/*
 * rocprofv3's variables, set here so that they cross with this process's
 * other ROCP* ones. Its tool missing: nothing is touched, exit 1 (the tool
 * cannot attach).
 */
static int rocprofv3_setup(struct cli_opts *o, char *tool, size_t tlen)
{
	struct rp3_setup s = {.tools = o->tools,
			      .pid = o->pid,
			      .duration_ms = o->duration_ms,
			      .children = o->children,
			      .prog = "rocattach"};
	struct rp3_env env;
	char err[1024];
	int ret = 0;

	if (rp3_prepare(&o->rp3, &s, tool, tlen, &o->tools, &env, err, sizeof(err))) {
		fprintf(stderr, "rocattach: %s\n", err);
		return CLI_EXIT_ATTACH;
	}
	if (rp3_apply(&env)) {
		fprintf(stderr, "rocattach: cannot set rocprofv3's variables: out of memory\n");
		ret = CLI_EXIT_ATTACH;
	}
	for (size_t i = 0; !ret && o->verbose && i < env.n; i++)
		fprintf(stderr, "rocattach: sending %s\n", env.kv[i]);
	rp3_env_free(&env);
	return ret;
}

int main(int argc, char **argv)
{
	struct cli_opts o;
	char err[512], tool[4096];
	int code;

	if (cli_opts_parse(argc, argv, &o, err, sizeof(err))) {
		fprintf(stderr, "rocattach: %s\n", err);
		return CLI_EXIT_USAGE;
	}
	if (o.help) {
		fputs(cli_usage, stdout);
		return CLI_EXIT_OK;
	}
	if (o.version) {
		printf("rocattach %s (rocattach-mpi; rocprofiler-sdk rocattach API %s)\n",
		       ROCATTACH_VERSION_STRING, ROCATTACH_SDK_VERSION_STRING);
		return CLI_EXIT_OK;
	}
	code = rocprofv3_setup(&o, tool, sizeof(tool));
	if (code)
		return code;
	rocattach_set_log_callback(log_to_stderr, NULL);
	rocattach_set_log_level(o.verbose >= 2 ? ROCATTACH_LOG_DEBUG
				: o.verbose    ? ROCATTACH_LOG_INFO
					       : ROCATTACH_LOG_WARNING);
	if (o.late_start)
		return late_start(&o);
	return attach_hold_detach(&o);
}
