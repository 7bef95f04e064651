# shellcheck shell=bash disable=SC2034
# Shared by the late-start scripts (sourced): set B and the folder prefix PREFIX first.
# Gives L (the doubles), CLI, TOOL, W (removed at the end unless KEEP is set), PIDS (killed
# at the end, resumed first if stopped), ok/fail, victim, untraced, end and json.
# No ROCP* variable of the caller reaches the victims; the tool double logs to $W/tool.log.
L=$B/tests/rocm/late
CLI=$B/bin/rocattach
TOOL=$L/liblate_tool.so
PASSED=0
FAILED=0
fail() { echo "FAIL: $*" >&2; FAILED=$((FAILED + 1)); }
ok() { echo "ok: $*"; PASSED=$((PASSED + 1)); }
W=$(mktemp -d "/tmp/$PREFIX.XXXXXX")
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill -CONT "$p" 2>/dev/null; kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	[ -n "${KEEP:-}" ] || rm -rf "$W"
}
trap cleanup EXIT
for v in $(compgen -e | grep '^ROCP'); do unset "$v"; done
export LATE_TOOL_LOG=$W/tool.log

# victim NAME ARGS...: late_victim, output in $W/NAME.out, its pid in VP once "ready".
# With NS_MOUNT set: in a mount namespace of its own (a container's view), where the shell
# command NS_MOUNT runs first (mounts seen by the victim alone).
victim() {
	local name=$1
	shift
	if [ -n "${NS_MOUNT:-}" ]; then
		unshare --mount --propagation private sh -c "$NS_MOUNT"' && exec "$0" "$@"' \
			"$L/late_victim" --seconds 60 "$@" </dev/null >"$W/$name.out" 2>&1 &
	else
		"$L/late_victim" --seconds 60 "$@" </dev/null >"$W/$name.out" 2>&1 &
	fi
	VP=$!
	PIDS+=("$VP")
	for _ in $(seq 500); do
		grep -qs '^ready' "$W/$name.out" && return 0
		sleep 0.01
	done
	fail "$name: the victim did not start"
	return 1
}
untraced() { [ -d "/proc/$1" ] && awk '/^TracerPid:/ { exit $2 != 0 }' "/proc/$1/status"; }
# end PID NAME [WRAPPED]: SIGTERM; unharmed = exit 0 (every answer right) and a "done" line
# with bad=0. WRAPPED 0: also, no call ever reached a wrapper.
end() {
	kill -CONT "$1" 2>/dev/null
	kill "$1"
	wait "$1"
	local rc=$?
	[ "$rc" -eq 0 ] && grep -q '^done .* bad=0' "$W/$2.out" || return 1
	[ "${3:-}" != 0 ] || grep -q '^done .* wrapped=0 ' "$W/$2.out"
}
# json EXPR: EXPR of o, the "late_start" object in $W/json.
json() { python3 -c 'import json,sys; o=json.load(open(sys.argv[1]))["late_start"]
print(eval(sys.argv[2]))' "$W/json" "$1"; }
