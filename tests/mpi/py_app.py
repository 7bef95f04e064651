# A hung mpi4py job for rocattach-mpi --stacks (tests/mpi/test_python.sh): rank 2 spins
# in stuck_here (the lines marked "# LINE:"), the others wait in comm.Barrier(). Each
# rank prints "ready <rank>" once it is where it stays.
import sys

from mpi4py import MPI

comm = MPI.COMM_WORLD
rank = comm.Get_rank()


def stuck_here():
    x = 0
    while True:  # LINE:stuck_while
        x += 1  # LINE:stuck_here


def wait_for_all():
    comm.Barrier()  # LINE:barrier


sys.stdout.write("ready %d\n" % rank)  # one write: mpirun passes it whole
sys.stdout.flush()
if rank == 2:
    stuck_here()
wait_for_all()
