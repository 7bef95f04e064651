/* SPDX-License-Identifier: MIT */
/*
 * The file librocattach-stacks.so writes at tool_detach, one per process and
 * attach: $ROCPROF_OUTPUT_PATH/rocattach-stacks.<host>.<pid>.<n>.txt, n
 * counting the attaches of that process from 1. Text, one item a line,
 * written under a .tmp name and renamed when complete:
 *
 *   rocattach-stacks 1                    format and version, first line
 *   pid <pid>
 *   host <hostname>
 *   signal <number> SIGRTMIN+<k>          the tool's signal ("signal 0 none": none free)
 *   hz <rate>                             0: the snapshot only
 *   max_frames <n>
 *   attach_ns <ns> / detach_ns <ns>       CLOCK_REALTIME
 *   dropped <n>                           records lost to a full buffer
 *   overruns <n>                          timer expiries that sent no signal (the
 *                                         last one was still pending): not sampled
 *   sample_handler_ns <ns> <n> <p50>      the handlers' time over the n samples, and its
 *                                         median: each from its first clock read to
 *                                         after the unwind (CLOCK_MONOTONIC; the signal's
 *                                         delivery and return are not in it)
 *   note <text>                           optional: why something was not done, or
 *                                         that snapshots were not unwound
 *                                         (ROCPROF_STACKS_UNWIND=0, for measuring)
 *   thread <tid> live|ended <cpu> <name>  every thread seen; cpu: its CPU time in ns
 *                                         while sampled, "-" if not sampled or it
 *                                         ended first; name is the rest of the line
 *   snapshot <tid> <status> <ns> [<hex address>...] [...]
 *   handler <tid> <ns>                    after an "ok" snapshot: how long its handler
 *                                         ran, first clock read to after the unwind
 *                                         (CLOCK_MONOTONIC; a lower bound of the hold)
 *   hold <tid> <sent> <entry> <return>    after "handler": CLOCK_MONOTONIC (ns) read
 *                                         just before the tool's tgkill, at the
 *                                         handler's entry and at its end (return -
 *                                         sent: signal to answer, per thread)
 *   sample <tid> <ns> <hex address>...  [...]
 *   python_version <x.y.z> <layout> <hex> <hex>  CPython found, its frames copied; the
 *                                         addresses of PyCode_Type (a code object's
 *                                         type) and _PyRuntime (3.13: its offsets)
 *   python_off <reason>                   CPython found, no Python frames, and why
 *   pyframes <n> <native>:<code>:<instr>... after a snapshot or sample line: its
 *                                         Python frames, innermost first: the native
 *                                         frame index of the eval loop that runs it
 *                                         ("-": none captured), the code object and
 *                                         the frame's instruction pointer (hex);
 *                                         " ..." if deeper than kept. Readers that
 *                                         do not know these lines skip them.
 *   maps                                  then /proc/self/maps at detach, verbatim
 *   end                                   last line
 *
 * Addresses are hexadecimal without 0x, innermost first. The first is the
 * interrupted instruction; the others are return addresses (a symbolizer
 * looks up address - 1 for them). A trailing "..." means the stack was
 * longer than max_frames. Snapshot statuses are the RS_SNAP_* words below;
 * only "ok" and "self" carry addresses.
 */
#ifndef ROCATTACH_STACKS_FORMAT_H
#define ROCATTACH_STACKS_FORMAT_H

#define RS_MAGIC "rocattach-stacks 1"
#define RS_FILE_PREFIX "rocattach-stacks."

#define RS_SNAP_OK "ok"		    /* the thread unwound itself in the handler */
#define RS_SNAP_SELF "self"	    /* the thread that ran tool_attach, unwound in place */
#define RS_SNAP_NOANSWER "noanswer" /* signalled, no answer before the deadline */
#define RS_SNAP_BLOCKED "blocked"   /* it blocks the tool's signal: not signalled */
#define RS_SNAP_GONE "gone"	    /* it ended before it was signalled or answered */
#define RS_SNAP_NOROOM "noroom"	    /* answered, but the buffer was full */

#endif
