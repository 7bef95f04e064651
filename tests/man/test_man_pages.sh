#!/usr/bin/env bash
# The man pages (built from launcher/cli/help/PROG.txt, the --help texts): each
# renders with `man -l` without a warning, and its OPTIONS section names every
# option that --help defines (the "  -x, --long ..." lines).
# rocattach-mpi's --help needs MPI_Init (an mpirun): its text is taken from
# launcher/cli/help/rocattach-mpi.txt, which test_mpi_opts checks is what it prints.
# usage: test_man_pages.sh BUILD_DIR SOURCE_DIR
set -u
B=$(cd "${1:?usage: test_man_pages.sh BUILD_DIR SOURCE_DIR}" && pwd)
S=$(cd "${2:?usage: test_man_pages.sh BUILD_DIR SOURCE_DIR}" && pwd)
PASSED=0
FAILED=0
fail() { echo "FAIL: $*" >&2; FAILED=$((FAILED + 1)); }
ok() { echo "ok: $*"; PASSED=$((PASSED + 1)); }
command -v man >/dev/null || { echo "FAIL: man not found (package man-db)" >&2; exit 1; }

W=$(mktemp -d /tmp/rocattach-man.XXXXXX)
trap 'rm -rf "$W"' EXIT
export MANWIDTH=80 LC_ALL=C.UTF-8 MANPAGER=cat PAGER=cat

for prog in rocattach rocattach-mpi rocattach-slurm; do
	page=$B/share/man/man1/$prog.1
	if [ ! -s "$page" ]; then
		fail "$prog: no man page $page"
		continue
	fi
	man --warnings=w -l "$page" >"$W/$prog.txt" 2>"$W/$prog.err"
	rc=$?
	if [ "$rc" -eq 0 ] && [ ! -s "$W/$prog.err" ] && grep -q "^NAME" "$W/$prog.txt"; then
		ok "$prog(1) renders without a warning"
	else
		cat "$W/$prog.err" >&2
		fail "$prog(1): man -l exit $rc or warnings"
	fi
	case $prog in
	rocattach-mpi) cp "$S/launcher/cli/help/$prog.txt" "$W/$prog.help" ;;
	*) "$B/bin/$prog" --help >"$W/$prog.help" || fail "$prog --help failed" ;;
	esac
	# The option terms --help defines, then the man page's OPTIONS section.
	# (a definition is "  -x, --long ARG   what it does": term, a gap, text)
	opts=$(grep -E '^ +-[^ ].*[^ ]  +[^ ]' "$W/$prog.help" | sed -E 's/^ +//; s/  .*//' |
		grep -oE -- '(^|[ ,])--?[a-zA-Z][a-zA-Z-]*' | sed -E 's/^[ ,]//' | sort -u)
	sed -n '/^OPTIONS/,/^[A-Z]/p' "$W/$prog.txt" >"$W/$prog.options"
	n=0 missing=
	for o in $opts; do
		n=$((n + 1))
		grep -qE -- "(^|[^a-zA-Z-])$o([^a-zA-Z-]|$)" "$W/$prog.options" || missing="$missing $o"
	done
	if [ "$n" -ge 3 ] && [ -z "$missing" ]; then
		ok "$prog(1): OPTIONS names all $n options of --help"
	else
		fail "$prog(1): OPTIONS lacks:${missing:- (only $n options found in --help)}"
	fi
done

# rocprofv3's options: --help points to them; every one the launchers take (the table
# in launcher/opts/rocprofv3_opts.c) is in both man pages' ROCPROFV3 OPTIONS and in
# docs/rocprofv3.md.
rp3=$(sed -n '/^static const struct rp3_entry entries\[\] = {/,/^};/p' \
	"$S/launcher/opts/rocprofv3_opts.c" | grep -oE '^ +\{"[a-z-]+"' | grep -oE '[a-z-]+' | sort -u)
for prog in rocattach rocattach-mpi; do
	sed -n '/^ROCPROFV3 OPTIONS/,/^[A-Z][A-Z]/p' "$W/$prog.txt" >"$W/$prog.rp3"
	for where in "$W/$prog.rp3" "$S/docs/rocprofv3.md"; do
		n=0 missing=
		for o in $rp3; do
			n=$((n + 1))
			grep -qE -- "(^|[^a-zA-Z-])--$o([^a-zA-Z-]|$)" "$where" || missing="$missing --$o"
		done
		if [ "$n" -ge 50 ] && [ -z "$missing" ]; then
			ok "$prog: $(basename "$where") names all $n of rocprofv3's options"
		else
			fail "$prog: $(basename "$where") lacks:${missing:- (only $n options in the table)}"
		fi
	done
done

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
