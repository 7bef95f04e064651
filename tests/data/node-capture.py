#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Write the captured /proc trees node-cgv1/, node-cgv2/ and node-env/ (see README.md).

Each fake process is started for real (`env -i VARS sleep`) so that its
environ and status come from the kernel; the status is then cut after
"Kthread:" and its pids, name, state and uid rewritten to the fake layout.
Kernel threads copy /proc/2/status, zombies a real zombie's. cgroup, exe
(a symlink), cmdline, comm and task/*/{comm,children} are written from the
tables below: Slurm's cgroup shapes cannot be produced on a test machine.

Run from anywhere as root: python3 tests/data/node-capture.py
"""
import os
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def P(pid, ppid, comm, exe=None, argv=None, env=None, cg='', uid=0, kind='proc',
      nspid=None, threads=()):
    """env: dict, or None for an unreadable environ (file left out)."""
    return dict(pid=pid, ppid=ppid, comm=comm, exe=exe, argv=[comm] if argv is None else argv,
                env=env, cg=cg, uid=uid, kind=kind, nspid=nspid or [pid],
                threads=threads)


def K(pid, ppid, comm):
    return P(pid, ppid, comm, argv=[], env={}, kind='kthread')


def Z(pid, ppid, comm):
    return P(pid, ppid, comm, argv=[], env={}, kind='zombie')


def slurm_env(job, step, procid, **more):
    env = {'SLURM_JOB_ID': str(job), 'SLURM_JOBID': str(job)}
    if step is not None:
        env.update(SLURM_STEP_ID=str(step), SLURM_STEPID=str(step))
    if procid is not None:
        env.update(SLURM_PROCID=str(procid), SLURM_LOCALID=str(procid))
    env.update({k: str(v) for k, v in more.items()})
    return env


def pmix(job, step, rank):
    return {'PMIX_RANK': rank, 'PMIX_NAMESPACE': 'slurm.pmix.%d.%s' % (job, step)}


SYS = {'PATH': '/usr/sbin:/usr/bin:/sbin:/bin', 'LANG': 'C.UTF-8'}
LMP = '/opt/lammps/bin/lmp'
STEPD = '/usr/sbin/slurmstepd'
LAUNCHER = '/usr/local/bin/rocattach-mpi'

# ---- node-cgv1: proctrack/cgroup on cgroup v1 (freezer), one host dir per node ----


def v1(path):
    return ('9:name=systemd:/system.slice/slurmd.service\n8:pids:/\n'
            '6:freezer:%s\n4:memory:/\n0::/system.slice/slurmd.service\n' % path)


def v1step(job, step):
    return v1('/slurm_node1/uid_0/job_%d/step_%s' % (job, step))


CGV1 = [
    P(1, 0, 'systemd', '/usr/lib/systemd/systemd', ['/sbin/init'], {'TERM': 'linux'},
      v1('/')),
    K(2, 0, 'kthreadd'),
    P(100, 1, 'slurmd', '/usr/sbin/slurmd', ['/usr/sbin/slurmd', '-D'], SYS, v1('/')),
    P(200, 1, 'slurmstepd', STEPD, ['slurmstepd: [12.0]'], SYS, v1step(12, 0)),
    P(201, 200, 'lmp', LMP, [LMP, '-in', 'in.lj'],
      slurm_env(12, 0, 0, **pmix(12, 0, 0)), v1step(12, 0), threads=[(2011, 'rocp-bg-attach')]),
    P(202, 200, 'lmp', LMP, [LMP, '-in', 'in.lj'],
      slurm_env(12, 0, 1, **pmix(12, 0, 1)), v1step(12, 0)),
    P(203, 202, 'sh', '/usr/bin/dash', ['sh', '-c', 'gzip log'],
      slurm_env(12, 0, 1, **pmix(12, 0, 1)), v1step(12, 0)),
    P(204, 200, 'lmp', LMP, [LMP], {}, v1step(12, 0)),
    P(300, 1, 'slurmstepd', STEPD, ['slurmstepd: [12.1]'], SYS, v1step(12, 1)),
    P(301, 300, 'rocattach-mpi', LAUNCHER, [LAUNCHER, '--slurm-step', '12'],
      slurm_env(12, 1, 0, **pmix(12, 1, 0)), v1step(12, 1)),
    P(302, 301, 'lmp', LMP, [LMP, '-h'], slurm_env(12, 1, 0), v1step(12, 1)),
    P(303, 300, 'rocattach-mpi', LAUNCHER, [LAUNCHER, '--slurm-step', '12'],
      slurm_env(12, 1, 1, **pmix(12, 1, 1)), v1step(12, 1)),
    P(400, 1, 'slurmstepd', STEPD, ['slurmstepd: [12.extern]'], SYS, v1step(12, 'extern')),
    P(401, 400, 'sleep', '/usr/bin/sleep', ['sleep', '100000000'],
      slurm_env(12, None, None), v1step(12, 'extern')),
    P(500, 1, 'slurmstepd', STEPD, ['slurmstepd: [12.batch]'], SYS, v1step(12, 'batch')),
    P(501, 500, 'bash', '/usr/bin/bash', ['/bin/bash', 'job.sh'],
      slurm_env(12, None, 0), v1step(12, 'batch')),
    P(502, 501, 'srun', '/usr/bin/srun', ['srun', 'lmp'],
      slurm_env(12, None, 0), v1step(12, 'batch')),
    P(600, 1, 'slurmstepd', STEPD, ['slurmstepd: [13.0]'], SYS, v1step(13, 0)),
    P(601, 600, 'lmp', LMP, [LMP], slurm_env(13, 0, 0), v1step(13, 0)),
    # The cgroup says 13.0, the environ (copied from elsewhere) 12.0: cgroup wins.
    P(700, 600, 'lmp', LMP, [LMP], slurm_env(12, 0, 5), v1step(13, 0)),
]

# ---- node-cgv2: cgroup v2, Slurm's own tree under slurmstepd.scope ----

SCOPE = '/system.slice/slurmstepd.scope'


def v2(path):
    return '0::%s\n' % path


CGV2 = [
    P(1, 0, 'systemd', '/usr/lib/systemd/systemd', ['/sbin/init'], {'TERM': 'linux'},
      v2('/init.scope')),
    P(200, 1, 'slurmstepd', STEPD, ['slurmstepd: [12.0]'], SYS, v2(SCOPE + '/job_12/step_0/slurm')),
    P(201, 200, 'lmp', LMP, [LMP], slurm_env(12, 0, 0, **pmix(12, 0, 0)),
      v2(SCOPE + '/job_12/step_0/user/task_0')),
    P(202, 200, 'lmp', LMP, [LMP], slurm_env(12, 0, 1, **pmix(12, 0, 1)),
      v2(SCOPE + '/job_12/step_0/user/task_1')),
    # Rank 2 runs in a container: its own pid namespace, where it is pid 1.
    P(203, 200, 'lmp', LMP, [LMP], slurm_env(12, 0, 2, **pmix(12, 0, 2)),
      v2(SCOPE + '/job_12/step_0/user/task_2'), nspid=[203, 1]),
    P(300, 1, 'slurmstepd', STEPD, ['slurmstepd: [12.1]'], SYS, v2(SCOPE + '/job_12/step_1/slurm')),
    P(301, 300, 'rocattach-mpi', LAUNCHER, [LAUNCHER], slurm_env(12, 1, 0, **pmix(12, 1, 0)),
      v2(SCOPE + '/job_12/step_1/user/task_0')),
    P(400, 1, 'slurmstepd', STEPD, ['slurmstepd: [12.extern]'], SYS,
      v2(SCOPE + '/job_12/step_extern/slurm')),
    P(401, 400, 'sleep', '/usr/bin/sleep', ['sleep', '100000000'], slurm_env(12, None, None),
      v2(SCOPE + '/job_12/step_extern/user/task_special')),
    # The job directory shape supported for Slurm 26.05: a systemd-style unit name.
    P(500, 1, 'slurmstepd', STEPD, ['slurmstepd: [14.0]'], SYS,
      v2(SCOPE + '/slurm-job-14.scope/step_0/slurm')),
    P(501, 500, 'lmp', LMP, [LMP], slurm_env(14, 0, 0),
      v2(SCOPE + '/slurm-job-14.scope/step_0/user/task_0')),
    P(600, 1, 'lmp', LMP, [LMP], slurm_env(12, 0, 9), v2('/user.slice/user-0.slice/session-3.scope')),
]

# ---- node-env: proctrack/linuxproc, cgroups untouched: Slurm steps only in environ ----


def lp():
    return ('9:name=systemd:/\n4:memory:/process_api/ebc76b3a279d4c19b769eb9f3f57c80f\n'
            '3:cpuset:/\n0::/\n')


def ompi(ns, rank, **more):
    env = {'OMPI_COMM_WORLD_RANK': rank, 'OMPI_COMM_WORLD_SIZE': 3, 'PMIX_RANK': rank,
           'PMIX_NAMESPACE': ns}
    env.update(more)
    return {k: str(v) for k, v in env.items()}


NS = 'prterun-node1-502@1'
NS2 = 'prterun-node1-600@1'
ENV = [
    P(1, 0, 'systemd', '/usr/lib/systemd/systemd', ['/sbin/init'], {'TERM': 'linux'}, lp()),
    K(2, 0, 'kthreadd'),
    K(3, 2, 'kworker/0:0'),
    P(100, 1, 'slurmd', '/usr/sbin/slurmd', ['/usr/sbin/slurmd'], SYS, lp()),
    # slurmstepd with a step's variables: still not a task.
    P(200, 100, 'slurmstepd', STEPD, ['slurmstepd: [20.0]'], slurm_env(20, 0, None), lp()),
    P(201, 200, 'lmp', LMP, [LMP], slurm_env(20, 0, 0), lp()),
    P(202, 200, 'lmp', LMP, [LMP], {'SLURM_JOBID': '20', 'SLURM_STEPID': '0',
                                    'SLURM_PROCID': '1'}, lp()),
    P(300, 100, 'slurmstepd', STEPD, ['slurmstepd: [20.1]'], SYS, lp()),
    P(301, 300, 'a.out', '/home/u/a.out', ['./a.out'],
      slurm_env(20, 1, 0, MY_RANK=5, PMI_RANK=7, MV2_COMM_WORLD_RANK=8), lp()),
    P(302, 300, 'a.out', '/home/u/a.out', ['./a.out'],
      slurm_env(20, 1, 1, MV2_COMM_WORLD_RANK=3), lp()),
    P(303, 300, 'a.out', '/home/u/a.out', ['./a.out'],
      slurm_env(20, 1, 2, OMPI_COMM_WORLD_RANK='x1', PMIX_RANK=4), lp()),
    P(400, 100, 'slurmstepd', STEPD, ['slurmstepd: [20.2]'], SYS, lp()),
    P(401, 400, 'rocattach-mpi', LAUNCHER, [LAUNCHER, '--mpi-job='],
      slurm_env(20, 2, 0, **pmix(20, 2, 0)), lp()),
    P(402, 400, 'rocattach-mpi', LAUNCHER, [LAUNCHER, '--mpi-job='],
      slurm_env(20, 2, 1, **pmix(20, 2, 1)), lp()),
    P(403, 401, 'sh', '/usr/bin/dash', ['sh', '-c', 'true'], slurm_env(20, 2, 0), lp()),
    P(500, 100, 'slurmstepd', STEPD, ['slurmstepd: [20.batch]'], SYS, lp()),
    P(501, 500, 'bash', '/usr/bin/bash', ['/bin/bash', 'job.sh'], slurm_env(20, None, 0), lp()),
    P(502, 501, 'mpirun', '/usr/bin/prterun', ['mpirun', '-n', '3', 'lmp'],
      slurm_env(20, None, 0), lp()),
    P(503, 502, 'prted', '/usr/bin/prted', ['prted'],
      slurm_env(20, None, 0, PRTE_MCA_ess_base_nspace='prterun-node1-502@0'), lp()),
    P(504, 503, 'lmp', LMP, [LMP], dict(slurm_env(20, None, 0), **ompi(NS, 0)), lp()),
    P(505, 503, 'lmp', LMP, [LMP], dict(slurm_env(20, None, 0), **ompi(NS, 1)), lp()),
    P(506, 503, 'lmp', LMP, [LMP],
      dict(slurm_env(20, None, 0), **ompi(NS, 2, OMPI_MCA_ess_base_jobid='3735879681')), lp()),
    Z(507, 504, 'lmp'),
    P(508, 505, 'python3', None, ['python3', 'post.py'],
      dict(slurm_env(20, None, 0), **ompi(NS, 1)), lp()),
    # Another user's job; the environ of one rank is unreadable.
    P(600, 1, 'mpirun', '/usr/bin/prterun', ['mpirun', 'lmp'], SYS, lp(), uid=1000),
    P(601, 600, 'lmp', LMP, [LMP], ompi(NS2, 0), lp(), uid=1000),
    P(602, 600, 'lmp', LMP, [LMP], None, lp(), uid=1000),
    # A long name: exe deleted after start, and an exe-less copy known by its comm only.
    P(700, 1, 'very_long_application_name', '/scratch/very_long_application_name (deleted)',
      ['./very_long_application_name'], {'OMPI_COMM_WORLD_RANK': '0'}, lp()),
    P(701, 1, 'very_long_application_name', None, ['./very_long_application_name'], {}, lp()),
]

TREES = {'node-cgv1': CGV1, 'node-cgv2': CGV2, 'node-env': ENV}


# ---- capture ----

def read(path, mode='rb'):
    with open(path, mode) as f:
        return f.read()


def read_env(pid):
    """The kernel refuses environ of a kernel thread (ESRCH): leave the file out."""
    try:
        return read('/proc/%d/environ' % pid)
    except OSError:
        return None


def cut_status(text):
    out = []
    for line in text.splitlines():
        out.append(line)
        if line.startswith('Kthread:'):
            break
    return out


def start(env):
    p = subprocess.Popen(['sleep', '1000'], env=env, executable='/usr/bin/sleep')
    time.sleep(0.05)
    return p


def real_zombie():
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    time.sleep(0.1)
    status = read('/proc/%d/status' % pid, 'r')
    environ = read_env(pid)
    os.waitpid(pid, 0)
    return status, environ


def capture(p):
    """Real status text and environ bytes for one fake process."""
    if p['kind'] == 'kthread':
        return read('/proc/2/status', 'r'), read_env(2)
    if p['kind'] == 'zombie':
        return real_zombie()
    proc = start(p['env'] or {})
    try:
        return read('/proc/%d/status' % proc.pid, 'r'), read_env(proc.pid)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()


STATES = {'proc': 'S (sleeping)', 'kthread': 'S (sleeping)', 'zombie': 'Z (zombie)'}


def rewrite(status, p):
    ns = '\t'.join(str(x) for x in p['nspid'])
    uid = '\t'.join([str(p['uid'])] * 4)
    vals = {'Name': p['comm'][:15], 'State': STATES[p['kind']], 'Tgid': str(p['pid']),
            'Pid': str(p['pid']), 'PPid': str(p['ppid']), 'Uid': uid, 'Gid': uid,
            'NStgid': ns, 'NSpid': ns, 'NSpgid': str(p['pid']), 'NSsid': str(p['pid'])}
    out = []
    for line in cut_status(status):
        key = line.split(':', 1)[0]
        out.append('%s:\t%s' % (key, vals[key]) if key in vals else line)
    return '\n'.join(out) + '\n'


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'wb' if isinstance(data, bytes) else 'w') as f:
        f.write(data)


def emit(root, procs):
    kids = {}
    for p in procs:
        kids.setdefault(p['ppid'], []).append(p['pid'])
    for p in procs:
        d = os.path.join(root, str(p['pid']))
        status, environ = capture(p)
        write(d + '/status', rewrite(status, p))
        if p['env'] is not None and environ is not None:
            write(d + '/environ', environ)
        write(d + '/cmdline', b''.join(a.encode() + b'\0' for a in p['argv']))
        write(d + '/comm', p['comm'][:15] + '\n')
        write(d + '/cgroup', p['cg'])
        if p['exe']:
            os.symlink(p['exe'], d + '/exe')
        main = ' '.join(str(k) for k in kids.get(p['pid'], []))
        write('%s/task/%d/children' % (d, p['pid']), main + (' ' if main else ''))
        write('%s/task/%d/comm' % (d, p['pid']), p['comm'][:15] + '\n')
        for tid, comm in p['threads']:
            write('%s/task/%d/children' % (d, tid), '')
            write('%s/task/%d/comm' % (d, tid), comm + '\n')


def main():
    for name, procs in TREES.items():
        root = os.path.join(HERE, name)
        shutil.rmtree(root, ignore_errors=True)
        emit(root, procs)
    return 0


if __name__ == '__main__':
    sys.exit(main())
