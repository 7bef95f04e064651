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
