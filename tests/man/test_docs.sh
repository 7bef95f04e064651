#!/usr/bin/env bash
# The documents: the README stays a newcomer's page (under 250 lines); every
# relative link of the README and docs/ leads to a file, and every #anchor to a
# heading of it; `cmake --install` puts the README and docs/ where the man pages
# say they are; no man page points at a document that is not installed.
# usage: test_docs.sh BUILD_DIR SOURCE_DIR
set -u
B=$(cd "${1:?usage: test_docs.sh BUILD_DIR SOURCE_DIR}" && pwd)
S=$(cd "${2:?usage: test_docs.sh BUILD_DIR SOURCE_DIR}" && pwd)
PASSED=0
FAILED=0
fail() { echo "FAIL: $*" >&2; FAILED=$((FAILED + 1)); }
ok() { echo "ok: $*"; PASSED=$((PASSED + 1)); }

W=$(mktemp -d /tmp/rocattach-docs.XXXXXX)
trap 'rm -rf "$W"' EXIT

lines=$(wc -l <"$S/README.md")
if [ "$lines" -lt 250 ]; then
	ok "README.md has $lines lines (under 250)"
else
	fail "README.md has $lines lines: keep it a newcomer's page, move reference text to docs/"
fi

# The README's two commands run in a root shell that has no sudo (a minimal Debian): they
# name no sudo, and the scripts call it only when not root and it exists.
cmds=$(sed -n '/^## The two commands/,/^## /p' "$S/README.md" | grep -E '^    [^ ]')
if [ "$(wc -l <<<"$cmds")" -eq 2 ] && ! grep -q sudo <<<"$cmds" &&
	grep -qx '    ./scripts/demo.sh' <<<"$cmds" && grep -qx '    ./scripts/test.sh' <<<"$cmds"; then
	ok "the README's two commands name no sudo:$(tr -s ' ' <<<"$cmds" | tr '\n' ' ')"
else
	fail "the README's two commands are not ./scripts/demo.sh and ./scripts/test.sh: $cmds"
fi
for f in demo.sh test.sh deps.sh build.sh; do
	# Every line that names sudo (outside comments and messages) is guarded by a root test.
	bad=$(grep -nE '^[^#]*\bsudo\b' "$S/scripts/$f" | grep -vE 'echo|command -v sudo' |
		grep -vE 'exec sudo --preserve-env')
	guard=$(grep -cE 'id -u\)" -ne 0 \] && command -v sudo' "$S/scripts/$f")
	if [ -z "$bad" ] && { ! grep -qE '^[^#]*exec sudo' "$S/scripts/$f" || [ "$guard" -eq 1 ]; }; then
		ok "scripts/$f calls sudo only when not root and sudo exists"
	else
		fail "scripts/$f runs sudo unguarded: $bad"
	fi
done

# A heading's anchor as GitHub makes it: lower case, spaces to '-', other
# punctuation dropped.
anchors() {
	grep -E '^#{1,6} ' "$1" | sed -E 's/^#+ +//' | tr 'A-Z' 'a-z' |
		sed -E 's/[^a-z0-9 _-]//g; s/ /-/g'
}

# Links outside code: [text](target) with a relative target.
n=0
for doc in "$S/README.md" "$S"/docs/*.md "$S/bench/README.md"; do
	dir=$(dirname "$doc")
	links=$(sed '/^```/,/^```/d; /^    /d' "$doc" | grep -oE '\]\([^)[:space:]]+\)' |
		sed -E 's/^\]\(//; s/\)$//' | grep -vE '^[a-z]+:' || true)
	for l in $links; do
		n=$((n + 1))
		file=${l%%#*}
		anchor=
		case $l in *'#'*) anchor=${l#*#} ;; esac
		target=$doc
		[ -n "$file" ] && target=$dir/$file
		if [ ! -e "$target" ]; then
			fail "${doc#"$S"/}: link '$l' leads to nothing"
			continue
		fi
		if [ -n "$anchor" ] && ! anchors "$target" | grep -qx -- "$anchor"; then
			fail "${doc#"$S"/}: link '$l': no heading '#$anchor' in ${target#"$S"/}"
		fi
	done
done
[ "$n" -ge 15 ] && ok "$n relative links in README.md and docs/ checked" ||
	fail "only $n relative links found: the link parser is broken"

# Install to a private prefix: the documents land where the man pages say.
if cmake --install "$B" --prefix "$W/prefix" >"$W/install.log" 2>&1; then
	doc=$(find "$W/prefix" -path '*/doc/rocattach-mpi' -type d | head -1)
	if [ -n "$doc" ] && [ -f "$doc/README.md" ] && [ -f "$doc/docs/report.md" ] &&
		[ -f "$doc/docs/slurm.md" ] && [ -f "$doc/bench/README.md" ]; then
		ok "cmake --install puts README.md, docs/ and bench/README.md in ${doc#"$W/prefix"/}"
	else
		fail "cmake --install: the documents are not under share/doc/rocattach-mpi"
	fi
	# The installed pages name the prefix given to cmake --install, not the configured one.
	conf=$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$B/CMakeCache.txt")
	for page in "$W"/prefix/share/man/man1/*.1; do
		name=$(basename "$page")
		text=$(sed 's/\\-/-/g' "$page")
		# The build tree's page names the configured prefix: the install made it again.
		if grep -qF "$W/prefix/share/doc/rocattach-mpi/" <<<"$text" &&
			! grep -qF "$conf/" <<<"$text" && grep -qF "$conf/" "$B/share/man/man1/$name"; then
			ok "installed $name names $W/prefix, not $conf"
		else
			fail "installed $name: $(grep -oE "/[A-Za-z0-9_./-]*/(lib|share)/[A-Za-z0-9_./-]*" \
				<<<"$text" | sort -u | tr '\n' ' ')not under $W/prefix (configured: $conf)"
		fi
	done
	[ -n "$(ls "$W"/prefix/share/man/man1/*.1 2>/dev/null)" ] || fail "no man page installed"
	for page in "$B"/share/man/man1/*.1; do
		name=$(basename "$page")
		if grep -q 'README of' "$page"; then
			fail "$name cites 'the README' without saying where it is installed"
			continue
		fi
		# Every installed document the page names exists in the install.
		refs=$(sed 's/\\-/-/g' "$page" | grep -oE "/[A-Za-z0-9_./-]*/doc/rocattach-mpi/[A-Za-z0-9_./-]+\.md" | sort -u)
		if [ -z "$refs" ]; then
			fail "$name names no installed document (PREFIX/share/doc/rocattach-mpi/...)"
			continue
		fi
		bad=
		for r in $refs; do
			[ -f "$doc/${r#*/doc/rocattach-mpi/}" ] || bad="$bad $r"
		done
		[ -z "$bad" ] && ok "$name names installed documents:$(echo "$refs" | tr '\n' ' ')" ||
			fail "$name names documents that are not installed:$bad"
	done
else
	cat "$W/install.log" >&2
	fail "cmake --install to $W/prefix failed"
fi

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
