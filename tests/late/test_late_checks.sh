#!/usr/bin/env bash
# rocattach --late-start's pre-checks and its report's covers, on real late_victim processes
# (the doubles of tests/rocm/late/):
#  1. covers / not_covered follow the SDK's version: 1.3.5 (inline queue interposition, so
#     queues created before the start, experimental); an SDK file whose name has no version:
#     the conservative list (API tracing only), saying why;
#  2. an SDK of the tool's soname but another version (sdk-lean, 1.3.1) that lacks a symbol the
#     tool needs (rocprofiler_get_version): refused, exit 4, one line, nothing touched;
#  3. a tool file, an SDK file, or an SDK's directory writable by its group: refused, one line
#     naming the file and the fix (chmod go-w), nothing touched;
#  4. a target in a mount namespace of its own: late-started where it sees the same files;
#     refused (exit 4, one line, nothing touched) where the SDK's path names another file, or
#     the start library's path none.
# usage: test_late_checks.sh BUILD_DIR
set -u
B=$(cd "${1:?usage: test_late_checks.sh BUILD_DIR}" && pwd)
PREFIX=rocattach-late-checks
. "$(dirname "$0")/lib.sh"

# 1. covers per version.
# started NAME TOOL: a late start that initialized; its JSON in $W/json.
started() {
	victim "$1" --threads 2 || return 1
	P=$VP
	"$CLI" --late-start -p "$P" -t "$2" >"$W/json" 2>"$W/err" &&
		[ "$(json 'o["outcome"], o["initialized"]')" = "('ok', True)" ]
}
if started v135 "$TOOL" &&
	[ "$(json 'o["sdk_version"], o["covers_basis"]')" = "('1.3.5', 'rocprofiler-sdk 1.3.5')" ] &&
	[ "$(json 'len(o["covers"])')" = 3 ] &&
	json 'o["covers"][2]' | grep -q "queues created before the start.*experimental" &&
	! json 'o["not_covered"]' | grep -q "queues created before" &&
	json 'o["not_covered"]' | grep -q "names of code objects loaded before" &&
	untraced "$P" && end "$P" v135; then
	ok "SDK 1.3.5: API tracing, new queues, queues from before (experimental)"
else
	fail "1.3.5: $(cat "$W/err" "$W/json")"
fi
mkdir -p "$W/plain/sdk"
cp "$TOOL" "$W/plain/"
cp -L "$L/sdk/librocprofiler-sdk.so.1" "$W/plain/sdk/librocprofiler-sdk.so.1"
if started plain "$W/plain/liblate_tool.so" &&
	[ "$(json 'o["sdk_version"], len(o["covers"])')" = "(None, 1)" ] &&
	json 'o["covers_basis"]' | grep -q "version cannot be read (its file name has no M.m.p)" &&
	json 'o["not_covered"]' | grep -q "kernel dispatches: not claimed" &&
	untraced "$P" && end "$P" plain; then
	ok "an SDK whose version cannot be read: API tracing only, and why"
else
	fail "plain: $(cat "$W/err" "$W/json")"
fi

# refused NAME SAYS TOOL: exit 4, one line saying SAYS, untraced, no abort, never wrapped.
refused() {
	victim "$1" --threads 2 || return
	local p=$VP rc
	"$CLI" --late-start -p "$p" -t "$3" >"$W/json" 2>"$W/err"
	rc=$?
	sleep 0.2
	if [ "$rc" -eq 4 ] && [ "$(wc -l <"$W/err")" -eq 1 ] && grep -qF -- "$2" "$W/err" &&
		untraced "$p" && ! grep -q FATAL "$W/$1.out" && end "$p" "$1" 0; then
		ok "$1: refused (exit 4, one line), nothing touched"
	else
		fail "$1: rc $rc: $(cat "$W/err")"
	fi
}

# 2. The same soname, another version, a symbol short.
mkdir -p "$W/lean/sdk"
cp "$TOOL" "$W/lean/"
cp -P "$L"/sdk-lean/librocprofiler-sdk.so* "$W/lean/sdk/"
refused lean_sdk "needs rocprofiler_get_version, which the SDK $W/lean/sdk/librocprofiler-sdk.so.1" \
	"$W/lean/liblate_tool.so"

# 3. Writable by others: the tool, the SDK file, the SDK's directory.
mkdir -p "$W/gw_tool/sdk" "$W/gw_sdk/sdk" "$W/gw_dir/sdk"
for d in gw_tool gw_sdk gw_dir; do
	cp "$TOOL" "$W/$d/"
	cp -P "$L"/sdk/librocprofiler-sdk.so* "$W/$d/sdk/"
done
chmod g+w "$W/gw_tool/liblate_tool.so" "$W/gw_sdk/sdk/librocprofiler-sdk.so.1.3.5"
chmod 0775 "$W/gw_dir/sdk"
refused gw_tool "refusing tool $W/gw_tool/liblate_tool.so for process" "$W/gw_tool/liblate_tool.so"
grep -qF "the file $W/gw_tool/liblate_tool.so is writable by its group (mode 0775), so others could replace it: fix with chmod go-w" "$W/err" ||
	fail "gw_tool: the line does not name the file and the fix: $(cat "$W/err")"
refused gw_sdk "the file $W/gw_sdk/sdk/librocprofiler-sdk.so.1.3.5 is writable by its group" \
	"$W/gw_sdk/liblate_tool.so"
refused gw_dir "its directory $W/gw_dir/sdk is writable by its group (mode 0775)" \
	"$W/gw_dir/liblate_tool.so"

# 4. A target in a mount namespace of its own (a container): the start library, the tool and
# the SDK are read here, so the target must see the very same files at those paths.
if ! unshare --mount --propagation private true 2>/dev/null; then
	echo "SKIP: mount namespaces: unshare --mount failed (it needs root)"
	echo "late checks: $PASSED passed, $FAILED failed"
	[ "$FAILED" -eq 0 ] && exit 77
	exit 1
fi
if NS_MOUNT=true started ns_same "$TOOL" && untraced "$P" && end "$P" ns_same; then
	ok "a mount namespace of its own that sees the same files: late-started"
else
	fail "ns_same: $(cat "$W/err" "$W/json")"
fi
mkdir -p "$W/sdkcopy"
cp -P "$L"/sdk/librocprofiler-sdk.so* "$W/sdkcopy/"
NS_MOUNT="mount --bind $W/sdkcopy $L/sdk" refused ns_sdk \
	"where the SDK $L/sdk/librocprofiler-sdk.so.1 is another file: it would not load the file checked here; mount the same file" \
	"$TOOL"
NS_MOUNT="mount -t tmpfs tmpfs $B/lib" refused ns_lib \
	"where the start library $B/lib/librocattach-late.so cannot be opened (No such file or directory)" \
	"$TOOL"

echo "late checks: $PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
