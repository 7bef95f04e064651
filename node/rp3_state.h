/* SPDX-License-Identifier: MIT */
/*
 * rocprofv3's reattach trap: its tool cannot change collection options when
 * it is attached again to a process (it ends in an exception). The options a
 * process was first attached with are kept per node, as rocprofv3 keeps them
 * (it writes /tmp/rocprofv3_attach_PID.pkl on the attaching machine): one
 * file per process, named by pid and start time, in
 * $TMPDIR/rocattach-rocprofv3-UID (else /tmp/...). Both target sides are
 * covered: the file is the attacher's, whichever side the target runs.
 *
 * The launchers put the run's collection options (rocprofv3's names, as
 * rp3_collection_key writes them) in ROCATTACH_ROCPROFV3_OPTIONS; unset: no
 * rocprofv3 tool, nothing is checked or kept.
 */
#ifndef RN_RP3_STATE_H
#define RN_RP3_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define RN_RP3_ENV "ROCATTACH_ROCPROFV3_OPTIONS"

/*
 * pid was first attached with other collection options than this run's:
 * true, and the line saying so in msg. false when it may be attached.
 */
bool rn_rp3_refused(pid_t pid, char *msg, size_t len);

/* pid is attached with this run's options: keep them if it is the first time. */
void rn_rp3_remember(pid_t pid);

#endif
