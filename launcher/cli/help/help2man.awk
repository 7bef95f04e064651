# SPDX-License-Identifier: MIT
# A man page from a program's --help text (launcher/cli/help/PROG.txt, the one source
# of both) and the sections only the man page has (PROG.man.txt). Plain awk.
#
#   awk -v prog=NAME -v version=V -v agent=PATH -v docdir=DIR -v out=FILE -f help2man.awk PROG.txt PROG.man.txt
#
# The help text's shape:
#   "Usage: ..." and the lines under it          SYNOPSIS
#   paragraphs before the first option           DESCRIPTION
#   "  -x, --long ARG   text" (continued by      OPTIONS items; a line "Heading:" starts
#   deeper lines)                                a subsection of OPTIONS
#   "Environment:" and its "  NAME   text" items ENVIRONMENT
#   a paragraph starting "Exit codes:"           EXIT STATUS
#   other lines indented by two spaces           shown as they are (commands)
# The second file has upper-case section names on their own lines (NAME, FILES,
# NOTES, SEE ALSO...), the NAME line as "prog - summary".
# "@AGENT@" stands for the agent's path (the script fills it in at run time),
# "@DOCDIR@" for where the documents are installed.

function esc(s) {
	gsub(/\\/, "\\e", s)
	gsub(/-/, "\\-", s)
	gsub(/@AGENT@/, agent, s)
	gsub(/@DOCDIR@/, docdir, s)
	if (s ~ /^[.']/)
		s = "\\&" s
	return s
}

function add(s) {
	body[sec] = body[sec] s "\n"
	if (!(sec in seen)) {
		seen[sec] = 1
		order[++n_order] = sec
	}
}

function end_block() {
	if (mode == "verbatim")
		add(".fi")
	mode = ""
}

function start_section(name) {
	end_block()
	sec = name
	if (!(sec in seen)) {
		seen[sec] = 1
		order[++n_order] = sec
	}
}

function item(line,    term, text, gap) {
	end_block()
	sub(/^ +/, "", line)
	gap = match(line, /  +/)
	if (gap) {
		term = substr(line, 1, gap - 1)
		text = substr(line, gap + RLENGTH)
	} else {
		term = line
		text = ""
	}
	add(".TP")
	add("\\fB" esc(term) "\\fR")
	if (text != "")
		add(esc(text))
	mode = "item"
}

function text_line(line) {
	sub(/^ +/, "", line)
	if (mode != "text") {
		end_block()
		if (line ~ /^Exit codes: /) {
			start_section("EXIT STATUS")
			sub(/^Exit codes: /, "", line)
		} else if (sec == "SYNOPSIS") {
			start_section("DESCRIPTION")
		}
		add(".PP")
		mode = "text"
	}
	add(esc(line))
}

function verbatim(line) {
	if (mode != "verbatim") {
		end_block()
		if (sec == "SYNOPSIS")
			start_section("DESCRIPTION")
		add(".PP")
		add(".nf")
		mode = "verbatim"
	}
	add(esc(line))
}

FNR == 1 {
	end_block()
	file++
	if (file == 1)
		start_section("SYNOPSIS")
}

# The help text.
file == 1 && FNR == 1 {
	sub(/^Usage: /, "")
	add(".nf")
	add(esc($0))
	mode = "usage"
	next
}
file == 1 && mode == "usage" && /^ / {
	sub(/^ +/, "")
	add(esc($0))
	next
}
file == 1 && mode == "usage" {
	add(".fi")
	mode = ""
}
file == 1 && /^$/ {
	end_block()
	next
}
file == 1 && /^Environment:$/ {
	start_section("ENVIRONMENT")
	next
}
file == 1 && /^[A-Z][^ ].*:$/ {
	if (sec != "OPTIONS")
		start_section("OPTIONS")
	end_block()
	h = $0
	sub(/:$/, "", h)
	add(".SS " esc(h))
	next
}
file == 1 && /^  +-/ && mode != "verbatim" {
	if (sec != "OPTIONS" && sec != "ENVIRONMENT")
		start_section("OPTIONS")
	item($0)
	next
}
file == 1 && sec == "ENVIRONMENT" && /^  [^ ]/ {
	item($0)
	next
}
file == 1 && mode == "item" && /^    / {
	sub(/^ +/, "")
	add(esc($0))
	next
}
file == 1 && /^  / {
	verbatim($0)
	next
}
file == 1 {
	text_line($0)
	next
}

# The man-only sections.
/^[A-Z][A-Z0-9 ]+$/ {
	start_section($0)
	next
}
/^$/ {
	end_block()
	next
}
sec == "NAME" {
	i = index($0, " - ")
	name_line = substr($0, 1, i - 1) " \\- " esc(substr($0, i + 3))
	next
}
/^  [^ ]/ {
	item($0)
	next
}
mode == "item" && /^    / {
	sub(/^ +/, "")
	add(esc($0))
	next
}
{
	text_line($0)
}

END {
	end_block()
	if (name_line == "") {
		print "help2man.awk: no NAME line in " FILENAME > "/dev/stderr"
		exit 1
	}
	up = toupper(prog)
	print ".\\\" Generated from launcher/cli/help/" prog ".txt and " prog ".man.txt: edit those." > out
	print ".TH " up " 1 \"\" \"rocattach-mpi " version "\" \"User Commands\"" > out
	print ".nh" > out
	print ".ad l" > out
	print ".SH NAME" > out
	print name_line > out
	split("SYNOPSIS|DESCRIPTION|OPTIONS|EXIT STATUS|ENVIRONMENT", first, "|")
	for (i = 1; i <= 5; i++)
		if (first[i] in body) {
			print ".SH " first[i] > out
			printf "%s", body[first[i]] > out
			done[first[i]] = 1
		}
	for (i = 1; i <= n_order; i++) {
		s = order[i]
		if (s == "NAME" || s in done || !(s in body))
			continue
		print ".SH " s > out
		printf "%s", body[s] > out
	}
}
