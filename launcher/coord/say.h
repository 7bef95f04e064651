/* SPDX-License-Identifier: MIT */
/*
 * coord's ground floor: this rank (who it is, its node's targets), what it
 * says (rank 0's progress, any rank's error line), its signals, the Enter
 * key, the waits of its loops, and how it leaves when cut off.
 */
#ifndef RM_SAY_H
#define RM_SAY_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "node.h"

struct rm_self {
	int rank, size;
	char host[256];
	int sfd;       /* signalfd of the window-ending signals, -1 if it failed */
	int sfd_errno; /* why it failed */
	int held_sig;  /* taken while the attaches or detaches ran: rm_take_signal gives it first */
	bool stdin_open;
	bool enter_ends;       /* no duration: Enter (or a signal) ends the window */
	uint64_t stdin_eof_ns; /* when its input ended, not said yet (0: none to say) */
	bool signalled;	       /* a window-ending signal has been read */
	/*
	 * Rank 0: called with each window-ending signal as it is read, wherever
	 * this rank waits (the provisional report, window_root.c); NULL: none.
	 */
	void (*on_signal)(struct rm_self *s, int sig);
	void *on_signal_arg;
	struct rn_target *t; /* this node's targets */
	size_t n;
	struct rn_window *win;	  /* this window's calls in flight (window_calls.c), NULL: none */
	unsigned call_timeout_ms; /* --call-timeout: each call's deadline */
};

/* Rank 0's progress line on its stdout ("rocattach-mpi: ..."); other ranks say nothing. */
void rm_say(const struct rm_self *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The same on stream f (errors of the command line go to stderr). */
void rm_say_to(const struct rm_self *s, FILE *f, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* This rank's error line, prefixed host:rank (any rank). */
void rm_rank_error(const struct rm_self *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
__attribute__((noreturn)) void rm_out_of_memory(void);
/*
 * This rank leaves: its node's targets detached (the window's calls in
 * flight too), then its error line (fmt), exit 6.
 */
__attribute__((noreturn)) void rm_leave(struct rm_self *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Block the window-ending signals (before MPI_Init: its threads inherit the mask). */
void rm_block_signals(sigset_t *set);
/* A pending window-ending signal, or 0 (SIGCONT is never one); on_signal hears a new one. */
int rm_take_signal(struct rm_self *s);
bool rm_took_enter(struct rm_self *s);
/* Up to POLL_MS for a signal, less if until_ns (CLOCK_MONOTONIC, 0: none) comes sooner. */
void rm_wait_until(const struct rm_self *s, uint64_t until_ns);

#endif
